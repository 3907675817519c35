/**
 * What `checkAgent` and `fleetgate check-agent --json` report of each call beyond its findings: the
 * status text of a task, as a field of the call; and a task whose deltas, as JSON, pass the size
 * at which a gateway with its default `limits.agentResponseBytes` refuses the answer (the kit's
 * agent hears the same warning).
 */
import type { AgentCard } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentCheckReport } from '../src/agent/index.js';
import { checkAgent, declareEffectDomain, endTask, startTask } from '../src/agent/index.js';
import { DEFAULT_AGENT_RESPONSE_BYTES } from '../src/dispatch/index.js';
import { LIMITS } from '../src/protocol/index.js';
import { parseConfig } from '../src/service/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import type { KitAgent } from './support/kit-agent.js';
import { startKitAgent } from './support/kit-agent.js';

const declare = (card: AgentCard): AgentCard => declareEffectDomain(card, { triage: ['board'] });

/** 15 MiB: what the kit and the check warn past (the gateway's default, less 1 MiB). */
const THRESHOLD = 15 * 1024 * 1024;

const lines = (report: AgentCheckReport) =>
  report.diagnostics.map((d) => `${d.severity} ${d.path}: ${d.message}`);

describe('the default limit of an agent answer', () => {
  it('is the one the gateway applies by default, in its configuration and its agent fetch', () => {
    expect(parseConfig({}).limits.agentResponseBytes).toBe(LIMITS.agentResponseBytes);
    expect(DEFAULT_AGENT_RESPONSE_BYTES).toBe(LIMITS.agentResponseBytes);
  });
});

describe('checkAgent: the status text of a call, and deltas too large for a gateway', () => {
  let refuser: KitAgent;
  let hoarder: KitAgent;
  let modest: KitAgent;

  beforeAll(async () => {
    refuser = await startKitAgent({
      name: 'refuser',
      skills: ['triage'],
      declare,
      executor: {
        execute: (ctx, bus) => {
          startTask(bus, ctx);
          endTask(bus, ctx, 'failed', 'no issue URL in the request');
          return Promise.resolve();
        },
      },
    });
    /** `count` deltas of a 60 000-character string each (about 58.6 KiB as JSON). */
    const reporter = (name: string, count: number) =>
      startKitAgent({
        name,
        skills: ['triage'],
        declare,
        executor: {
          execute: (ctx, bus, effects) => {
            startTask(bus, ctx);
            const text = 'x'.repeat(60_000);
            for (let i = 0; i < count; i += 1) {
              effects.report({ domain: 'board', path: `data.notes.n${i}`, op: 'set', value: text });
            }
            endTask(bus, ctx, 'completed', 'noted');
            return Promise.resolve();
          },
        },
      });
    // 270 such deltas are about 15.5 MiB as JSON; 200 are about 11.5 MiB.
    [hoarder, modest] = await Promise.all([reporter('hoarder', 270), reporter('modest', 200)]);
  });

  afterAll(() => Promise.all([refuser, hoarder, modest].map((a) => a?.close())));

  it('gives each call the status text of its task, as a field', async () => {
    const failed = await checkAgent(refuser.url, { skill: 'triage' });
    expect(failed.calls.map((c) => [c.state, c.statusText])).toEqual([
      ['failed', 'no issue URL in the request'],
    ]);
    const done = await checkAgent(modest.url, { skill: 'triage' });
    expect(done.calls.map((c) => [c.state, c.statusText])).toEqual([['completed', 'noted']]);
  });

  it('warns when the deltas pass 15 MiB as JSON, as the agent itself was warned', async () => {
    const report = await checkAgent(hoarder.url, { skill: 'triage' });
    const bytes = Buffer.byteLength(JSON.stringify(report.calls[0]!.deltas));
    expect(report.calls[0]!.deltas).toHaveLength(270);
    expect(bytes).toBeGreaterThan(THRESHOLD);
    expect(bytes).toBeLessThan(LIMITS.agentResponseBytes);
    expect(lines(report)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^warning blocking: the task carries ${bytes} bytes of deltas as JSON, more than ${THRESHOLD}: .*\\(limits\\.agentResponseBytes, 16777216 bytes\\); past it the gateway refuses the answer \\(FLEETGATE_AGENT_RESPONSE_TOO_LARGE\\)`,
        ),
      ),
    ]);
    expect(report.ok).toBe(true);
    expect(report.summary).toEqual({ errors: 0, warnings: 1 });
    // The agent heard it once, from the report that took its deltas past the threshold.
    expect(hoarder.warnings).toHaveLength(1);
    const [warning] = hoarder.warnings;
    expect(warning?.kind).toBe('effects-too-large');
    expect(warning?.bytes).toBeGreaterThan(THRESHOLD);
    expect(warning?.bytes).toBeLessThanOrEqual(bytes);
    expect(warning?.message).toMatch(
      new RegExp(
        `^task \\S+ reported ${warning?.bytes} bytes of deltas as JSON, more than ${THRESHOLD}:`,
      ),
    );
  });

  it('says nothing of deltas under it', async () => {
    const report = await checkAgent(modest.url, { skill: 'triage' });
    expect(report.calls[0]!.deltas).toHaveLength(200);
    expect(report.diagnostics).toEqual([]);
    expect(modest.warnings).toEqual([]);
  });
});

describe('fleetgate check-agent --json', () => {
  let refuser: KitAgent;
  beforeAll(async () => {
    refuser = await startKitAgent({
      name: 'refuser',
      skills: ['triage'],
      declare,
      executor: {
        execute: (ctx, bus) => {
          startTask(bus, ctx);
          endTask(bus, ctx, 'failed', 'no issue URL in the request');
          return Promise.resolve();
        },
      },
    });
  });
  afterAll(() => refuser?.close());

  it(
    'prints the status text of each call as its statusText',
    async () => {
      const run = await runCli(['check-agent', refuser.url, '--skill', 'triage', '--json']);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as AgentCheckReport;
      expect(report.calls).toEqual([
        expect.objectContaining({
          mode: 'blocking',
          state: 'failed',
          statusText: 'no issue URL in the request',
        }),
      ]);
    },
    cliTestTimeout(1),
  );
});
