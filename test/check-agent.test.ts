/**
 * `checkAgent` and `fleetgate check-agent` against real agents: one built on the kit (clean), the
 * kit's example ops agent, agents that misreport in the ways fleets break, and a hand-written
 * HTTP agent that answers v1.0 calls in v0.3 shapes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentCard } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, defaultServerCallContextBuilder } from '@a2a-js/sdk/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAgent } from '../examples/agents/index.js';
import { startAgent, startOpsAgent, textPart } from '../examples/agents/index.js';
import type { AgentCheckReport, EffectsAgentExecutor } from '../src/agent/index.js';
import { checkAgent, declareBlast, declareCost, declareEffectDomain } from '../src/agent/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  PART_MIME_METADATA_KEY,
  STAMPS,
  WORLDSTATE_DELTA_MIME,
  createWorldStateDeltaPart,
  isFleetgateError,
} from '../src/protocol/index.js';
import { cliTestTimeout, runCli } from './support/cli.js';
import type { KitAgent } from './support/kit-agent.js';
import { startKitAgent } from './support/kit-agent.js';

const DELTA = { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 } as const;

const declare = (card: AgentCard): AgentCard =>
  declareCost(
    declareEffectDomain(declareBlast(card, { triage: 'project' }), { triage: ['board'] }),
  );

/** A correct kit agent: one delta and a cost sample per task. */
function kitExecutor(reply: 'task' | 'message' = 'task'): EffectsAgentExecutor {
  return {
    execute: (ctx, bus, effects) => {
      if (reply === 'message') {
        bus.publish(
          AgentEvent.message({
            messageId: crypto.randomUUID(),
            contextId: ctx.contextId,
            taskId: '',
            role: Role.ROLE_AGENT,
            parts: [textPart('done'), createWorldStateDeltaPart([DELTA])],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          }),
        );
        bus.finished();
        return Promise.resolve();
      }
      bus.publish(
        AgentEvent.task({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [],
          metadata: undefined,
        }),
      );
      effects.report(DELTA);
      effects.reportCost({ usage: { input_tokens: 3 } });
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          status: {
            state: TaskState.TASK_STATE_COMPLETED,
            message: undefined,
            timestamp: undefined,
          },
          metadata: undefined,
        }),
      );
      bus.finished();
      return Promise.resolve();
    },
  };
}

