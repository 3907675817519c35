import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
});
