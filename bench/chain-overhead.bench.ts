/**
 * chain-overhead: what the extension chain costs per skill call, with the four standard
 * extensions (blast-v1, hitl-mode-v1, effect-domain-v1, cost-v1) active, around a no-op transport.
 *
 * - `ns_per_call` (target < 2000): the median of seven rounds of context + four `before` hooks (stamps) + outbound metadata + four `after`
 *   hooks on a terminal task carrying a two-entry worldstate-delta part and a cost part (delta and
 *   cost extraction, `world.state.delta` and `cost.sample` published on an in-memory bus).
 * - `no_extension_ns_per_call`, `stamps_only_ns_per_call` (blast-v1 and hitl-mode-v1),
 *   `effect_domain_ns_per_call`, `cost_ns_per_call`: the same call with only those extensions
 *   active, each the median of three rounds — where `ns_per_call` goes (informational).
 * - `fleet_call_ns_per_call`: the whole `createFleetClient().call` (SDK client, JSON-RPC encoding
 *   and decoding included) with a `fetch` that answers from memory, no socket.
 */

import { TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

import { createInMemoryEventBus } from '../src/bus/index.js';
import { type OpenTopics } from '../src/protocol/index.js';
import { createFleetClient, outcomeForTask, toSdkAgentCard } from '../src/dispatch/index.js';
import {
  ExtensionRegistry,
  SkillCallChain,
  createSkillCallContext,
  createHookFailureLog,
  registerStandardExtensions,
} from '../src/extensions/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  createCostPart,
  createWorldStateDeltaPart,
  readDeclarations,
} from '../src/protocol/index.js';
import { opsDeclarations } from '../examples/agents/ops-agent.js';
import { note, percentile, report } from './report.js';
import { rawTextRequest } from './support/sdk-request.js';

const BENCH = 'chain-overhead';
const AGENT = 'ops';
const SKILL = 'pr_review';
const url = 'http://127.0.0.1:9';

