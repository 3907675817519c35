import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpsAgent } from '../examples/agents/ops-agent.js';
import type { RunningAgent } from '../examples/agents/harness.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import { type OpenTopics } from '../src/protocol/index.js';
import { createFleetClient } from '../src/dispatch/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../src/extensions/index.js';
import {
  AgentDirectory,
  BlastRegistry,
  createCardBroker,
  createMemoryRatchetPersistence,
  DeclarationRatchet,
  EffectDomainRegistry,
  HitlModeRegistry,
  HttpCardSource,
} from '../src/fleet/index.js';
import { STAMPS } from '../src/protocol/index.js';

describe('fleet client on the card broker', () => {
  let agent: RunningAgent;
  beforeAll(async () => {
    agent = await startOpsAgent();
  });
  afterAll(() => agent.close());

  it('builds one SDK client per card, never fetches the card per call, and rebuilds it when the card changes', async () => {
    let cardFetches = 0;
    let widen = false;
    // The agent's card as served, optionally with pr_review widened to fleet (the agent redeployed).
    const cardFetch: typeof fetch = async (input, init) => {
      cardFetches += 1;
      const response = await fetch(input, init);
      if (!widen || response.status !== 200) return response;
      const card = (await response.json()) as {
        capabilities: {
          extensions: { params?: { skills?: Record<string, { radius?: string }> } }[];
        };
      };
      card.capabilities.extensions[0]!.params!.skills!.pr_review!.radius = 'fleet';
      return new Response(JSON.stringify(card), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    };
    const bus = createInMemoryEventBus<OpenTopics>();
    const directory = new AgentDirectory();
    directory.add({ name: 'ops', url: agent.url });
    const registries = {
      blast: new BlastRegistry(),
      hitlMode: new HitlModeRegistry(),
      effectDomain: new EffectDomainRegistry(),
    };
    const broker = createCardBroker({
      directory,
      source: new HttpCardSource({ fetch: cardFetch }),
      registries,
      ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
      bus,
    });
    await broker.start();
    const registry = registerStandardExtensions(new ExtensionRegistry(), {
      bus,
      declarations: broker.stamps,
    });
    const fleet = createFleetClient({ registry, bus, cards: broker });

    for (let i = 0; i < 3; i += 1)
      expect((await fleet.call('ops', 'pr_review', 'go')).ok).toBe(true);
    const first = await fleet.agentClient('ops');
    expect(cardFetches).toBe(1);
    expect(agent.received.at(-1)!.metadata[STAMPS.blastRadius]).toBe('repo');

    widen = true;
    expect(await broker.refresh('ops')).toMatchObject({ result: 'changed' });
    expect(broker.effectiveRadius('ops', 'pr_review').radius).toBe('fleet');
    await fleet.call('ops', 'pr_review', 'go');
    const rebuilt = await fleet.agentClient('ops');
    expect(rebuilt).not.toBe(first);
    expect(agent.received.at(-1)!.metadata[STAMPS.blastRadius]).toBe('fleet');
    await fleet.call('ops', 'pr_review', 'go');
    expect(await fleet.agentClient('ops')).toBe(rebuilt);
    expect(cardFetches).toBe(2);

    broker.stop();
    await bus.close();
  });

  it('stamps the effective radius and mode while a narrowing waits for acknowledgement, the declared ones after ack', async () => {
    let narrow = false;
    // The agent redeploys with pr_review narrowed: radius repo → self, mode veto → autonomous.
    const cardFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!narrow || response.status !== 200) return response;
      const card = (await response.json()) as {
        capabilities: { extensions: { params?: { skills?: Record<string, unknown> } }[] };
      };
      card.capabilities.extensions[0]!.params!.skills!['pr_review'] = { radius: 'self' };
      card.capabilities.extensions[1]!.params!.skills!['pr_review'] = { mode: 'autonomous' };
      return new Response(JSON.stringify(card), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    };
    const bus = createInMemoryEventBus<OpenTopics>();
    const directory = new AgentDirectory();
    directory.add({ name: 'ops', url: agent.url });
    const broker = createCardBroker({
      directory,
      source: new HttpCardSource({ fetch: cardFetch }),
      registries: {
        blast: new BlastRegistry(),
        hitlMode: new HitlModeRegistry(),
        effectDomain: new EffectDomainRegistry(),
      },
      ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
      bus,
    });
    await broker.start();
    const registry = registerStandardExtensions(new ExtensionRegistry(), {
      bus,
      declarations: broker.stamps,
    });
    const fleet = createFleetClient({ registry, bus, cards: broker });
    const stampsOfLastCall = (): Record<string, unknown> => {
      const m = agent.received.at(-1)!.metadata;
      return {
        radius: m[STAMPS.blastRadius],
        mode: m[STAMPS.hitlMode],
        ttl: m[STAMPS.hitlVetoTtlMs],
      };
    };

    await fleet.call('ops', 'pr_review', 'go');
    expect(stampsOfLastCall()).toEqual({ radius: 'repo', mode: 'veto', ttl: '60000' });

    narrow = true;
    expect(await broker.refresh('ops')).toMatchObject({ result: 'changed' });
    expect(broker.effectiveRadius('ops', 'pr_review')).toMatchObject({
      radius: 'repo',
      declared: 'self',
      pending: 'self',
      source: 'acknowledged',
    });
    await fleet.call('ops', 'pr_review', 'go');
    expect((await fleet.agentClient('ops')).declarations.blast['pr_review']).toEqual({
      radius: 'self',
    });
    // The card now says self/autonomous, but the gate still applies repo/veto: so does the stamp.
    expect(stampsOfLastCall()).toEqual({ radius: 'repo', mode: 'veto', ttl: undefined });

    expect(await broker.acknowledge('ops', 'pr_review', 'alice')).toEqual({
      radius: 'self',
      mode: 'autonomous',
    });
    await fleet.call('ops', 'pr_review', 'go');
    expect(stampsOfLastCall()).toEqual({ radius: 'self', mode: 'autonomous', ttl: undefined });

    broker.stop();
    await bus.close();
  });
});
