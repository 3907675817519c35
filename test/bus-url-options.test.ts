/**
 * The query options of a `bus: nats://…` URL, as an operator meets them: `config check` and
 * `start` refuse one they do not know, or a stream or prefix the bus would refuse, naming the
 * option and the rule (before: `config check` said valid and `start` ran on the shared default
 * stream, or failed after connecting with an unrelated fix); `tail --nats URL` reads the stream
 * and prefix the URL names, as the gateway does. The CLI in child processes, a real NATS server.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope, OpenTopics } from '../src/protocol/index.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { cliTestTimeout, runCli, type CliRun } from './support/cli.js';
import { deleteNatsStream, NATS_URL, requireNats, uniqueName } from './support/services.js';

const natsUp = await requireNats();

/** A loopback port nothing listens on: a gateway that tried to connect there would fail. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('bus URL options in config check and start', () => {
  let dir: string;
  let nowhere: string;

  /** Writes a configuration with this bus (and an SQLite store of its own). */
  function configWith(bus: string): string {
    const file = join(dir, `${uniqueName('c')}.yaml`);
    const store = `sqlite:${join(dir, `${uniqueName('s')}.db`)}`;
    writeFileSync(file, `listen: { port: 0 }\nstore: ${store}\nbus: ${bus}\n`);
    return file;
  }

  /** `config check` and `start` on one file, side by side. */
  async function checkAndStart(file: string): Promise<{ check: CliRun; start: CliRun }> {
    const [check, start] = await Promise.all([
      runCli(['config', 'check', file]),
      runCli(['start', '--config', file], {}, { timeoutMs: 30_000 }),
    ]);
    return { check, start };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-bus-url-'));
    nowhere = `nats://127.0.0.1:${await closedPort()}`;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'refuse an option they do not know, naming it, the one meant and the ones accepted',
    async () => {
      const file = configWith(`${nowhere}?streem=X&prefx=y`);
      const { check, start } = await checkAndStart(file);
      const named = [
        `${file}:3:6 bus: unknown query option "streem"; did you mean "stream"? (allowed: stream, prefix)`,
        `${file}:3:6 bus: unknown query option "prefx"; did you mean "prefix"? (allowed: stream, prefix)`,
      ];
      expect(check.code).toBe(1);
      expect(check.stderr).toMatch(/^FLEETGATE_CONFIG_INVALID: /);
      expect(start.code).toBe(2);
      expect(start.stderr).toMatch(/^FLEETGATE_CONFIG_INVALID: /);
      for (const line of named) {
        expect(check.stderr).toContain(line);
        expect(start.stderr).toContain(line);
      }
      expect(start.stdout).not.toContain('listening on');
    },
    cliTestTimeout(1),
  );

  it(
    'refuse a stream name with a dot and a prefix of two subject tokens, naming the field and the rule',
    async () => {
      for (const [query, line] of [
        [
          'stream=dw.bad',
          'bus: ?stream= must be a JetStream stream name: 1 to 255 letters, digits, _ and - (no ., *, >, whitespace or path separators) (got "dw.bad")',
        ],
        [
          'prefix=dw.x',
          'bus: ?prefix= must be one subject token, events being sent as <prefix>.<topic>: letters, digits, _ and - (no ., *, > or whitespace) (got "dw.x")',
        ],
      ] as const) {
        const file = configWith(`${nowhere}?${query}`);
        const { check, start } = await checkAndStart(file);
        expect(check.code).toBe(1);
        // One problem, this one (the file is otherwise valid).
        expect(check.stderr.split('\n')[0]).toBe(`FLEETGATE_CONFIG_INVALID: ${file}:3:6 ${line}`);
        // Refused by the file's check, not by a bus that failed to connect.
        expect(start.code).toBe(2);
        expect(start.stderr.split('\n')[0]).toBe(`FLEETGATE_CONFIG_INVALID: ${file}:3:6 ${line}`);
      }
    },
    cliTestTimeout(2),
  );
});

describe.skipIf(!natsUp)('fleetgate tail --nats URL?stream=&prefix=', () => {
  const prefix = uniqueName('fgtailurl');
  const stream = prefix.toUpperCase();
  let published: string;

  beforeAll(async () => {
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: prefix,
    });
    try {
      published = (await bus.publish('fleet.agent.stale', { agent: 'ava' })).id;
    } finally {
      await bus.close();
    }
  });
  afterAll(() => deleteNatsStream(stream));

  it(
    "reads the stream and prefix the URL names, as a gateway's bus: URL is written",
    async () => {
      const url = `${NATS_URL}?stream=${stream}&prefix=${prefix}`;
      const [byFlag, byEnv] = await Promise.all([
        runCli(
          ['tail', '--nats', url, '--from', 'all', '--count', '1', '--json'],
          {},
          {
            timeoutMs: 30_000,
          },
        ),
        runCli(
          ['tail', '--from', 'all', '--count', '1', '--json'],
          { FLEETGATE_NATS_URL: url },
          {
            timeoutMs: 30_000,
          },
        ),
      ]);
      for (const run of [byFlag, byEnv]) {
        expect(run.stderr).toMatch(/^tailing > /);
        expect(run.code).toBe(0);
        const event = JSON.parse(run.stdout) as EventEnvelope;
        expect([event.topic, event.id]).toEqual(['fleet.agent.stale', published]);
      }
    },
    cliTestTimeout(1),
  );

  it(
    'refuses an option it does not know, and flags that disagree with the URL',
    async () => {
      const [unknown, disagree] = await Promise.all([
        runCli(['tail', '--nats', `${NATS_URL}?streem=${stream}`, '--count', '1']),
        runCli(['tail', '--nats', `${NATS_URL}?stream=${stream}`, '--stream', 'OTHER']),
      ]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain(
        `FLEETGATE_USAGE: --nats: Bus URL ${NATS_URL}?streem=${stream}: unknown query option "streem"; did you mean "stream"? (allowed: stream, prefix)`,
      );
      expect(disagree.code).toBe(2);
      expect(disagree.stderr).toContain(
        `FLEETGATE_USAGE: --stream OTHER and ?stream=${stream} of --nats disagree`,
      );
    },
    cliTestTimeout(1),
  );
});
