/**
 * One JetStream stream, one deployment. Gateways on different stores (two PostgreSQL schemas) but
 * one bus URL would share the stream's durable consumers (each world getting part of the deltas)
 * and see each other's events; the stream records the deployment that owns it (the id its store
 * keeps) and a gateway of another deployment is refused before it touches the stream. Replicas of
 * one deployment share stream and consumers as before, and a stream an earlier release left
 * without an owner is adopted by the first deployment that starts on it, its consumers' positions
 * kept (nothing replayed, nothing lost).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConsumerInfo, JetStreamManager } from '@nats-io/jetstream';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OpenTopics } from '../src/protocol/index.js';
import { isFleetgateError } from '../src/protocol/index.js';
import type { JetStreamEventBus } from '../src/nats.js';
import { createJetStreamEventBus } from '../src/nats.js';
import { CLI_RUN_MS, cliTestTimeout } from './support/cli.js';
import { api, eventually, startServiceProcess } from './support/gateway-service.js';
import type { ServiceProcess } from './support/gateway-service.js';
import {
  NATS_URL,
  PG_URL,
  deleteNatsStream,
  requireNats,
  requirePostgres,
  uniqueName,
} from './support/services.js';
import { startOutcome } from './support/start-outcome.js';

const natsUp = await requireNats();
const pgUp = await requirePostgres();

/** Longest a refused start may stay after printing its error. */
const PROMPT_EXIT_MS = 2_500;

