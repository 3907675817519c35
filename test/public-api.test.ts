/**
 * The package's doors are a contract: the names each export is checked in, so a change to the
 * public API is a deliberate edit of `test/fixtures/public-api.json`, never an accident.
 * `FLEETGATE_ACCEPT_API=1 npx vitest run test/public-api.test.ts` rewrites the file.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const FILE = new URL('./fixtures/public-api.json', import.meta.url);

const DOORS: Record<string, () => Promise<Record<string, unknown>>> = {
  fleetgate: () => import('../src/index.js'),
  'fleetgate/gateway': () => import('../src/service/index.js'),
  'fleetgate/protocol': () => import('../src/protocol/index.js'),
  'fleetgate/store': () => import('../src/store/index.js'),
  'fleetgate/nats': () => import('../src/nats.js'),
  'fleetgate/agent': () => import('../src/agent/index.js'),
};

async function currentApi(): Promise<Record<string, string[]>> {
  const api: Record<string, string[]> = {};
  for (const [door, load] of Object.entries(DOORS)) api[door] = Object.keys(await load()).sort();
  return api;
}

describe('public API', () => {
  it('exports exactly the names checked in for every door', async () => {
    const api = await currentApi();
    if (process.env.FLEETGATE_ACCEPT_API === '1') {
      writeFileSync(FILE, `${JSON.stringify(api, null, 2)}\n`);
    }
    const expected = JSON.parse(readFileSync(FILE, 'utf8')) as Record<string, string[]>;
    expect(api).toEqual(expected);
  });

  it('keeps the root door narrow', async () => {
    const api = await currentApi();
    expect(api.fleetgate!.length).toBeLessThanOrEqual(40);
  });

  it('lists every door in package.json exports', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    const subpaths = Object.keys(pkg.exports).filter((k) => k !== './package.json');
    expect(
      subpaths.map((k) => (k === '.' ? 'fleetgate' : `fleetgate/${k.slice(2)}`)).sort(),
    ).toEqual(Object.keys(DOORS).sort());
  });
});
