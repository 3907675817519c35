import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventEnvelope } from '../src/protocol/index.js';
import { createRadiusWidenedAlerts } from '../src/alerts/index.js';
import { createInMemoryEventBus } from '../src/bus/index.js';
import type { CardBrokerOptions } from '../src/fleet/index.js';
import type { CardBroker } from '../src/fleet/index.js';
import {
  AgentDirectory,
  BlastRegistry,
  createCardBroker,
  createMemoryRatchetPersistence,
  createStoreCardCache,
  createStoreRatchetPersistence,
  DeclarationRatchet,
  EffectDomainRegistry,
  HitlModeRegistry,
  HttpCardSource,
} from '../src/fleet/index.js';
import type { BlastRadius } from '../src/protocol/index.js';
import { LIMITS } from '../src/protocol/index.js';
import type { CardServer } from './support/card-server.js';
import { cardWith, startCardServer } from './support/card-server.js';
import { openGatewayStore } from '../src/service/index.js';

interface Harness {
  broker: CardBroker;
  directory: AgentDirectory;
  registries: {
    blast: BlastRegistry;
    hitlMode: HitlModeRegistry;
    effectDomain: EffectDomainRegistry;
  };
  events: EventEnvelope[];
  settle: () => Promise<void>;
}

async function harness(
  server: CardServer,
  agents: string[],
  options: Partial<CardBrokerOptions> & { timeoutMs?: number } = {},
): Promise<Harness> {
  const bus = createInMemoryEventBus();
  const events: EventEnvelope[] = [];
  await bus.subscribe('>', (e) => void events.push(e as EventEnvelope), { name: 'recorder' });
  // The composition root wires the radius-widened alert beside the broker; so does the harness.
  await createRadiusWidenedAlerts({ bus }).start();
  const directory = new AgentDirectory();
  directory.load(agents.map((name) => ({ name, url: server.urlOf(name) })));
  const registries = {
    blast: new BlastRegistry(),
    hitlMode: new HitlModeRegistry(),
    effectDomain: new EffectDomainRegistry(),
  };
  const broker = createCardBroker({
    directory,
    source: new HttpCardSource({ timeoutMs: options.timeoutMs ?? 2000 }),
    registries,
    ratchet: options.ratchet ?? (await DeclarationRatchet.open(createMemoryRatchetPersistence())),
    bus,
    random: () => 0.5,
    ...options,
  });
  // Delivery is asynchronous: wait until the recorder has seen everything published so far.
  const settle = async (): Promise<void> => {
    await broker.whenIdle();
    for (let i = 0; i < 5; i += 1) await new Promise((r) => setImmediate(r));
  };
  return { broker, directory, registries, events, settle };
}

const topics = (events: EventEnvelope[], topic: string): EventEnvelope[] =>
  events.filter((e) => e.topic === topic);

