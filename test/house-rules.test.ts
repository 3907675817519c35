/**
 * The house rules are enforced by the linter (eslint.config.js); this proves the rules still
 * fire, so they cannot rot into a configuration that allows everything — and that they are what
 * the imports draw: every room is listed in house-rules.json with exactly the rooms it imports,
 * no file imports a file that imports it back, and docs/architecture.md's table of rooms is the
 * one written from house-rules.json (`npm run docs:house`, FLEETGATE_WRITE_DOCS=1, rewrites it).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { format, resolveConfig } from 'prettier';
import { afterAll, describe, expect, it } from 'vitest';
import { fileCircles, readHouse } from './support/house-graph.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const probes: string[] = [];

/** Lints `code` as if it were the file `path` (relative to the repository root). */
async function lintAs(path: string, code: string): Promise<string[]> {
  const file = `${ROOT}${path}`;
  // The file must exist: the type-aware rules ask the TypeScript project service for it.
  writeFileSync(file, code);
  probes.push(file);
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintFiles([file]);
  return (result?.messages ?? [])
    .filter((m) =>
      ['no-restricted-imports', 'no-restricted-properties', 'max-lines-per-function'].includes(
        m.ruleId ?? '',
      ),
    )
    .map((m) => m.message);
}

afterAll(() => {
  for (const file of probes) rmSync(file, { force: true });
});

describe('house rules (lint)', () => {
  it('refuses a world module that enters bus past its door, and bus at all', async () => {
    const messages = await lintAs(
      'src/world/house-rules-probe.ts',
      "export { InMemoryEventBus } from '../bus/in-memory-bus.js';\n",
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.stringContaining('only through its index.ts'),
        expect.stringContaining('src/world may import only protocol'),
      ]),
    );
  }, 60_000);

  it('refuses protocol importing the rest, store importing a domain, fleet importing alerts', async () => {
    const protocol = await lintAs(
      'src/protocol/house-rules-probe.ts',
      "export type { EventBus } from '../bus/index.js';\n",
    );
    expect(protocol).toEqual([expect.stringContaining('src/protocol imports nothing')]);
    const store = await lintAs(
      'src/store/house-rules-probe.ts',
      "export type { FleetDatabase } from '../fleet/index.js';\n",
    );
    expect(store).toEqual([expect.stringContaining('src/store may import only protocol')]);
    const fleet = await lintAs(
      'src/fleet/house-rules-probe.ts',
      "export { scaleSeverity } from '../alerts/index.js';\n",
    );
    expect(fleet).toEqual([
      expect.stringContaining('src/fleet may import only bus, net, protocol, store (house'),
    ]);
    const dispatch = await lintAs(
      'src/dispatch/house-rules-probe.ts',
      "export type { TaskTracker } from '../tasks/index.js';\n",
    );
    expect(dispatch).toEqual([expect.stringContaining('src/dispatch may import only')]);
  }, 60_000);

  it('refuses process.env outside service and cli, and tests skipping a door', async () => {
    const env = await lintAs(
      'src/bus/house-rules-probe.ts',
      'export const url = process.env.FLEETGATE_NATS_URL;\n',
    );
    expect(env).toEqual([expect.stringContaining('Only src/service and src/cli read')]);
    const test = await lintAs(
      'test/house-rules-probe.ts',
      "export { BlastRegistry } from '../src/fleet/blast-registry.js';\n",
    );
    expect(test).toEqual([expect.stringContaining('through their index.ts')]);
  }, 60_000);

  it('keeps the calls room pure: protocol only, and its functions short', async () => {
    const room = await lintAs(
      'src/calls/house-rules-probe.ts',
      "export type { DispatchRecord } from '../dispatch/index.js';\n",
    );
    expect(room).toEqual([expect.stringContaining('src/calls may import only protocol (house')]);
    const long = await lintAs(
      'src/calls/house-rules-probe-long.ts',
      `export function long(): number {\n  let n = 0;\n${'  n += 1;\n'.repeat(125)}  return n;\n}\n`,
    );
    expect(long).toEqual([expect.stringContaining('has too many lines')]);
    const allowed = await lintAs(
      'src/calls/house-rules-probe-door.ts',
      "export type { TaskStateName } from '../protocol/index.js';\n",
    );
    expect(allowed).toEqual([]);
  }, 60_000);

  it('keeps the agent kit to protocol and the A2A SDK server', async () => {
    const room = await lintAs(
      'src/agent/house-rules-probe.ts',
      "export type { CardBroker } from '../fleet/index.js';\n",
    );
    expect(room).toEqual([expect.stringContaining('src/agent may import only protocol (house')]);
    const client = await lintAs(
      'src/agent/house-rules-probe-client.ts',
      "export { ClientFactory } from '@a2a-js/sdk/client';\n",
    );
    expect(client).toEqual([
      expect.stringContaining('may import only protocol, @a2a-js/sdk, @a2a-js/sdk/server and Node'),
    ]);
    const allowed = await lintAs(
      'src/agent/house-rules-probe-door.ts',
      [
        "export { randomUUID } from 'node:crypto';",
        "export { AgentEvent } from '@a2a-js/sdk/server';",
        "export { TaskState } from '@a2a-js/sdk';",
        "export { STAMPS } from '../protocol/index.js';",
        '',
      ].join('\n'),
    );
    expect(allowed).toEqual([]);
  }, 60_000);

  it('keeps net to Node built-ins, and lets dispatch and fleet in through its door', async () => {
    const room = await lintAs(
      'src/net/house-rules-probe.ts',
      "export { FleetgateError } from '../protocol/index.js';\n",
    );
    expect(room).toEqual([expect.stringContaining('src/net imports nothing from the rest')]);
    const pkg = await lintAs(
      'src/net/house-rules-probe-package.ts',
      "export { ClientFactory } from '@a2a-js/sdk/client';\n",
    );
    expect(pkg).toEqual([expect.stringContaining('src/net may import only Node built-ins')]);
    const past = await lintAs(
      'src/fleet/house-rules-probe-net.ts',
      "export { exchange } from '../net/exchange.js';\n",
    );
    expect(past).toEqual([expect.stringContaining('only through its index.ts')]);
    for (const room of ['dispatch', 'fleet']) {
      const door = await lintAs(
        `src/${room}/house-rules-probe-net-door.ts`,
        "export { exchange } from '../net/index.js';\n",
      );
      expect(door, room).toEqual([]);
    }
  }, 60_000);

  it('keeps every function of src/ to 120 lines, in any room', async () => {
    for (const room of ['world', 'service']) {
      const long = await lintAs(
        `src/${room}/house-rules-probe-long.ts`,
        `export function long(): number {\n  let n = 0;\n${'  n += 1;\n'.repeat(125)}  return n;\n}\n`,
      );
      expect(long, room).toEqual([expect.stringContaining('has too many lines')]);
    }
  }, 60_000);

  it('lets a folder in through its door', async () => {
    const messages = await lintAs(
      'src/world/house-rules-probe-door.ts',
      "export type { EventEnvelope } from '../protocol/index.js';\n",
    );
    expect(messages).toEqual([]);
  }, 60_000);
});

