import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  startAgent,
  startLegacyAgent,
  startOpsAgent,
  startPlainAgent,
  type RunningAgent,
} from '../examples/agents/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import {
  BLAST_V1_URI,
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  HITL_MODE_V1_URI,
  STAMPS,
  createWorldStateDeltaPart,
} from '../src/protocol/index.js';
import { createTestFleet } from './extensions-support.js';

const CALLER_URI = 'https://example.com/ext/tracing-v1';
const DELTA = { domain: 'ci', path: 'data.blockedPRs', op: 'inc', value: -1 } as const;

let twoExt: RunningAgent;
let plain: RunningAgent;
let ops: RunningAgent;
let legacy: RunningAgent;
let secured: RunningAgent;

beforeAll(async () => {
  twoExt = await startAgent({
    name: 'two',
    skills: [{ id: 'pr_review' }],
    extensions: [
      { uri: EFFECT_DOMAIN_V1_URI },
      { uri: BLAST_V1_URI, params: { skills: { pr_review: { radius: 'repo' } } } },
    ],
    behaviour: () => ({ artifacts: [[createWorldStateDeltaPart([DELTA])]] }),
  });
  plain = await startPlainAgent();
  ops = await startOpsAgent();
  legacy = await startLegacyAgent();
  secured = await startAgent({
    name: 'secured',
    skills: [{ id: 'x' }],
    bearerToken: 'sesame',
    behaviour: () => ({}),
  });
});

afterAll(async () => {
  await Promise.all([twoExt, plain, ops, legacy, secured].map((a) => a.close()));
});