/** A v1.0 agent written by hand, answering in v0.3 shapes and echoing nothing. */
async function startHandWrittenAgent(): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          name: 'handmade',
          description: 'answers in the wrong shapes',
          version: '1.0.0',
          supportedInterfaces: [
            { url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
          capabilities: {
            extensions: [
              { uri: EFFECT_DOMAIN_V1_URI, params: { skills: { triage: { domains: ['board'] } } } },
            ],
          },
          skills: [{ id: 'triage', name: 'triage', description: 'triage', tags: [] }],
        }),
      );
      return;
    }
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { id } = JSON.parse(body) as { id: string };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          result: {
            task: {
              kind: 'task',
              id: 'task-1',
              contextId: 'ctx-1',
              status: { state: 'completed' },
              artifacts: [
                {
                  artifactId: 'a',
                  parts: [
                    {
                      kind: 'data',
                      data: { deltas: [DELTA] },
                      metadata: { [PART_MIME_METADATA_KEY]: WORLDSTATE_DELTA_MIME },
                    },
                  ],
                },
              ],
            },
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const messages = (report: AgentCheckReport, severity: 'error' | 'warning') =>
  report.diagnostics.filter((d) => d.severity === severity).map((d) => `${d.path}: ${d.message}`);

describe('checkAgent', () => {
  let kit: KitAgent;
  let ops: RunningAgent;
  let broken: RunningAgent;
  let unechoed: KitAgent;
  let replier: KitAgent;
  let handmade: { url: string; close: () => Promise<void> };

  beforeAll(async () => {
    kit = await startKitAgent({
      name: 'kit',
      skills: ['triage'],
      declare,
      executor: kitExecutor(),
      streaming: true,
    });
    ops = await startOpsAgent();
    broken = await startAgent({
      name: 'broken',
      skills: [{ id: 'triage' }],
      streaming: true,
      extensions: [
        { uri: EFFECT_DOMAIN_V1_URI, params: { skills: { triage: { domains: ['ci'] } } } },
        { uri: BLAST_V1_URI, params: { skills: { triage: { radius: 'self' } } } },
      ],
      behaviour: () => ({
        artifacts: [
          [
            createWorldStateDeltaPart([
              DELTA,
              { domain: 'board', path: 'data..x', op: 'set', value: 1 },
            ]),
          ],
          [
            {
              content: { $case: 'data', value: { deltas: [DELTA] } },
              metadata: {
                [PART_MIME_METADATA_KEY]: 'application/vnd.protolabs.worldstate-delta+json',
              },
              filename: '',
              mediaType: '',
            },
          ],
        ],
      }),
    });
    unechoed = await startKitAgent({
      name: 'unechoed',
      skills: ['triage'],
      declare,
      executor: kitExecutor(),
      streaming: true,
      contextBuilder: () => defaultServerCallContextBuilder,
    });
    replier = await startKitAgent({
      name: 'replier',
      skills: ['triage'],
      declare,
      executor: kitExecutor('message'),
    });
    handmade = await startHandWrittenAgent();
  });

  afterAll(async () => {
    await Promise.all([kit, ops, broken, unechoed, replier, handmade].map((a) => a?.close()));
  });

  it('passes an agent built on the kit: declarations, stamps, echo and deltas, blocking and streaming', async () => {
    const report = await checkAgent(kit.url, { skill: 'triage' });
    expect(report.diagnostics).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.declarations).toEqual({
      extensions: [BLAST_V1_URI, EFFECT_DOMAIN_V1_URI, COST_V1_URI],
      radius: 'project',
      domains: ['board'],
    });
    expect(report.calls.map((c) => [c.mode, c.binding, c.protocolVersion, c.state])).toEqual([
      ['blocking', 'JSONRPC', '1.0', 'completed'],
      ['streaming', 'JSONRPC', '1.0', 'completed'],
    ]);
    for (const call of report.calls) {
      expect(call.stamps).toEqual({
        [STAMPS.blastRadius]: 'project',
        [STAMPS.effectDomainSkill]: 'triage',
        [STAMPS.costSkill]: 'triage',
      });
      expect(call.echoedExtensions?.sort()).toEqual(call.requestedExtensions.sort());
      expect(call.deltas).toEqual([DELTA]);
      expect(call.cost).toEqual({ usage: { input_tokens: 3 } });
    }
    expect(report.calls[1]!.events).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
  });

  it('passes the example ops agent on a skill whose deltas stay in its domains', async () => {
    const report = await checkAgent(ops.url, { skill: 'pr_review' });
    expect(report.diagnostics).toEqual([]);
    expect(report.calls[0]!.stamps).toMatchObject({
      [STAMPS.hitlMode]: 'veto',
      [STAMPS.hitlVetoTtlMs]: '60000',
    });
    // sitrep is declared self but changes the board: a gateway flags that.
    const sitrep = await checkAgent(ops.url, { skill: 'sitrep' });
    expect(messages(sitrep, 'warning')).toEqual([
      expect.stringMatching(
        /^blocking: sitrep declares radius self but changed shared world state/,
      ),
    ]);
  });

  it('reports every reason a gateway would reject or flag a misreporting agent', async () => {
    const report = await checkAgent(broken.url, { skill: 'triage' });
    expect(report.ok).toBe(false);
    for (const mode of ['blocking', 'streaming']) {
      expect(messages(report, 'error')).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            new RegExp(
              `^${mode}\\.artifacts\\[0\\]\\.parts\\[0\\]\\.data\\.deltas\\[1\\]: entry 1 is rejected: path has an empty segment`,
            ),
          ),
          expect.stringMatching(
            new RegExp(
              `^${mode}\\.artifacts\\[1\\]\\.parts\\[0\\]: MIME "application/vnd\\.protolabs\\.worldstate-delta\\+json" is not`,
            ),
          ),
        ]),
      );
      expect(messages(report, 'warning')).toEqual(
        expect.arrayContaining([
          `${mode}: triage changed board, outside its declared domains (ci): a gateway raises undeclared_effect`,
          `${mode}: triage declares radius self but changed shared world state: a gateway raises blast_violation`,
        ]),
      );
    }
    expect(messages(report, 'warning')).toContainEqual(
      expect.stringMatching(
        /^streaming\.events\[2\]: a worldstate-delta part on an intermediate event \(artifact artifact-0\)/,
      ),
    );
    expect(report.calls.map((c) => c.deltas)).toEqual([[DELTA], [DELTA]]);
    expect(report.calls.map((c) => c.rejected.length)).toEqual([1, 1]);
  });

  it('flags a missing echo on JSON-RPC streaming, and deltas in a message reply', async () => {
    const report = await checkAgent(unechoed.url, { skill: 'triage' });
    expect(messages(report, 'warning')).toEqual([
      expect.stringMatching(
        /^streaming: no extensions were echoed on the streaming JSONRPC response; activate/,
      ),
    ]);
    const reply = await checkAgent(replier.url, { skill: 'triage' });
    expect(reply.calls[0]!.state).toBe('message');
    expect(messages(reply, 'error')).toEqual([
      'blocking: the agent answered with a message carrying deltas: a gateway reads deltas only from a task; publish a task',
    ]);
  });

  it('flags v0.3 shapes in a v1.0 answer and a missing echo, and still reads the deltas', async () => {
    const report = await checkAgent(handmade.url, { skill: 'triage' });
    expect(messages(report, 'warning')).toEqual([
      expect.stringMatching(/^blocking: no extensions were echoed/),
      expect.stringMatching(/^blocking\.result\.task: a v0\.3 "kind": "task" in a v1\.0 answer/),
      expect.stringMatching(
        /^blocking\.result\.task\.status\.state: state "completed" in a v1\.0 answer/,
      ),
    ]);
    expect(report.calls[0]!.deltas).toEqual([DELTA]);
    expect(report.ok).toBe(true);
  });

  it('throws a coded error when there is no card to check', async () => {
    await expect(
      checkAgent('http://127.0.0.1:9', { skill: 'x', timeoutMs: 2_000 }),
    ).rejects.toSatisfy((e: unknown) => isFleetgateError(e, 'FLEETGATE_CARD_FETCH_FAILED'));
  });
});