interface HouseRules {
  rooms: Record<string, { imports: string[]; why: string }>;
}

const HOUSE_DOC = fileURLToPath(new URL('../docs/architecture.md', import.meta.url));
const BEGIN = '<!-- rooms:begin (generated from house-rules.json: npm run docs:house) -->';
const END = '<!-- rooms:end -->';

function houseRules(): HouseRules {
  return JSON.parse(readFileSync(`${ROOT}house-rules.json`, 'utf8')) as HouseRules;
}

/** The table of rooms: each with the rooms it may import (what its files import) and why. */
function roomTable(rules: HouseRules): string {
  const rows = Object.entries(rules.rooms).map(
    ([room, rule]) =>
      `| \`${room}\` | ${rule.imports.length === 0 ? '—' : rule.imports.map((r) => `\`${r}\``).join(', ')} | ${rule.why} |`,
  );
  return ['| room | imports | why |', '| --- | --- | --- |', ...rows].join('\n');
}

describe('house rules (the imports as they are)', () => {
  const house = readHouse(ROOT);

  it('lists every room with exactly the rooms its files import', () => {
    const rules = houseRules();
    const rooms = [...house.rooms.keys()].filter((room) => !room.startsWith('src/'));
    expect(Object.keys(rules.rooms).sort()).toEqual(rooms.sort());
    for (const room of rooms) {
      expect([...house.rooms.get(room)!].sort(), `the rooms src/${room} imports`).toEqual(
        [...rules.rooms[room]!.imports].sort(),
      );
    }
  });

  it('has no import circle between files', () => {
    expect(fileCircles(house)).toEqual([]);
  });

  it('finds a circle when there is one (the check can fail)', () => {
    const files = new Map([
      ['src/a/x.ts', new Set(['src/a/y.ts'])],
      ['src/a/y.ts', new Set(['src/a/z.ts'])],
      ['src/a/z.ts', new Set(['src/a/x.ts'])],
      ['src/a/w.ts', new Set(['src/a/x.ts'])],
    ]);
    expect(fileCircles({ files, rooms: new Map() })).toEqual([
      ['src/a/x.ts', 'src/a/y.ts', 'src/a/z.ts'],
    ]);
  });

  it("writes docs/architecture.md's table of rooms from house-rules.json", async () => {
    const doc = readFileSync(HOUSE_DOC, 'utf8');
    const begin = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect(begin, `docs/architecture.md needs the line ${BEGIN}`).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(begin);
    const written = await format(
      `${doc.slice(0, begin + BEGIN.length)}\n\n${roomTable(houseRules())}\n\n${doc.slice(end)}`,
      { ...(await resolveConfig(HOUSE_DOC)), filepath: HOUSE_DOC },
    );
    if (process.env.FLEETGATE_WRITE_DOCS === '1') {
      writeFileSync(HOUSE_DOC, written);
      return;
    }
    expect(doc, 'docs/architecture.md is behind house-rules.json: npm run docs:house').toBe(
      written,
    );
  });
});