describe('activation on the wire', () => {
  it('sends exactly the declared extensions in A2A-Extensions and their stamps in request metadata', async () => {
    const t = await createTestFleet([twoExt]);
    const result = await t.fleet.call('two', 'pr_review', 'review #42');
    const received = twoExt.received.at(-1)!;
    const header = received.headers['a2a-extensions']!.split(',').map((s) => s.trim());
    expect(header.sort()).toEqual([BLAST_V1_URI, EFFECT_DOMAIN_V1_URI].sort());
    expect(received.requestedVersion).toBe('1.0');
    expect(received.metadata).toEqual({
      [STAMPS.effectDomainSkill]: 'pr_review',
      [STAMPS.blastRadius]: 'repo',
    });
    expect(result.activated.sort()).toEqual([BLAST_V1_URI, EFFECT_DOMAIN_V1_URI].sort());
    expect(result.echoedExtensions?.sort()).toEqual([BLAST_V1_URI, EFFECT_DOMAIN_V1_URI].sort());
    expect(await t.on('world.state.delta')).toHaveLength(1);
  });

  it('sends neither header nor stamps to an agent that declares nothing, and publishes no delta for it', async () => {
    const t = await createTestFleet([plain]);
    const result = await t.fleet.call('plain', 'echo', 'hello');
    const received = plain.received.at(-1)!;
    expect(result.text).toBe('echo: hello');
    expect(received.headers).not.toHaveProperty('a2a-extensions');
    expect(received.headers).not.toHaveProperty('x-a2a-extensions');
    expect(received.metadata).toEqual({});
    expect(result.activated).toEqual([]);
    // The agent did return a delta part; it is not ours to publish without the declaration.
    expect(result.data).toHaveLength(1);
    expect(await t.on('world.state.delta')).toEqual([]);
    expect(await t.on('cost.sample')).toEqual([]);
  });

  it('merges a caller-supplied extension URI with the active ones into one header', async () => {
    const t = await createTestFleet([twoExt]);
    await t.fleet.call('two', 'pr_review', 'x', {
      extensions: [CALLER_URI],
      serviceParameters: { 'A2A-Extensions': 'https://example.com/ext/other-v1' },
    });
    const header = twoExt.received
      .at(-1)!
      .headers['a2a-extensions']!.split(',')
      .map((s) => s.trim());
    expect(header.sort()).toEqual(
      ['https://example.com/ext/other-v1', CALLER_URI, EFFECT_DOMAIN_V1_URI, BLAST_V1_URI].sort(),
    );
  });

  it('never lets a caller metadata key replace a stamp, and keeps the caller’s other keys', async () => {
    const t = await createTestFleet([twoExt]);
    await t.fleet.call('two', 'pr_review', 'x', {
      metadata: { [STAMPS.blastRadius]: 'self', traceId: 'abc' },
    });
    expect(twoExt.received.at(-1)!.metadata).toEqual({
      [STAMPS.blastRadius]: 'repo',
      [STAMPS.effectDomainSkill]: 'pr_review',
      traceId: 'abc',
    });
  });

  it('stamps hitl-mode (with the veto window for veto only) and cost for an agent declaring all four', async () => {
    const t = await createTestFleet([ops]);
    await t.fleet.call('ops', 'pr_review', 'x');
    expect(ops.received.at(-1)!.metadata).toEqual({
      [STAMPS.blastRadius]: 'repo',
      [STAMPS.hitlMode]: 'veto',
      [STAMPS.hitlVetoTtlMs]: '60000',
      [STAMPS.effectDomainSkill]: 'pr_review',
      [STAMPS.costSkill]: 'pr_review',
    });
    await t.fleet.call('ops', 'bulk_migration', 'x');
    expect(ops.received.at(-1)!.metadata).toMatchObject({ [STAMPS.hitlMode]: 'gated' });
    expect(ops.received.at(-1)!.metadata).not.toHaveProperty(STAMPS.hitlVetoTtlMs);
    const header = ops.received.at(-1)!.headers['a2a-extensions']!.split(',');
    expect(header.sort()).toEqual(
      [BLAST_V1_URI, HITL_MODE_V1_URI, EFFECT_DOMAIN_V1_URI, COST_V1_URI].sort(),
    );
    const samples = await t.on('cost.sample');
    expect(samples.at(-1)?.payload).toMatchObject({
      agent: 'ops',
      skill: 'bulk_migration',
      tokensIn: 120,
      tokensOut: 40,
      measured: 'agent',
      success: true,
    });
  });

  it('gives a v0.3 agent (SDK legacyCompat) its stamps and publishes its deltas', async () => {
    const t = await createTestFleet([legacy]);
    const result = await t.fleet.call('legacy', 'triage', 'x');
    const received = legacy.received.at(-1)!;
    expect(result.protocolVersion).toBe('0.3');
    expect(received.requestedVersion).toBe('0.3');
    expect(received.headers['x-a2a-extensions']?.split(',').sort()).toEqual(
      [BLAST_V1_URI, EFFECT_DOMAIN_V1_URI].sort(),
    );
    expect(received.metadata).toEqual({
      [STAMPS.effectDomainSkill]: 'triage',
      [STAMPS.blastRadius]: 'project',
    });
    const deltas = await t.on('world.state.delta');
    expect(deltas.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        source: 'legacy',
        skill: 'triage',
        taskId: result.task!.id,
        deltas: [{ domain: 'board', path: 'data.untriaged', op: 'inc', value: -2 }],
      }),
    ]);
  });

  it('uses the HTTP+JSON transport when preferred', async () => {
    const t = await createTestFleet([]);
    t.cards.set('two', { url: twoExt.url, card: await twoExt.fetchCard(), transport: 'HTTP+JSON' });
    const result = await t.fleet.call('two', 'pr_review', 'x');
    expect(result.transport).toBe('HTTP+JSON');
    expect(twoExt.received.at(-1)!.metadata).toMatchObject({ [STAMPS.blastRadius]: 'repo' });
    expect(twoExt.received.at(-1)!.headers['a2a-extensions']).toContain(BLAST_V1_URI);
    expect(await t.on('world.state.delta')).toHaveLength(1);
  });

  it('sends the agent’s configured auth headers', async () => {
    const t = await createTestFleet([]);
    const card = await secured.fetchCard();
    t.cards.set('secured', { url: secured.url, card, headers: { Authorization: 'Bearer sesame' } });
    t.cards.set('secured-no-auth', { url: secured.url, card });
    expect((await t.fleet.call('secured', 'x', 'hi')).ok).toBe(true);
    const error = await t.fleet.call('secured-no-auth', 'x', 'hi').catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_CALL_FAILED')).toBe(true);
  });
});