describe('fleetgate check-agent', () => {
  let kit: KitAgent;
  let ops: RunningAgent;
  let broken: RunningAgent;
  beforeAll(async () => {
    kit = await startKitAgent({
      name: 'kit',
      skills: ['triage'],
      declare,
      executor: kitExecutor(),
    });
    ops = await startOpsAgent();
    broken = await startAgent({
      name: 'broken',
      skills: [{ id: 'triage' }],
      behaviour: () => ({ artifacts: [[createWorldStateDeltaPart([DELTA])]] }),
    });
  });
  afterAll(async () => {
    await Promise.all([kit, ops, broken].map((a) => a?.close()));
  });

  it(
    'prints the report and exits 0 for a clean agent',
    async () => {
      const run = await runCli(['check-agent', kit.url, '--skill', 'triage']);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Agent ${kit.url}, skill triage`);
      expect(run.stdout).toMatch(
        /stamps sent: +x-effect-domain-skill=triage, x-blast-radius=project, x-cost-skill=triage/,
      );
      expect(run.stdout).toMatch(/board\s+data\.untriaged\s+inc\s+-1/);
      expect(run.stdout).toContain('0 errors, 0 warnings');
    },
    cliTestTimeout(1),
  );

  it(
    'exits 1 on errors, on warnings only with --strict, and prints JSON',
    async () => {
      expect((await runCli(['check-agent', ops.url, '--skill', 'sitrep'])).code).toBe(0);
      expect((await runCli(['check-agent', ops.url, '--skill', 'sitrep', '--strict'])).code).toBe(
        1,
      );
      const run = await runCli(['check-agent', broken.url, '--skill', 'triage', '--json']);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as AgentCheckReport;
      expect(report.ok).toBe(false);
      expect(report.diagnostics).toEqual([
        expect.objectContaining({
          severity: 'error',
          message: expect.stringContaining('does not declare effect-domain-v1'),
        }),
      ]);
    },
    cliTestTimeout(3),
  );

  it(
    'exits 2 with the code when the agent cannot be reached, and without --skill',
    async () => {
      const refused = await runCli([
        'check-agent',
        'http://127.0.0.1:9',
        '--skill',
        'x',
        '--timeout',
        '2000',
      ]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /FLEETGATE_CARD_FETCH_FAILED: http:\/\/127\.0\.0\.1:9\/\.well-known\/agent-card\.json/,
      );
      const usage = await runCli(['check-agent', kit.url]);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toMatch(/^FLEETGATE_USAGE: .*--skill/mu);
      expect(usage.stderr).toMatch(/^ {2}fix: /mu);
    },
    cliTestTimeout(2),
  );

  it(
    'shows --skill as required, and calls no skill the card does not list',
    async () => {
      const help = await runCli(['check-agent', '--help']);
      expect(help.stdout).toMatch(
        /^Usage: fleetgate check-agent <url> --skill <id> \[options\]$/mu,
      );
      const run = await runCli(['check-agent', broken.url, '--skill', 'nosuch', '--json']);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout) as AgentCheckReport;
      // No message reached the agent: a typo must not change its state.
      expect(report.calls).toEqual([]);
      expect(report.diagnostics).toContainEqual(
        expect.objectContaining({
          path: 'card.skills',
          severity: 'error',
          message: expect.stringContaining(
            '"nosuch" is not in card.skills (triage); no call was made',
          ),
        }),
      );
    },
    cliTestTimeout(2),
  );
});
