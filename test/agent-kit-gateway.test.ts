/**
 * An agent built on the agent-author kit, called through a gateway (`createGateway`): what it
 * reports during a task arrives as one `world.state.delta`, never on an intermediate stream event,
 * also when the task is canceled; the JSON-RPC streaming echo is present; v0.3 clients read the
 * same parts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentCard, Part, StreamResponse } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import type { ExecutionEventBus } from '@a2a-js/sdk/server';
import { AgentEvent, defaultServerCallContextBuilder } from '@a2a-js/sdk/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EffectsAgentExecutor } from '../src/agent/index.js';
import { declareBlast, declareCost, declareEffectDomain } from '../src/agent/index.js';
import { ALLOW_ALL } from '../src/dispatch/index.js';
import type { EventEnvelope, WorldStateDeltaEntry } from '../src/protocol/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  LEGACY_EXTENSIONS_HEADER,
  STAMPS,
  WORLDSTATE_DELTA_MIME,
  extractWorldStateDeltas,
} from '../src/protocol/index.js';
import type { Gateway } from '../src/service/index.js';
import { until } from './support/gateway.js';
import type { KitAgent } from './support/kit-agent.js';
import { startKitAgent } from './support/kit-agent.js';
import { assembleGateway, type GatewayParts } from '../src/service/internal.js';

const D1: WorldStateDeltaEntry = { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 };
const D2: WorldStateDeltaEntry = { domain: 'board', path: 'data.labels', op: 'push', value: 'bug' };
const D3: WorldStateDeltaEntry = { domain: 'board', path: 'data.last', op: 'set', value: 'done' };
const ON_CANCEL: WorldStateDeltaEntry = {
  domain: 'board',
  path: 'data.canceled',
  op: 'inc',
  value: 1,
};
const DECLARED = [BLAST_V1_URI, EFFECT_DOMAIN_V1_URI, COST_V1_URI];

function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}

function state(bus: ExecutionEventBus, taskId: string, contextId: string, s: TaskState): void {
  bus.publish(
    AgentEvent.statusUpdate({
      taskId,
      contextId,
      status: { state: s, message: undefined, timestamp: new Date().toISOString() },
      metadata: undefined,
    }),
  );
}

function progress(bus: ExecutionEventBus, taskId: string, contextId: string, n: number): void {
  bus.publish(
    AgentEvent.artifactUpdate({
      taskId,
      contextId,
      artifact: {
        artifactId: `progress-${n}`,
        name: 'progress',
        description: '',
        parts: [text(`step ${n}`)],
        metadata: undefined,
        extensions: [],
      },
      append: false,
      lastChunk: true,
      metadata: undefined,
    }),
  );
}

/** Tasks waiting to be canceled, by id. */
const held = new Map<string, () => void>();

/** Triages in three steps, reporting a delta at each; "hold" waits after two for a cancel. */
const triage: EffectsAgentExecutor = {
  async execute(ctx, bus, effects) {
    const { taskId, contextId } = ctx;
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [],
        metadata: undefined,
      }),
    );
    effects.report(D1);
    progress(bus, taskId, contextId, 1);
    effects.report([D2]);
    const input = ctx.userMessage.parts[0]?.content;
    if (input?.$case === 'text' && input.value === 'hold') {
      await new Promise<void>((resolve) => held.set(taskId, resolve));
      return;
    }
    progress(bus, taskId, contextId, 2);
    effects.report(D3);
    effects.reportCost({ usage: { input_tokens: 12, output_tokens: 3 }, costUsd: 0.001 });
    state(bus, taskId, contextId, TaskState.TASK_STATE_COMPLETED);
    bus.finished();
  },
  cancelTask(taskId, bus, effects) {
    effects.report(ON_CANCEL);
    state(bus, taskId, effects.contextId, TaskState.TASK_STATE_CANCELED);
    bus.finished();
    held.get(taskId)?.();
    return Promise.resolve();
  },
};

const declare = (card: AgentCard): AgentCard =>
  declareCost(
    declareEffectDomain(declareBlast(card, { triage: 'project' }), { triage: ['board'] }),
  );

function deltaPartsOf(event: StreamResponse): number {
  const payload = event.payload;
  const parts: Part[] =
    payload?.$case === 'artifactUpdate'
      ? (payload.value.artifact?.parts ?? [])
      : payload?.$case === 'task'
        ? payload.value.artifacts.flatMap((a) => a.parts)
        : payload?.$case === 'statusUpdate'
          ? (payload.value.status?.message?.parts ?? [])
          : [];
  return parts.filter((p) => p.metadata?.['mimeType'] === WORLDSTATE_DELTA_MIME).length;
}

