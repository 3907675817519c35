import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createInMemoryEventBus, type EventBus } from '../src/bus/index.js';
import { createFleetClient } from '../src/dispatch/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import { ExtensionRegistry, registerStandardExtensions } from '../src/extensions/index.js';
import type { CardSource } from '../src/fleet/index.js';
import {
  AgentDirectory,
  BlastRegistry,
  createCardBroker,
  createMemoryRatchetPersistence,
  DeclarationRatchet,
  EffectDomainRegistry,
  HitlModeRegistry,
  HttpCardSource,
  LearnedFloors,
  StaticCardSource,
} from '../src/fleet/index.js';
import { cardWith } from './support/card-server.js';

const registries = () => ({
  blast: new BlastRegistry(),
  hitlMode: new HitlModeRegistry(),
  effectDomain: new EffectDomainRegistry(),
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('card refresher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('keeps refreshing and marks the agent stale when publishing the failure throws, and reports the publish failure', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const card = new StaticCardSource({ a: cardWith('a', { s: 'repo' }) });
    let fetches = 0;
    const source: CardSource = {
      fetch(target, previous) {
        fetches += 1;
        // The first fetch serves the card; every later one fails (the agent went away).
        if (fetches === 1) return card.fetch(target, previous);
        return Promise.reject(new Error('connection refused'));
      },
    };
    const bus: Pick<EventBus, 'publish'> = {
      publish: () => Promise.reject(new Error('bus is down')),
    };
    const errors: { source: string; message: string }[] = [];
    const directory = new AgentDirectory();
    directory.add({ name: 'a', url: 'http://127.0.0.1:9/' });
    const regs = registries();
    const broker = createCardBroker({
      directory,
      source,
      registries: regs,
      ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
      bus,
      onError: (error, context) =>
        errors.push({ source: context.source, message: (error as Error).message }),
      refreshIntervalMs: 1000,
      backoffBaseMs: 100,
      jitter: 0,
      staleAfterFailures: 3,
    });
    expect(await broker.start()).toMatchObject([{ result: 'changed' }]);

    // Failures back off 100, 200, 400, 800, then every 1000 ms: 5 more fetches in 2.5 s.
    await vi.advanceTimersByTimeAsync(2500);
    await broker.whenIdle();
    expect(fetches).toBe(6);
    expect(broker.state('a')).toMatchObject({ status: 'stale', failures: 5 });
    expect(regs.blast.lookup('a', 's')).toMatchObject({ stale: true });
    expect(broker.effectiveRadius('a', 's')).toMatchObject({ stale: true, source: 'unknown' });
    expect(errors.map((e) => e.source)).toContain('publish:fleet.card.failed');
    expect(errors.map((e) => e.source)).toContain('publish:fleet.agent.stale');
    expect(errors.every((e) => e.message === 'bus is down')).toBe(true);
    broker.stop();
  });

  it('keeps refreshing and goes stale when the bus throws synchronously while reporting (default reporter)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const card = new StaticCardSource({ a: cardWith('a', { s: 'repo' }) });
    let fetches = 0;
    const source: CardSource = {
      fetch(target, previous) {
        fetches += 1;
        if (fetches === 1) return card.fetch(target, previous);
        return Promise.reject(new Error('connection refused'));
      },
    };
    const bus: Pick<EventBus, 'publish'> = {
      publish: () => {
        throw new Error('bus is broken');
      },
    };
    const unhandled: unknown[] = [];
    const warnings: string[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    const onWarning = (warning: Error): void => void warnings.push(warning.message);
    process.on('unhandledRejection', onUnhandled);
    process.on('warning', onWarning);
    try {
      const directory = new AgentDirectory();
      directory.add({ name: 'a', url: 'http://127.0.0.1:9/' });
      const regs = registries();
      const broker = createCardBroker({
        directory,
        source,
        registries: regs,
        ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
        bus,
        refreshIntervalMs: 1000,
        backoffBaseMs: 100,
        jitter: 0,
        staleAfterFailures: 3,
      });
      // No onError: the default reporter publishes on system.error, which throws here too.
      expect(await broker.start()).toMatchObject([{ result: 'changed' }]);
      await vi.advanceTimersByTimeAsync(2500);
      await broker.whenIdle();
      vi.useRealTimers();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(fetches).toBe(6);
      expect(broker.state('a')).toMatchObject({ status: 'stale', failures: 5 });
      expect(regs.blast.lookup('a', 's')).toMatchObject({ stale: true });
      expect(unhandled).toEqual([]);
      expect(warnings.some((w) => w.includes('bus is broken'))).toBe(true);
      broker.stop();
    } finally {
      process.off('unhandledRejection', onUnhandled);
      process.off('warning', onWarning);
    }
  });

  it('reports a configured agent whose card never loaded as unavailable, with the last fetch error', async () => {
    const bus = createInMemoryEventBus();
    const directory = new AgentDirectory();
    directory.add({ name: 'down', url: `http://127.0.0.1:${await closedPort()}` });
    const broker = createCardBroker({
      directory,
      source: new HttpCardSource({ timeoutMs: 2000 }),
      registries: registries(),
      ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
      bus,
    });
    expect(await broker.start()).toMatchObject([{ agent: 'down', result: 'failed' }]);
    const lastError = broker.state('down')!.lastError!;
    expect(lastError.code).toBe('FLEETGATE_CARD_FETCH_FAILED');

    const registry = registerStandardExtensions(new ExtensionRegistry(), {
      bus,
      declarations: broker.stamps,
    });
    const fleet = createFleetClient({ registry, bus, cards: broker });
    const error: unknown = await fleet.call('down', 'sitrep', 'go').catch((e: unknown) => e);
    expect(isFleetgateError(error) && error.code).toBe('FLEETGATE_AGENT_UNAVAILABLE');
    expect((error as Error).message).toContain(lastError.message);
    expect((error as { details?: unknown }).details).toMatchObject({
      agent: 'down',
      status: 'failed',
      lastError,
    });
    await expect(fleet.call('nobody', 'sitrep', 'go')).rejects.toMatchObject({
      code: 'FLEETGATE_AGENT_UNKNOWN',
    });
    broker.stop();
    await bus.close();
  });

  it('applies floors to skills named like Object.prototype members', async () => {
    const directory = new AgentDirectory();
    directory.add({ name: 'a', url: 'http://127.0.0.1:9/', floors: { toString: 'repo' } });
    const broker = createCardBroker({
      directory,
      source: new StaticCardSource({
        a: cardWith('a', { constructor: 'self', toString: 'self', hasOwnProperty: 'self' }),
      }),
      registries: registries(),
      ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
      floors: LearnedFloors.from([{ agent: 'a', skill: 'constructor', radius: 'fleet' }]),
    });
    await broker.start();
    expect(broker.effectiveRadius('a', 'constructor')).toMatchObject({
      radius: 'fleet',
      declared: 'self',
      floor: 'fleet',
      floorSource: 'learned',
      source: 'learned-floor',
    });
    expect(broker.effectiveRadius('a', 'toString')).toMatchObject({
      radius: 'repo',
      floorSource: 'operator',
      source: 'operator-floor',
    });
    expect(broker.effectiveRadius('a', 'hasOwnProperty')).toMatchObject({
      radius: 'self',
      floor: undefined,
      source: 'declared',
    });
    broker.stop();
  });

  it('applies operator floors from a configuration file to every skill name, __proto__ included', async () => {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'];
    // As a YAML file reads: `__proto__` is an own key of the parsed object.
    const config = parseYaml(
      `agents:\n  - name: a\n    url: http://127.0.0.1:9/\n    floors:\n` +
        names.map((n) => `      ${n}: fleet\n`).join(''),
    ) as { agents: unknown[] };
    const directory = new AgentDirectory();
    directory.load(config.agents);
    expect([...directory.get('a')!.floors.keys()]).toEqual(names);
    const broker = createCardBroker({
      directory,
      source: new StaticCardSource({
        a: cardWith('a', Object.fromEntries(names.map((n) => [n, 'self']))),
      }),
      registries: registries(),
      ratchet: await DeclarationRatchet.open(createMemoryRatchetPersistence()),
    });
    await broker.start();
    for (const name of names) {
      expect(broker.effectiveRadius('a', name), name).toMatchObject({
        radius: 'fleet',
        declared: 'self',
        floor: 'fleet',
        source: 'operator-floor',
      });
    }
    // A skill nobody named has no floor, whatever Object.prototype holds.
    expect(broker.floor('a', 'isPrototypeOf')).toBeUndefined();
    broker.stop();
  });
});
