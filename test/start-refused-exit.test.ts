/**
 * A `fleetgate start` refused while its bus opens, on a PostgreSQL store, exits 2 as soon as it
 * printed why: the store it had opened first is closed again (its pool kept the process alive for
 * the pool's idle timeout, about ten seconds, before exiting).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { CLI_RUN_MS, cliTestTimeout } from './support/cli.js';
import { freePort } from './support/private-servers.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import { startOutcome } from './support/start-outcome.js';

const pgUp = await requirePostgres();
const natsUp = await requireNats();

/** Longest a refused start may stay after printing its error (it stayed ~9.5 s). */
const PROMPT_EXIT_MS = 2_500;

describe.skipIf(!pgUp)('a start refused while the bus opens, on PostgreSQL', () => {
  let dir = '';
  const schemas: string[] = [];
  const streams: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-start-refused-'));
  });
  afterAll(async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    for (const schema of schemas) await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
    await Promise.all(streams.map((s) => deleteNatsStream(s)));
    rmSync(dir, { recursive: true, force: true });
  });

  /** A configuration on a schema of its own of the test database, with `bus`. */
  function configOn(bus: string): string {
    const schema = uniqueName('fg_refused');
    schemas.push(schema);
    const file = join(dir, `${schema}.yaml`);
    writeFileSync(
      file,
      [
        `store: ${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`,
        `bus: ${bus}`,
        'listen: { host: 127.0.0.1, port: 0 }',
        '',
      ].join('\n'),
    );
    return file;
  }

  it(
    'exits 2 within moments of saying NATS cannot be reached',
    async () => {
      const port = await freePort(); // nothing listens there
      const run = await startOutcome(['--config', configOn(`nats://127.0.0.1:${port}`)], {
        timeoutMs: CLI_RUN_MS,
      });
      expect(run.listened).toBe(false);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(
        new RegExp(
          `^FLEETGATE_BUS_CONNECT_FAILED: Could not connect to NATS at nats://127\\.0\\.0\\.1:${port}`,
          'm',
        ),
      );
      expect(run.lingerMs).toBeLessThan(PROMPT_EXIT_MS);
    },
    cliTestTimeout(1),
  );

  it.skipIf(!natsUp)(
    "exits 2 within moments of refusing another prefix on a running group's stream",
    async () => {
      const stream = uniqueName('FGREFUSED').toUpperCase();
      const prefix = uniqueName('fgref');
      streams.push(stream);
      const running: JetStreamEventBus = await createJetStreamEventBus({
        servers: NATS_URL,
        stream,
        subjectPrefix: prefix,
      });
      try {
        const other = uniqueName('fgother');
        const run = await startOutcome(
          ['--config', configOn(`${NATS_URL}?stream=${stream}&prefix=${other}`)],
          { timeoutMs: CLI_RUN_MS },
        );
        expect(run.listened).toBe(false);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(
          new RegExp(
            `^FLEETGATE_BUS_CONNECT_FAILED: JetStream stream ${stream} holds subjects`,
            'm',
          ),
        );
        expect(run.lingerMs).toBeLessThan(PROMPT_EXIT_MS);
      } finally {
        await running.close();
      }
    },
    cliTestTimeout(1),
  );
});