describe('card broker', () => {
  let server: CardServer;
  beforeEach(async () => {
    server = await startCardServer();
  });
  afterEach(async () => {
    vi.useRealTimers();
    await server.close();
  });

  it('fetches every agent on start and again at 10 minutes, once each; a 304 keeps the card', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    for (const name of ['a', 'b', 'c'])
      server.set(name, { type: 'card', card: cardWith(name, { s: 'repo' }) });
    const h = await harness(server, ['a', 'b', 'c'], { jitter: 0.1, random: () => 0 });
    await h.broker.start();
    expect(['a', 'b', 'c'].map((n) => server.hits(n).requests)).toEqual([1, 1, 1]);
    const changedAt = h.broker.state('a')!.lastChangedAt;

    // random() = 0 puts every refresh at the early edge of the jitter window: 9 minutes.
    await vi.advanceTimersByTimeAsync(9 * 60_000 - 1);
    expect(server.hits('a').requests).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await h.settle();
    expect(['a', 'b', 'c'].map((n) => server.hits(n))).toMatchObject([
      { requests: 2, notModified: 1 },
      { requests: 2, notModified: 1 },
      { requests: 2, notModified: 1 },
    ]);
    expect(server.hits('a').headers[0]!['a2a-version']).toBe('1.0');
    const state = h.broker.state('a')!;
    expect(state.lastChangedAt).toBe(changedAt);
    expect(state.lastFetchedAt).toBeGreaterThan(changedAt!);
    expect(state.status).toBe('fresh');
    expect(h.registries.blast.get('a', 's')).toEqual({ radius: 'repo' });
    const refreshed = topics(h.events, 'fleet.card.refreshed').map((e) => e.payload);
    expect(refreshed.filter((p) => (p as { changed: boolean }).changed)).toHaveLength(3);
    expect(refreshed.filter((p) => !(p as { changed: boolean }).changed)).toHaveLength(3);
    h.broker.stop();
  });

  it('replaces declarations as a whole when the card changes', async () => {
    server.set('a', {
      type: 'card',
      card: cardWith('a', { keep: 'repo', gone: 'fleet' }, { domains: { keep: ['ci'] } }),
    });
    const h = await harness(server, ['a']);
    await h.broker.start();
    const firstCard = h.broker.get('a')!.card;
    server.set('a', { type: 'card', card: cardWith('a', { keep: 'repo', added: 'self' }) });
    expect(await h.broker.refresh('a')).toMatchObject({ result: 'changed' });
    expect(h.registries.blast.all().map((e) => [e.skill, e.declaration.radius])).toEqual([
      ['keep', 'repo'],
      ['added', 'self'],
    ]);
    expect(h.registries.blast.get('a', 'gone')).toBeUndefined();
    expect(h.registries.effectDomain.get('a', 'keep')).toBeUndefined();
    expect(h.registries.blast.lookup('a', 'keep').provenance?.cardDigest).toBe(
      h.broker.state('a')!.digest,
    );
    // A new card object makes the fleet client rebuild its SDK client for this agent.
    expect(h.broker.get('a')!.card).not.toBe(firstCard);
    await h.settle();
    const changes = topics(h.events, 'fleet.declaration.changed').map((e) => e.payload);
    expect(changes).toContainEqual(
      expect.objectContaining({ skill: 'gone', before: 'fleet', after: null }),
    );
    expect(changes).toContainEqual(
      expect.objectContaining({ skill: 'keep', before: ['ci'], after: null, narrowed: true }),
    );
    h.broker.stop();
  });

  it('records each failure with a clear reason, keeps the last good card, goes stale after 3, and backs off', async () => {
    const other = await startCardServer();
    const doomed = await startCardServer();
    other.set('x', { type: 'card', card: cardWith('x', { s: 'self' }) });
    const cases: [string, Parameters<CardServer['set']>[1] | 'refused', RegExp][] = [
      ['timeout', { type: 'hang' }, /timed out after 300 ms/],
      // The first attempt may reuse a pooled keep-alive socket the dead server closed.
      [
        'refused',
        'refused',
        /ECONNREFUSED|ECONNRESET socket hang up|UND_ERR_SOCKET other side closed/,
      ],
      ['http500', { type: 'status', status: 500 }, /HTTP 500/],
      ['badjson', { type: 'text', text: '{"name": ' }, /not valid JSON/],
      [
        'huge',
        { type: 'huge', bytes: 50 * 1024 * 1024 },
        new RegExp(`more than the limit of ${LIMITS.cardBytes} bytes`),
      ],
      [
        'redirect',
        { type: 'redirect', location: `${other.urlOf('x')}/.well-known/agent-card.json` },
        /redirect to another origin .* refused/,
      ],
    ];
    for (const [name] of cases)
      server.set(name, { type: 'card', card: cardWith(name, { s: 'repo' }) });
    doomed.set('refused', { type: 'card', card: cardWith('refused', { s: 'repo' }) });
    const h = await harness(
      server,
      cases.map(([n]) => n).filter((n) => n !== 'refused'),
      { timeoutMs: 300 },
    );
    h.directory.add({ name: 'refused', url: doomed.urlOf('refused') });
    await h.broker.start();
    expect(h.broker.states().map((s) => s.status)).toEqual(cases.map(() => 'fresh'));
    await doomed.close(); // the agent goes down: its port now refuses connections
    for (const [name, behaviour] of cases) if (behaviour !== 'refused') server.set(name, behaviour);
    const delays: number[][] = cases.map(() => []);
    for (let round = 1; round <= 3; round += 1) {
      const outcomes = await Promise.all(cases.map(([n]) => h.broker.refresh(n)));
      outcomes.forEach((o, i) => {
        const [name, , reason] = cases[i]!;
        expect(o.result, name).toBe('failed');
        if (o.result === 'failed') expect(o.error.message, name).toMatch(reason);
        const state = h.broker.state(name)!;
        expect(state.failures, name).toBe(round);
        expect(state.status, name).toBe(round < 3 ? 'failed' : 'stale');
        delays[i]!.push(state.nextRefreshAt! - state.lastAttemptAt!);
      });
    }
    for (const [i, [name]] of cases.entries()) {
      expect(h.registries.blast.lookup(name, 's'), name).toEqual(
        expect.objectContaining({ declaration: { radius: 'repo' }, stale: true }),
      );
      expect(delays[i]![1]! > delays[i]![0]! && delays[i]![2]! > delays[i]![1]!, name).toBe(true);
    }
    await h.settle();
    expect(topics(h.events, 'fleet.agent.stale')).toHaveLength(cases.length);
    expect(topics(h.events, 'fleet.card.failed').length).toBeGreaterThanOrEqual(3 * cases.length);
    // Recovery clears the stale mark.
    server.set('http500', { type: 'card', card: cardWith('http500', { s: 'repo' }) });
    expect(await h.broker.refresh('http500')).toMatchObject({ result: 'unchanged' });
    expect(h.registries.blast.lookup('http500', 's').stale).toBe(false);
    h.broker.stop();
    await other.close();
  });

  it('never lets one hanging agent delay the others', async () => {
    server.set('slow', { type: 'hang' });
    for (const n of ['f1', 'f2', 'f3'])
      server.set(n, { type: 'card', card: cardWith(n, { s: 'self' }) });
    const h = await harness(server, ['slow', 'f1', 'f2', 'f3'], {
      timeoutMs: 1500,
      concurrency: 2,
    });
    const order: string[] = [];
    const all = h.broker.refreshAll((o) => order.push(o.agent));
    await all;
    expect(order.at(-1)).toBe('slow');
    expect(order.slice(0, 3).sort()).toEqual(['f1', 'f2', 'f3']);
  });

  it('falls back to the legacy /.well-known/agent.json, and follows a same-origin redirect', async () => {
    server.set('old', { type: 'legacy', card: cardWith('old', { s: 'project' }) });
    server.set('moved', {
      type: 'redirect',
      location: `${server.urlOf('target')}/.well-known/agent-card.json`,
    });
    server.set('target', { type: 'card', card: cardWith('moved', { s: 'fleet' }) });
    const h = await harness(server, ['old', 'moved']);
    await h.broker.start();
    expect(h.registries.blast.get('old', 's')).toEqual({ radius: 'project' });
    expect(h.registries.blast.get('moved', 's')).toEqual({ radius: 'fleet' });
    expect(server.hits('target').requests).toBe(1);
    h.broker.stop();
  });

  it('keeps the valid skills of a card with one invalid entry and surfaces the diagnostic', async () => {
    server.set('a', { type: 'card', card: cardWith('a', { good: 'repo', bad: 'galaxy' }) });
    const h = await harness(server, ['a']);
    await h.broker.start();
    expect(h.registries.blast.get('a', 'good')).toEqual({ radius: 'repo' });
    expect(h.registries.blast.get('a', 'bad')).toBeUndefined();
    expect(h.broker.state('a')!.diagnostics).toEqual([
      expect.objectContaining({
        severity: 'error',
        path: 'capabilities.extensions[0].params.skills.bad.radius',
      }),
    ]);
    h.broker.stop();
  });

  it('clears every declaration of a removed agent', async () => {
    server.set('a', {
      type: 'card',
      card: cardWith(
        'a',
        { s: 'repo' },
        { hitl: { s: { mode: 'gated' } }, domains: { s: ['ci'] } },
      ),
    });
    const h = await harness(server, ['a']);
    await h.broker.start();
    expect(h.registries.hitlMode.get('a', 's')).toEqual({ mode: 'gated' });
    h.directory.remove('a');
    expect(h.registries.blast.all()).toEqual([]);
    expect(h.registries.hitlMode.all()).toEqual([]);
    expect(h.registries.effectDomain.all()).toEqual([]);
    expect(h.broker.get('a')).toBeUndefined();
    expect(h.broker.state('a')).toBeUndefined();
    h.broker.stop();
  });

  it('applies a wider radius at once with an alert, and holds a narrower one until acknowledged, across restarts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-ratchet-'));
    const url = `sqlite:${join(dir, 'fleet.db')}`;
    try {
      server.set('q', {
        type: 'card',
        card: cardWith('q', { s: 'repo' }, { hitl: { s: { mode: 'gated' } } }),
      });
      let store = await openGatewayStore(url);
      let h = await harness(server, ['q'], {
        ratchet: await DeclarationRatchet.open(createStoreRatchetPersistence(store.db)),
      });
      await h.broker.start();
      expect(h.broker.effectiveRadius('q', 's').radius).toBe('repo');

      server.set('q', {
        type: 'card',
        card: cardWith('q', { s: 'public' }, { hitl: { s: { mode: 'gated' } } }),
      });
      await h.broker.refresh('q');
      expect(h.broker.effectiveRadius('q', 's').radius).toBe('public');
      await h.settle();
      const alert = topics(h.events, 'ops.alert.radius_widened')[0]?.payload;
      expect(alert).toMatchObject({
        kind: 'radius_widened',
        agent: 'q',
        skill: 's',
        radius: 'public',
        severity: 'critical',
      });
      expect(topics(h.events, 'fleet.declaration.changed').map((e) => e.payload)).toContainEqual(
        expect.objectContaining({
          skill: 's',
          before: 'repo',
          after: 'public',
          widened: true,
          narrowed: false,
        }),
      );

      server.set('q', {
        type: 'card',
        card: cardWith('q', { s: 'self' }, { hitl: { s: { mode: 'autonomous' } } }),
      });
      await h.broker.refresh('q');
      expect(h.broker.effectiveRadius('q', 's')).toMatchObject({
        radius: 'public',
        declared: 'self',
        pending: 'self',
      });
      expect(h.broker.effectiveHitlMode('q', 's')).toMatchObject({
        mode: 'gated',
        declared: 'autonomous',
        pending: 'autonomous',
      });
      await h.settle();
      expect(topics(h.events, 'fleet.declaration.changed').map((e) => e.payload)).toContainEqual(
        expect.objectContaining({
          skill: 's',
          before: 'public',
          after: 'self',
          widened: false,
          narrowed: true,
        }),
      );
      expect(h.broker.pendingAcknowledgements()).toHaveLength(2);

      // Restart before acknowledging: the narrowing is still held.
      h.broker.stop();
      await store.close();
      store = await openGatewayStore(url);
      h = await harness(server, ['q'], {
        ratchet: await DeclarationRatchet.open(createStoreRatchetPersistence(store.db)),
      });
      await h.broker.start();
      expect(h.broker.effectiveRadius('q', 's').radius).toBe('public');
      expect(h.broker.effectiveHitlMode('q', 's').mode).toBe('gated');

      expect(await h.broker.acknowledge('q', 's', 'alice')).toEqual({
        radius: 'self',
        mode: 'autonomous',
      });
      expect(h.broker.effectiveRadius('q', 's').radius).toBe('self');
      await expect(h.broker.acknowledge('q', 's')).rejects.toMatchObject({
        code: 'FLEETGATE_NOTHING_TO_ACKNOWLEDGE',
      });

      // Restart after acknowledging: the acknowledgement survives.
      h.broker.stop();
      await store.close();
      store = await openGatewayStore(url);
      h = await harness(server, ['q'], {
        ratchet: await DeclarationRatchet.open(createStoreRatchetPersistence(store.db)),
      });
      await h.broker.start();
      expect(h.broker.effectiveRadius('q', 's')).toMatchObject({
        radius: 'self',
        pending: undefined,
      });
      expect(h.broker.effectiveHitlMode('q', 's').mode).toBe('autonomous');
      h.broker.stop();
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('raises a declared radius to the operator floor', async () => {
    server.set('a', { type: 'card', card: cardWith('a', { s: 'self', t: 'fleet' }) });
    const h = await harness(server, []);
    h.directory.add({ name: 'a', url: server.urlOf('a'), floors: { s: 'repo', t: 'repo' } });
    await h.broker.start();
    expect(h.broker.effectiveRadius('a', 's')).toMatchObject({
      radius: 'repo',
      declared: 'self',
      floor: 'repo',
    });
    expect(h.broker.effectiveRadius('a', 't').radius).toBe('fleet');
    // Unknown stays unknown: a floor never turns "no declaration" into a narrower known radius.
    expect(h.broker.effectiveRadius('a', 'none')).toMatchObject({
      radius: undefined,
      floor: undefined,
    });

    h.broker.stop();
  });

  it('raises the effective radius when a learned floor changes, past its lookup cache', async () => {
    server.set('a', { type: 'card', card: cardWith('a', { s: 'self' }) });
    const learned = new Map<string, BlastRadius>();
    const floors = {
      version: 0,
      floor: (agent: string, skill: string) => learned.get(`${agent}/${skill}`),
    };
    const h = await harness(server, ['a'], { floors });
    await h.broker.start();
    expect(h.broker.effectiveRadius('a', 's').radius).toBe('self');
    learned.set('a/s', 'fleet');
    floors.version += 1;
    expect(h.broker.effectiveRadius('a', 's')).toMatchObject({ radius: 'fleet', floor: 'fleet' });
    h.broker.stop();
  });
});

