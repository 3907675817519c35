import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState, type Task } from '@a2a-js/sdk';
import { afterEach, describe, expect, it } from 'vitest';

import { EventCollector } from '../bus/index.js';
import { SkillCallChain, createSkillCallContext } from '../extensions/index.js';
import { FleetgateError, readDeclarations } from '../protocol/index.js';
import { DirectoryClaimJournal } from './claim-journal.js';
import { createTaskTerminal } from './terminal.js';
import type { JournaledClaim, SettledTask } from './terminal-types.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'fleetgate-claims-'));
  dirs.push(dir);
  return dir;
};

function task(id: string): Task {
  return {
    id,
    contextId: `ctx-${id}`,
    status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

const CALL = { agent: 'a', skill: 's', correlationId: 'corr', startedAt: 1 };

function claim(id: string): JournaledClaim {
  return {
    agent: 'a',
    task: task(id),
    via: 'reply',
    state: 'completed',
    at: 5,
    call: CALL,
    events: [{ topic: 'world.state.delta', payload: { id }, id: `e-${id}` }],
  };
}

const away = (): FleetgateError =>
  new FleetgateError('FLEETGATE_STORE_UNAVAILABLE', 'PostgreSQL is unavailable (connect)');

/** A durable terminal whose claims answer from `answer`, its after hook publishing one event. */
function terminalOver(
  answer: (taskId: string) => 'win' | 'lose' | 'away',
  journal?: DirectoryClaimJournal,
) {
  const collector = new EventCollector({
    publish: () => Promise.reject(new Error('nothing is published outside a claim here')),
  });
  const claimed: { taskId: string; events: readonly unknown[] }[] = [];
  const settled: SettledTask[] = [];
  const errors: string[] = [];
  const terminal = createTaskTerminal({
    durable: {
      records: {
        claim: (_agent, taskId, _claim, events = []) => {
          const a = answer(taskId);
          if (a === 'away') return Promise.reject(away());
          if (a === 'win') claimed.push({ taskId, events });
          return Promise.resolve(a === 'win');
        },
      },
      collector,
      ...(journal === undefined ? {} : { journal }),
    },
    onSettled: (s) => Promise.resolve(void settled.push(s)),
    onError: (_error, where) => void errors.push(`${where.where}:${where.taskId}`),
    claimRetry: { initialDelayMs: 60_000 },
  });
  const ctx = createSkillCallContext({
    agent: 'a',
    skill: 's',
    correlationId: 'corr',
    signal: new AbortController().signal,
    declarations: readDeclarations({}),
  });
  terminal.bindChains(() =>
    Promise.resolve(
      new SkillCallChain(
        [
          {
            required: false,
            extension: {
              uri: 'urn:x',
              description: 'x',
              after: async () => void (await collector.publish('world.state.delta', { n: 1 })),
            },
          },
        ],
        ctx,
        { report: () => Promise.resolve() },
      ),
    ),
  );
  return { terminal, claimed, settled, errors };
}

describe('directory claim journal', () => {
  it('keeps claims in a file and gives them back once, to one taker', async () => {
    const dir = tempDir();
    const journal = new DirectoryClaimJournal(dir);
    await journal.keep([claim('t1'), claim('t2')]);
    await journal.keep([]); // nothing to keep writes no file
    expect(readdirSync(dir).filter((f) => f.endsWith('.json'))).toHaveLength(1);

    const [first, second] = await Promise.all([journal.take(), journal.take()]);
    const taken = [...first, ...second];
    expect(taken).toHaveLength(1);
    expect(taken[0]!.claims.map((c) => c.task.id)).toEqual(['t1', 't2']);
    expect(await journal.take()).toEqual([]);

    // What the store still could not take is kept again; the taken file is gone.
    await taken[0]!.done([claim('t2')]);
    const again = await journal.take();
    expect(again.map((t) => t.claims.map((c) => c.task.id))).toEqual([['t2']]);
    await again[0]!.done([]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('sets an unreadable file aside as .bad, reports it, and still gives back the others', async () => {
    const dir = tempDir();
    const bad: string[] = [];
    const journal = new DirectoryClaimJournal(dir, { onBadFile: (file) => void bad.push(file) });
    writeFileSync(join(dir, '0-1-aaaa.json'), '{"format":"fleetgate.claims.v1","claims":[{}]}');
    await journal.keep([claim('t3')]);
    const taken = await journal.take();
    expect(taken.map((t) => t.claims.map((c) => c.task.id))).toEqual([['t3']]);
    expect(bad).toEqual([join(dir, '0-1-aaaa.json.bad')]);
    expect(readFileSync(bad[0]!, 'utf8')).toContain('claims');
  });

  it('gives a task back as the agent sent it: file bytes, data, metadata', async () => {
    const journal = new DirectoryClaimJournal(tempDir());
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const sent: Task = {
      ...task('t4'),
      artifacts: [
        {
          artifactId: 'a1',
          name: 'report',
          description: '',
          parts: [
            {
              content: { $case: 'raw', value: bytes },
              metadata: { page: 1 },
              filename: 'report.bin',
              mediaType: 'application/octet-stream',
            },
            {
              content: { $case: 'data', value: { ok: true } },
              metadata: undefined,
              filename: '',
              mediaType: '',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
      ],
    };
    await journal.keep([{ ...claim('t4'), task: sent }]);
    const [taken] = await journal.take();
    const back = taken!.claims[0]!.task;
    const raw = back.artifacts[0]!.parts[0]!.content;
    expect(raw?.$case).toBe('raw');
    expect(raw!.value).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(raw!.value as Uint8Array).equals(bytes)).toBe(true);
    expect(back.artifacts[0]!.parts[0]!.filename).toBe('report.bin');
    expect(back.artifacts[0]!.parts[1]!.content).toEqual({ $case: 'data', value: { ok: true } });
  });

  it('still reads a file an earlier version wrote (format v1)', async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, '0-1-bbbb.json'),
      JSON.stringify({ format: 'fleetgate.claims.v1', claims: [claim('t5')] }),
    );
    const taken = await new DirectoryClaimJournal(dir).take();
    expect(taken[0]!.claims[0]).toMatchObject({ agent: 'a', task: { id: 't5' }, call: CALL });
  });

  it('answers an empty list when the directory does not exist yet', async () => {
    expect(await new DirectoryClaimJournal(join(tempDir(), 'missing')).take()).toEqual([]);
  });
});

describe('task terminal with a claim journal', () => {
  it('journals at stop the claims still waiting for the store, with their events', async () => {
    const journal = new DirectoryClaimJournal(tempDir());
    const { terminal, errors } = terminalOver(() => 'away', journal);
    const result = await terminal.settle('a', task('t1'), 'reply', { call: CALL });
    expect(result).toMatchObject({ settled: false, reason: 'retrying' });
    await terminal.stop();
    expect(errors).toEqual(['claim:t1', 'claim-journaled:t1']);
    const [taken] = await journal.take();
    expect(taken!.claims).toHaveLength(1);
    expect(taken!.claims[0]).toMatchObject({
      agent: 'a',
      task: { id: 't1' },
      via: 'reply',
      state: 'completed',
      call: CALL,
      events: [{ topic: 'world.state.delta', payload: { n: 1 } }],
    });
  });

  it('without a journal gives them up, reported', async () => {
    const { terminal, errors } = terminalOver(() => 'away');
    await terminal.settle('a', task('t1'), 'reply', { call: CALL });
    await terminal.stop();
    expect(errors).toEqual(['claim:t1', 'claim-abandoned:t1']);
  });

  it('replays journaled claims: a won claim commits its events and tells onSettled once', async () => {
    const answers: Record<string, 'win' | 'lose' | 'away'> = { t1: 'win', t2: 'lose', t3: 'away' };
    const { terminal, claimed, settled } = terminalOver((id) => answers[id]!);
    const remaining = await terminal.replay([claim('t1'), claim('t2'), claim('t3')]);
    expect(claimed).toEqual([{ taskId: 't1', events: claim('t1').events }]);
    expect(settled.map((s) => [s.taskId, s.via, s.call.skill])).toEqual([['t1', 'reply', 's']]);
    // Another path had t2 already; t3's store is still away: kept for the next try.
    expect(remaining.map((c) => c.task.id)).toEqual(['t3']);
  });
});