describe.skipIf(!natsUp || !pgUp)('one JetStream stream per deployment', () => {
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  let db: pg.Client;
  let dir = '';
  const schemas: string[] = [];
  const streams: string[] = [];
  const gateways: ServiceProcess[] = [];
  const buses: JetStreamEventBus<OpenTopics>[] = [];

  beforeAll(async () => {
    admin = await connect({ servers: NATS_URL });
    jsm = await jetstreamManager(admin);
    db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
    dir = mkdtempSync(join(tmpdir(), 'fleetgate-deployment-'));
  });
  afterEach(async () => {
    await Promise.all(gateways.splice(0).map((g) => g.stop()));
    await Promise.all(buses.splice(0).map((b) => b.close()));
    await Promise.all(streams.splice(0).map((s) => deleteNatsStream(s)));
  });
  afterAll(async () => {
    for (const schema of schemas) await db.query(`drop schema if exists ${schema} cascade`);
    await db.end();
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A private stream name and subject prefix, unique to this run. */
  function privateBus(): { stream: string; prefix: string; url: string } {
    const prefix = uniqueName('fgdep');
    const stream = prefix.toUpperCase();
    streams.push(stream);
    return { stream, prefix, url: `${NATS_URL}?stream=${stream}&prefix=${prefix}` };
  }

  /** A schema of the test database, dropped after the suite. */
  function newSchema(): string {
    const schema = uniqueName('fg_dep');
    schemas.push(schema);
    return schema;
  }

  /** A configuration file: the store in `schema`, the bus at `bus`. */
  function configFor(schema: string, bus: string): string {
    const file = join(dir, `${uniqueName('cfg')}.yaml`);
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

  async function start(schema: string, bus: string): Promise<ServiceProcess> {
    const gateway = await startServiceProcess({
      args: ['--config', configFor(schema, bus)],
      timeoutMs: CLI_RUN_MS,
    });
    gateways.push(gateway);
    return gateway;
  }

  /** The deployment id the store in `schema` keeps. */
  async function deploymentOf(schema: string): Promise<string> {
    const rows = await db.query<{ value: string }>(
      `select value from ${schema}.fleetgate_service_meta where name = 'deployment'`,
    );
    expect(rows.rows).toHaveLength(1);
    return rows.rows[0]!.value;
  }

  /** Each durable consumer of the stream by name: when it was made, and where it is. */
  async function consumersOf(
    stream: string,
  ): Promise<Record<string, Pick<ConsumerInfo, 'created'> & { acked: number }>> {
    const out: Record<string, Pick<ConsumerInfo, 'created'> & { acked: number }> = {};
    for await (const info of jsm.consumers.list(stream)) {
      // Live views' ordered consumers are ephemeral: one per replica and view, by design.
      if (info.config.durable_name === undefined) continue;
      out[info.name] = { created: info.created, acked: info.ack_floor.stream_seq };
    }
    return out;
  }

  /** A bus of no deployment on the stream, as library code or an earlier release opens it. */
  async function plainBus(stream: string, prefix: string): Promise<JetStreamEventBus<OpenTopics>> {
    const bus = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream,
      subjectPrefix: prefix,
    });
    buses.push(bus);
    return bus;
  }

  async function publishDelta(bus: JetStreamEventBus<OpenTopics>, domain: string): Promise<void> {
    const taskId = uniqueName('task');
    await bus.publish(
      'world.state.delta',
      {
        source: 'quinn',
        skill: 'pr_review',
        taskId,
        correlationId: `corr-${taskId}`,
        deltas: [{ domain, path: 'seen', op: 'set', value: true }],
      },
      { id: `delta-${taskId}` },
    );
  }

  it(
    "refuses a gateway on another store, on a running deployment's stream, before touching it",
    async () => {
      const bus = privateBus();
      const first = newSchema();
      const running = await start(first, bus.url);
      const before = await jsm.streams.info(bus.stream);
      const consumers = await consumersOf(bus.stream);
      expect(Object.keys(consumers)).toContain('world-materialiser');

      const second = newSchema();
      const run = await startOutcome(['--config', configFor(second, bus.url)], {
        timeoutMs: CLI_RUN_MS,
      });
      expect(run.listened, `it started:\n${run.stdout}`).toBe(false);
      expect(run.code).toBe(2);
      const owner = await deploymentOf(first);
      const other = await deploymentOf(second);
      expect(other).not.toBe(owner);
      expect(before.config.description).toBe(`Fleetgate deployment ${owner}`);
      const line = /^FLEETGATE_BUS_DEPLOYMENT_MISMATCH: .*$/m.exec(run.stderr)?.[0] ?? run.stderr;
      expect(line).toContain(`JetStream stream ${bus.stream}`);
      expect(line).toContain(`belongs to deployment ${owner}`);
      expect(line).toContain(`schema=${second} belongs to deployment ${other}`);
      expect(line).toContain('stream and prefix of its own');
      expect(line).toContain("point it at that deployment's store");
      expect(run.lingerMs).toBeLessThan(PROMPT_EXIT_MS);

      // The stream and its consumers are as the running deployment left them, and it still runs.
      const after = await jsm.streams.info(bus.stream);
      expect(after.config).toEqual(before.config);
      expect(await consumersOf(bus.stream)).toEqual(consumers);
      expect((await api(running.url, '/readyz')).status).toBe(200);
    },
    cliTestTimeout(2),
  );

  it(
    'starts two replicas of one deployment on its stream, sharing its consumers',
    async () => {
      const bus = privateBus();
      const schema = newSchema();
      const [one, two] = await Promise.all([start(schema, bus.url), start(schema, bus.url)]);
      const deployment = await deploymentOf(schema);
      const info = await jsm.streams.info(bus.stream);
      expect(info.config.description).toBe(`Fleetgate deployment ${deployment}`);
      expect(info.config.subjects).toEqual([`${bus.prefix}.>`, `${bus.prefix}_dlq.>`]);
      const consumers = await consumersOf(bus.stream);
      expect(Object.keys(consumers)).toContain('world-materialiser');

      // A replica started later joins the same durable consumers: it makes none of its own.
      const three = await start(schema, bus.url);
      expect(Object.keys(await consumersOf(bus.stream)).sort()).toEqual(
        Object.keys(consumers).sort(),
      );
      for (const gateway of [one, two, three]) {
        expect((await api(gateway.url, '/readyz')).status).toBe(200);
      }
    },
    cliTestTimeout(3),
  );

  it(
    'adopts a stream an earlier release left without an owner, its consumer positions kept',
    async () => {
      const bus = privateBus();
      // As an earlier release left it: the stream, and the materialiser's consumer past a delta.
      const earlier = await plainBus(bus.stream, bus.prefix);
      const handled: string[] = [];
      const sub = await earlier.subscribe(
        'world.state.delta',
        (event) => void handled.push(event.id),
        { name: 'world-materialiser', durable: true, from: 'all' },
      );
      const applied = uniqueName('applied');
      await publishDelta(earlier, applied);
      await eventually(() => (handled.length === 1 ? true : undefined), 10_000, 'the delta');
      await sub.unsubscribe();
      expect((await jsm.streams.info(bus.stream)).config.description ?? '').toBe('');
      const position = (await consumersOf(bus.stream))['world-materialiser']!;
      expect(position.acked).toBe(1);

      const schema = newSchema();
      const gateway = await start(schema, bus.url);
      const deployment = await deploymentOf(schema);
      expect((await jsm.streams.info(bus.stream)).config.description).toBe(
        `Fleetgate deployment ${deployment}`,
      );
      // The same consumer, where it was: the delta handled before is not replayed.
      expect((await consumersOf(bus.stream))['world-materialiser']).toEqual(position);
      expect((await api(gateway.url, `/api/world/${applied}`)).status).toBe(404);
      // And the next delta reaches the adopting deployment's world.
      const next = uniqueName('next');
      await publishDelta(earlier, next);
      await eventually(
        async () =>
          (await api(gateway.url, `/api/world/${next}`)).status === 200 ? true : undefined,
        15_000,
        'the next delta in the world',
      );
    },
    cliTestTimeout(1, 30_000),
  );

  it('lets one of two deployments creating a stream at once have it; the other is refused', async () => {
    const bus = privateBus();
    const outcomes = await Promise.allSettled(
      ['deployment-a', 'deployment-b'].map((deployment) =>
        createJetStreamEventBus<OpenTopics>({
          servers: NATS_URL,
          stream: bus.stream,
          subjectPrefix: bus.prefix,
          deployment,
        }),
      ),
    );
    const opened = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    buses.push(...opened);
    expect(opened).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === 'rejected')!.reason as unknown;
    expect(isFleetgateError(refused, 'FLEETGATE_BUS_DEPLOYMENT_MISMATCH')).toBe(true);
    const owner = (await jsm.streams.info(bus.stream)).config.description;
    expect(['Fleetgate deployment deployment-a', 'Fleetgate deployment deployment-b']).toContain(
      owner,
    );
    expect((refused as { details?: unknown }).details).toEqual({
      stream: bus.stream,
      streamDeployment: owner!.slice('Fleetgate deployment '.length),
      deployment: owner!.endsWith('-a') ? 'deployment-b' : 'deployment-a',
    });

    // A bus of no deployment (a read-only tool, library code) still opens, and changes no owner.
    await plainBus(bus.stream, bus.prefix);
    expect((await jsm.streams.info(bus.stream)).config.description).toBe(owner);
  });

  it('keeps what an operator wrote in the description when it adopts the stream', async () => {
    const bus = privateBus();
    await plainBus(bus.stream, bus.prefix);
    await jsm.streams.update(bus.stream, { description: 'Team B events' });
    buses.push(
      await createJetStreamEventBus<OpenTopics>({
        servers: NATS_URL,
        stream: bus.stream,
        subjectPrefix: bus.prefix,
        deployment: 'team-b',
      }),
    );
    expect((await jsm.streams.info(bus.stream)).config.description).toBe(
      'Team B events (Fleetgate deployment team-b)',
    );
    const refused: unknown = await createJetStreamEventBus<OpenTopics>({
      servers: NATS_URL,
      stream: bus.stream,
      subjectPrefix: bus.prefix,
      deployment: 'team-c',
    }).catch((error: unknown) => error);
    expect(isFleetgateError(refused, 'FLEETGATE_BUS_DEPLOYMENT_MISMATCH')).toBe(true);
  });
});