const card = {
  name: AGENT,
  description: 'bench',
  version: '1.0.0',
  supportedInterfaces: [
    { url: `${url}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  ],
  capabilities: {
    streaming: false,
    extensions: opsDeclarations().map((d) => ({ uri: d.uri, params: d.params })),
  },
  skills: [{ id: SKILL, name: SKILL, description: SKILL, tags: [] }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
};

const parts = [
  createWorldStateDeltaPart([
    { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 },
    { domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 },
  ]),
  createCostPart({ usage: { input_tokens: 120, output_tokens: 40 }, costUsd: 0.0021 }),
];

function taskFor(id: string): Task {
  return {
    id,
    contextId: 'ctx',
    status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
    artifacts: [
      { artifactId: 'a0', name: '', description: '', parts, metadata: undefined, extensions: [] },
    ],
    history: [],
    metadata: undefined,
  };
}

const bus = createInMemoryEventBus<OpenTopics>();
const registry = registerStandardExtensions(new ExtensionRegistry(), { bus });
const declarations = readDeclarations(card);
const extensions = registry.forDeclarations(declarations);
if (extensions.length !== 4)
  throw new Error(`expected 4 active extensions, got ${extensions.length}`);
const sink = createHookFailureLog({ bus });
const signal = new AbortController().signal;

let seq = 0;
/** One call through `active` (the four, or a part of them), which must stamp `stamps` keys. */
function chainCall(active: typeof extensions, stamps: number): () => Promise<void> {
  return async () => {
    seq += 1;
    const ctx = createSkillCallContext({
      agent: AGENT,
      skill: SKILL,
      correlationId: `c${seq}`,
      signal,
      declarations,
    });
    const chain = new SkillCallChain(active, ctx, sink);
    await chain.runBefore();
    if (Object.keys(ctx.outboundMetadata()).length !== stamps) throw new Error('missing stamps');
    const failure = await chain.runAfter(outcomeForTask(taskFor(`t${seq}`)));
    if (failure !== undefined) throw failure;
  };
}
const chainOnce = chainCall(extensions, 5);

/** The extensions of `uris` only, in registration order. */
const only = (...uris: string[]) => extensions.filter((e) => uris.includes(e.extension.uri));

async function measure(
  label: string,
  fn: () => Promise<void>,
  batches: number,
  perBatch: number,
): Promise<number> {
  for (let i = 0; i < perBatch * 2; i += 1) await fn(); // warm-up
  const perCall: number[] = [];
  for (let b = 0; b < batches; b += 1) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < perBatch; i += 1) await fn();
    perCall.push(Number(process.hrtime.bigint() - started) / perBatch);
  }
  const median = percentile(perCall, 50);
  note(`${label}: median ${Math.round(median)} ns/call over ${batches} x ${perBatch} calls`);
  return median;
}

// A fetch that answers every SendMessage from memory: the same completed task each time, with a
// fresh task id so the bus's duplicate window never short-cuts a publish.
const responseTask = taskFor('x');
const taskJson = {
  id: 'x',
  contextId: 'ctx',
  status: { state: 'TASK_STATE_COMPLETED' },
  artifacts: responseTask.artifacts.map((a) => ({
    artifactId: a.artifactId,
    parts: a.parts.map((p) => ({
      data: p.content?.$case === 'data' ? p.content.value : null,
      metadata: p.metadata,
    })),
  })),
};
let fetchSeq = 0;
const noopFetch: typeof fetch = async (_input, init) => {
  const request = JSON.parse(typeof init?.body === 'string' ? init.body : '{}') as { id: number };
  fetchSeq += 1;
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: request.id,
    result: { task: { ...taskJson, id: `f${fetchSeq}` } },
  });
  return Promise.resolve(
    new Response(body, { status: 200, headers: { 'content-type': 'application/json' } }),
  );
};
const fleet = createFleetClient({
  registry,
  bus,
  cards: new Map([[AGENT, { url, card }]]),
  fetch: noopFetch,
});

const sdk = await new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: noopFetch })],
}).createFromAgentCard(await toSdkAgentCard(card, AGENT));

async function sdkOnce(): Promise<void> {
  const reply = await sdk.sendMessage(rawTextRequest('go'));
  if ('messageId' in reply) throw new Error('unexpected message reply');
}

async function fleetOnce(): Promise<void> {
  const result = await fleet.call(AGENT, SKILL, 'go');
  if (!result.ok) throw new Error(`unexpected state ${result.state}`);
}

/** Rounds of the chain figure; it is their median, so one disturbed round does not move it. */
const ROUNDS = 7;
const rounds: number[] = [];
for (let r = 0; r < ROUNDS; r += 1)
  rounds.push(await measure(`chain round ${r + 1}`, chainOnce, 10, 2_000));
const chainNs = percentile(rounds, 50);
note(`chain: median of ${ROUNDS} rounds ${Math.round(chainNs)} ns/call`);
// Where the time goes: the same call with a part of the extensions (each the median of 3 rounds).
const partial = {
  no_extension_ns_per_call: chainCall(only(), 0),
  stamps_only_ns_per_call: chainCall(only(BLAST_V1_URI, HITL_MODE_V1_URI), 3),
  effect_domain_ns_per_call: chainCall(only(EFFECT_DOMAIN_V1_URI), 1),
  cost_ns_per_call: chainCall(only(COST_V1_URI), 1),
};
const partNs: Record<string, number> = {};
for (const [metric, call] of Object.entries(partial)) {
  const partRounds: number[] = [];
  for (let r = 0; r < 3; r += 1) partRounds.push(await measure(metric, call, 10, 2_000));
  partNs[metric] = percentile(partRounds, 50);
}
const fleetNs = await measure('fleet call, in-memory fetch', fleetOnce, 20, 500);
const sdkNs = await measure('raw SDK sendMessage, in-memory fetch', sdkOnce, 20, 500);
await bus.idle();
report({
  bench: BENCH,
  metric: 'ns_per_call',
  value: Math.round(chainNs),
  unit: 'ns',
  target: '<2000',
});
for (const [metric, ns] of Object.entries(partNs)) {
  report({ bench: BENCH, metric, value: Math.round(ns), unit: 'ns' });
}
report({ bench: BENCH, metric: 'fleet_call_ns_per_call', value: Math.round(fleetNs), unit: 'ns' });
report({ bench: BENCH, metric: 'sdk_call_ns_per_call', value: Math.round(sdkNs), unit: 'ns' });
await bus.close();
