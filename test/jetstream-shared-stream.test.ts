/**
 * Two gateway groups on one JetStream stream: a replica configured with the same `stream` but
 * another `prefix` must not rewrite the stream's subjects under the replicas already running on
 * it; it is refused before anything is changed, and a `fleetgate start` that fails that way (or any
 * other way once the bus is open) exits 2 instead of hanging on its open NATS connection.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OpenTopics } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { CLI_RUN_MS, cliTestTimeout, runCli } from './support/cli.js';
import { Collector } from './support/event-bus-contract.js';
import { NATS_URL, deleteNatsStream, requireNats, uniqueName } from './support/services.js';

const natsUp = await requireNats();

describe.skipIf(!natsUp)('JetStream stream shared by gateway groups', () => {
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  let dir = '';
  const streams: string[] = [];
  const buses: JetStreamEventBus<OpenTopics>[] = [];

  beforeAll(async () => {
    admin = await connect({ servers: NATS_URL });
    jsm = await jetstreamManager(admin);
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-shared-stream-'));
  });
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await Promise.all(streams.splice(0).map((s) => deleteNatsStream(s)));
  });
  afterAll(async () => {
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A stream the first group runs on: `<prefix>.>` and `<prefix>_dlq.>`. */
  async function firstGroup(): Promise<{ stream: string; prefix: string }> {
    const stream = uniqueName('FGSHARED').toUpperCase();
    const prefix = uniqueName('fgsh');
    streams.push(stream);
    buses.push(
      await createJetStreamEventBus<OpenTopics>({
        servers: NATS_URL,
        stream,
        subjectPrefix: prefix,
      }),
    );
    return { stream, prefix };
  }

  function startConfig(name: string, bus: string): string {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(
      file,
      [
        `store: sqlite:${join(dir, `${name}.db`)}`,
        `bus: ${bus}`,
        'listen: { host: 127.0.0.1, port: 0 }',
        '',
      ].join('\n'),
    );
    return file;
  }

  it('refuses another prefix on an existing stream before changing it, naming stream, subjects and prefix', async () => {
    const { stream, prefix } = await firstGroup();
    const other = uniqueName('fgother');
    const refused = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: other,
    }).then(
      (bus) => {
        buses.push(bus);
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(isFleetgateError(refused) && refused.code).toBe('FLEETGATE_BUS_CONNECT_FAILED');
    const message = (refused as Error).message;
    expect(message).toContain(stream);
    expect(message).toContain(`${prefix}.>`);
    expect(message).toContain(`${prefix}_dlq.>`);
    expect(message).toContain(other);
    expect((refused as { details?: unknown }).details).toMatchObject({
      stream,
      subjects: [`${prefix}.>`, `${prefix}_dlq.>`],
      subjectPrefix: other,
    });

    // The stream is as the first group left it, and that group still publishes and receives.
    expect((await jsm.streams.info(stream)).config.subjects).toEqual([
      `${prefix}.>`,
      `${prefix}_dlq.>`,
    ]);
    const running = buses[0]!;
    const got = new Collector();
    await running.subscribe('shared.>', got.push, { name: 'still-running' });
    await running.publish('shared.ping', { ok: true }, { id: 'after-refusal' });
    expect((await got.until(1)).map((e) => e.id)).toEqual(['after-refusal']);
  });

  it('accepts the same prefix again and keeps the stream subjects', async () => {
    const { stream, prefix } = await firstGroup();
    buses.push(
      await createJetStreamEventBus<OpenTopics>({
        servers: NATS_URL,
        stream,
        subjectPrefix: prefix,
      }),
    );
    expect((await jsm.streams.info(stream)).config.subjects).toEqual([
      `${prefix}.>`,
      `${prefix}_dlq.>`,
    ]);
  });

  it(
    "exits 2 when started with another prefix on a running group's stream, leaving the stream as it was",
    async () => {
      const { stream, prefix } = await firstGroup();
      // As the running replicas left it: the materialiser's durable consumer on their prefix.
      await jsm.consumers.add(stream, {
        durable_name: 'world-materialiser',
        ack_policy: AckPolicy.Explicit,
        filter_subject: `${prefix}.world.state.delta`,
      });
      const other = uniqueName('fgother');
      const run = await runCli(
        ['start', '--config', startConfig('other', `${NATS_URL}?stream=${stream}&prefix=${other}`)],
        {},
        { timeoutMs: CLI_RUN_MS },
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('FLEETGATE_BUS_CONNECT_FAILED');
      expect(run.stderr).toContain(stream);
      expect((await jsm.streams.info(stream)).config.subjects).toEqual([
        `${prefix}.>`,
        `${prefix}_dlq.>`,
      ]);
    },
    cliTestTimeout(1),
  );

  it(
    'exits 2 when the start fails after the bus is open (a durable subscription on another filter)',
    async () => {
      const { stream, prefix } = await firstGroup();
      await jsm.consumers.add(stream, {
        durable_name: 'world-materialiser',
        ack_policy: AckPolicy.Explicit,
        filter_subject: `${prefix}.world.elsewhere`,
      });
      const run = await runCli(
        ['start', '--config', startConfig('same', `${NATS_URL}?stream=${stream}&prefix=${prefix}`)],
        {},
        { timeoutMs: CLI_RUN_MS },
      );
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('FLEETGATE_BUS_SUBSCRIPTION_INVALID');
    },
    cliTestTimeout(1),
  );
});