describe('clients', () => {
  it('pins the transport to the configured URL, not the one the card advertises', async () => {
    const card = structuredClone(await twoExt.fetchCard()) as {
      supportedInterfaces: { url: string }[];
    };
    for (const iface of card.supportedInterfaces) {
      iface.url = iface.url.replace(/^http:\/\/127\.0\.0\.1:\d+/, 'http://203.0.113.7:9');
    }
    const t = await createTestFleet([]);
    t.cards.set('two', { url: twoExt.url, card });
    const before = twoExt.received.length;
    await t.fleet.call('two', 'pr_review', 'x', { timeoutMs: 5_000 });
    expect(twoExt.received.length).toBe(before + 1);
  });

  it('builds one SDK client per agent and never fetches the card per call', async () => {
    const urls: string[] = [];
    const countingFetch: typeof fetch = (input, init) => {
      urls.push(input instanceof Request ? input.url : String(input));
      return fetch(input, init);
    };
    const t = await createTestFleet([twoExt], { fetch: countingFetch });
    const first = await t.fleet.agentClient('two');
    for (let i = 0; i < 3; i += 1) await t.fleet.call('two', 'pr_review', `call ${i}`);
    expect(await t.fleet.agentClient('two')).toBe(first);
    expect(urls).toHaveLength(3);
    expect(urls.every((u) => u.endsWith('/a2a/jsonrpc'))).toBe(true);
  });

  it('rebuilds the client when the card object changes and reads its declarations from it once', async () => {
    const t = await createTestFleet([twoExt]);
    await t.fleet.call('two', 'pr_review', 'x');
    expect(twoExt.received.at(-1)!.metadata[STAMPS.blastRadius]).toBe('repo');
    const first = await t.fleet.agentClient('two');
    expect(first.declarations.blast['pr_review']).toEqual({ radius: 'repo' });
    const card = structuredClone(await twoExt.fetchCard()) as {
      capabilities: { extensions: { uri: string; params?: unknown }[] };
    };
    card.capabilities.extensions = card.capabilities.extensions.filter(
      (e) => e.uri !== BLAST_V1_URI,
    );
    t.cards.set('two', { url: twoExt.url, card });
    await t.fleet.call('two', 'pr_review', 'x');
    const rebuilt = await t.fleet.agentClient('two');
    expect(rebuilt).not.toBe(first);
    expect(rebuilt.declarations.blast['pr_review']).toBeUndefined();
    expect(twoExt.received.at(-1)!.metadata[STAMPS.blastRadius]).toBeUndefined();
    expect(twoExt.received.at(-1)!.headers['a2a-extensions']).toBe(EFFECT_DOMAIN_V1_URI);
  });

  it('rejects an unknown agent with FLEETGATE_AGENT_UNKNOWN', async () => {
    const t = await createTestFleet([]);
    const error = await t.fleet.call('nobody', 's', 'x').catch((e: unknown) => e);
    expect(isFleetgateError(error, 'FLEETGATE_AGENT_UNKNOWN')).toBe(true);
  });

  it('rejects a card that is not a card with FLEETGATE_CARD_INVALID', async () => {
    const t = await createTestFleet([]);
    t.cards.set('bad', { url: 'http://127.0.0.1:9', card: 'nope' });
    t.cards.set('empty', { url: 'http://127.0.0.1:9', card: { name: 'empty' } });
    for (const name of ['bad', 'empty']) {
      const error = await t.fleet.call(name, 's', 'x').catch((e: unknown) => e);
      expect(isFleetgateError(error, 'FLEETGATE_CARD_INVALID')).toBe(true);
    }
  });
});