describe('an agent built on fleetgate/agent, through the gateway', () => {
  let dir: string;
  let kit: KitAgent;
  let legacy: KitAgent;
  let gw: Gateway;
  let parts: GatewayParts;
  const deltas: EventEnvelope[] = [];
  const deltasOf = (taskId: string | null | undefined) =>
    deltas.filter((e) => (e.payload as { taskId: string }).taskId === taskId);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-kit-'));
    kit = await startKitAgent({
      name: 'kit',
      skills: ['triage'],
      declare,
      executor: triage,
      streaming: true,
      versions: 'both',
    });
    legacy = await startKitAgent({
      name: 'kit03',
      skills: ['triage'],
      declare,
      executor: triage,
      versions: '0.3',
    });
    ({ gateway: gw, parts } = await assembleGateway(
      {
        store: `sqlite:${join(dir, 'gw.db')}`,
        agents: [
          { name: 'kit', url: kit.url },
          { name: 'kit03', url: legacy.url },
        ],
      },
      { gate: ALLOW_ALL, tracking: { polling: { intervalMs: 20 } } },
    ));
    await gw.events.subscribe('world.state.delta', (e) => void deltas.push(e), {
      name: 'kit-deltas',
    });
  });

  afterAll(async () => {
    await gw?.close();
    await kit?.close();
    await legacy?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes the deltas reported during the task as one world.state.delta', async () => {
    const record = await gw.dispatch({ agent: 'kit', skill: 'triage', text: 'go' }).answered();
    expect(record.status).toBe('completed');
    await gw.settle();
    const mine = deltasOf(record.taskId);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.payload).toMatchObject({
      source: 'kit',
      skill: 'triage',
      deltas: [D1, D2, D3],
      state: 'completed',
    });
    expect(await gw.world.getDomain('board')).toMatchObject({
      state: { data: { untriaged: -1, labels: ['bug'], last: 'done' } },
    });
    expect(kit.warnings).toEqual([]);
  });

  it('carries no delta part on an intermediate stream event, and echoes on JSON-RPC streaming', async () => {
    const events: StreamResponse[] = [];
    const result = await gw.call('kit', 'triage', 'go', {
      mode: 'streaming',
      onEvent: (event) => void events.push(event),
    });
    expect(result).toMatchObject({ state: 'completed', transport: 'JSONRPC' });
    expect(result.protocolVersion).toBe('1.0');
    expect(events.map((e) => e.payload?.$case)).toEqual([
      'task',
      'artifactUpdate',
      'artifactUpdate',
      'artifactUpdate',
      'statusUpdate',
    ]);
    // Exactly one delta part, on the artifact sent right before the terminal status.
    expect(events.map(deltaPartsOf)).toEqual([0, 0, 0, 1, 0]);
    const effects = events[3]!.payload;
    expect(effects?.$case === 'artifactUpdate' && effects.value.artifact?.extensions).toEqual([
      EFFECT_DOMAIN_V1_URI,
      COST_V1_URI,
    ]);
    expect(result.echoedExtensions?.sort()).toEqual([...DECLARED].sort());
    await gw.settle();
    expect(deltasOf(result.task?.id)).toHaveLength(1);
    expect(deltasOf(result.task?.id)[0]!.payload).toMatchObject({ deltas: [D1, D2, D3] });
  });

  it('still carries the reported deltas when the task is canceled', async () => {
    const before = new Set(held.keys());
    const dispatched = gw.dispatch({ agent: 'kit', skill: 'triage', text: 'hold' }).answered();
    let taskId: string | undefined;
    await until(
      () => (taskId = [...held.keys()].find((id) => !before.has(id))) !== undefined,
      5_000,
      'the task to hold',
    );
    const { client } = await parts.fleet.agentClient('kit');
    const canceled = await client.cancelTask({ tenant: '', id: taskId!, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const record = await dispatched;
    expect(record).toMatchObject({ status: 'canceled', taskId });
    await gw.settle();
    expect(deltasOf(taskId)).toHaveLength(1);
    expect(deltasOf(taskId)[0]!.payload).toMatchObject({
      state: 'canceled',
      deltas: [D1, D2, ON_CANCEL],
    });
  });

  it('gives a v0.3 client the same parts a v1.0 client reads', async () => {
    const rpc = async (version: '1.0' | '0.3') => {
      const v1 = version === '1.0';
      const response = await fetch(`${kit.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          ...(v1
            ? { 'A2A-Version': '1.0', 'A2A-Extensions': EFFECT_DOMAIN_V1_URI }
            : { [LEGACY_EXTENSIONS_HEADER]: EFFECT_DOMAIN_V1_URI }),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: v1 ? 'SendMessage' : 'message/send',
          params: {
            message: v1
              ? { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] }
              : {
                  kind: 'message',
                  messageId: crypto.randomUUID(),
                  role: 'user',
                  parts: [{ kind: 'text', text: 'go' }],
                },
            metadata: { [STAMPS.effectDomainSkill]: 'triage' },
          },
        }),
      });
      const body = (await response.json()) as { result: Record<string, unknown> };
      return { response, result: body.result };
    };
    const v1 = await rpc('1.0');
    const v03 = await rpc('0.3');
    expect(v1.response.headers.get('A2A-Extensions')).toBe(EFFECT_DOMAIN_V1_URI);
    expect(v03.response.headers.get(LEGACY_EXTENSIONS_HEADER)).toBe(EFFECT_DOMAIN_V1_URI);
    const v03Task = v03.result as {
      kind: string;
      status: { state: string };
      artifacts: { artifactId: string; extensions: string[]; parts: Record<string, unknown>[] }[];
    };
    expect(v03Task.kind).toBe('task');
    expect(v03Task.status.state).toBe('completed');
    const effects = v03Task.artifacts.find((a) => a.artifactId === 'fleetgate-effects')!;
    expect(effects.extensions).toEqual([EFFECT_DOMAIN_V1_URI, COST_V1_URI]);
    expect(effects.parts[0]).toEqual({
      kind: 'data',
      data: { deltas: [D1, D2, D3] },
      metadata: { mimeType: WORLDSTATE_DELTA_MIME },
    });
    const read = (task: unknown) => extractWorldStateDeltas(task);
    expect(read(v03.result)).toEqual(read((v1.result as { task: unknown }).task));
    expect(read(v03.result).entries).toEqual([D1, D2, D3]);

    // And a v0.3-only agent on the kit, through the gateway.
    const record = await gw.dispatch({ agent: 'kit03', skill: 'triage', text: 'go' }).answered();
    expect(record.status).toBe('completed');
    await gw.settle();
    expect(deltasOf(record.taskId)[0]!.payload).toMatchObject({
      source: 'kit03',
      deltas: [D1, D2, D3],
    });
  });

  it('loses the JSON-RPC streaming echo without the kit context builder (why activateExtensions exists)', async () => {
    const bare = await startKitAgent({
      name: 'bare',
      skills: ['triage'],
      declare,
      executor: triage,
      streaming: true,
      contextBuilder: () => defaultServerCallContextBuilder,
    });
    try {
      const send = (method: string) =>
        fetch(`${bare.url}/a2a/jsonrpc`, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'A2A-Version': '1.0',
            'A2A-Extensions': DECLARED.join(','),
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method,
            params: {
              message: {
                messageId: crypto.randomUUID(),
                role: 'ROLE_USER',
                parts: [{ text: 'go' }],
              },
            },
          }),
        });
      // withEffects activates from the executor too: enough for a blocking call …
      const blocking = await send('SendMessage');
      await blocking.text();
      expect(blocking.headers.get('A2A-Extensions')?.split(/,\s*/).sort()).toEqual(
        [...DECLARED].sort(),
      );
      // … not for a stream, whose headers are written before the executor runs.
      const streaming = await send('SendStreamingMessage');
      await streaming.text();
      expect(streaming.headers.get('A2A-Extensions')).toBeNull();
      const kitStreaming = await fetch(`${kit.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'A2A-Version': '1.0',
          'A2A-Extensions': DECLARED.join(','),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendStreamingMessage',
          params: {
            message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
          },
        }),
      });
      const sse = await kitStreaming.text();
      expect(kitStreaming.headers.get('A2A-Extensions')?.split(/,\s*/).sort()).toEqual(
        [...DECLARED].sort(),
      );
      // The raw stream: the delta part only in the event before the last.
      const frames = sse.split('\n\n').filter((f) => f.startsWith('data:'));
      const withDeltas = frames.flatMap((f, i) => (f.includes(WORLDSTATE_DELTA_MIME) ? [i] : []));
      expect(withDeltas).toEqual([frames.length - 2]);
    } finally {
      await bare.close();
    }
  });
});
