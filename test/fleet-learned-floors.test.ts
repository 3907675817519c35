import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../src/service/index.js';
import { createFleetRuntime } from '../src/service/index.js';
import type { CardServer } from './support/card-server.js';
import { cardWith, startCardServer } from './support/card-server.js';

describe('learned floors on the card broker', () => {
  let server: CardServer;
  let dir: string;
  beforeAll(async () => {
    server = await startCardServer();
    server.set('a', { type: 'card', card: cardWith('a', { s: 'self' }) });
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-floors-'));
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies a floor raised by reconciliation at once, and again after a restart', async () => {
    const config = parseConfig({
      store: `sqlite:${join(dir, 'fleet.db')}`,
      agents: [{ name: 'a', url: server.urlOf('a') }],
    });
    let rt = await createFleetRuntime(config, { secrets: () => undefined });
    await rt.broker.start();
    expect(rt.broker.effectiveRadius('a', 's').radius).toBe('self');
    await rt.floorWriter.raiseFloor('a', 's', 'fleet', 'reported a delta in deploy');
    expect(rt.broker.effectiveRadius('a', 's')).toMatchObject({
      radius: 'fleet',
      declared: 'self',
      floor: 'fleet',
    });
    // A narrower learned floor never lowers it.
    await rt.floorWriter.raiseFloor('a', 's', 'repo', 'smaller violation');
    expect(rt.broker.effectiveRadius('a', 's').radius).toBe('fleet');
    await rt.close();

    rt = await createFleetRuntime(config, { secrets: () => undefined });
    await rt.broker.start();
    expect(rt.broker.effectiveRadius('a', 's').radius).toBe('fleet');
    await rt.close();
  });
});