describe('card broker with a card cache', () => {
  it('keeps the last good card across a restart while the agent is down, and gets a 304 when it is back', async () => {
    const server = await startCardServer();
    const dir = mkdtempSync(join(tmpdir(), 'fleetgate-cache-'));
    const url = `sqlite:${join(dir, 'fleet.db')}`;
    try {
      server.set('a', { type: 'card', card: cardWith('a', { s: 'fleet' }) });
      const boot = async (): Promise<{ h: Harness; close: () => Promise<void> }> => {
        const store = await openGatewayStore(url);
        const h = await harness(server, ['a'], {
          ratchet: await DeclarationRatchet.open(createStoreRatchetPersistence(store.db)),
          cache: createStoreCardCache(store.db),
        });
        return { h, close: () => store.close() };
      };
      let run = await boot();
      await run.h.broker.start();
      const digest = run.h.broker.state('a')!.digest;
      run.h.broker.stop();
      await run.close();

      server.set('a', { type: 'status', status: 503 });
      run = await boot();
      expect(await run.h.broker.start()).toMatchObject([{ result: 'failed' }]);
      expect(run.h.registries.blast.lookup('a', 's')).toMatchObject({
        declaration: { radius: 'fleet' },
        stale: false,
        provenance: { cardDigest: digest },
      });
      expect(run.h.broker.get('a')?.card).toMatchObject({ name: 'a' });
      run.h.broker.stop();
      await run.close();

      server.set('a', { type: 'card', card: cardWith('a', { s: 'fleet' }) });
      const before = server.hits('a').notModified;
      run = await boot();
      expect(await run.h.broker.start()).toMatchObject([{ result: 'unchanged', digest }]);
      expect(server.hits('a').notModified).toBe(before + 1);
      run.h.broker.stop();
      await run.close();
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
