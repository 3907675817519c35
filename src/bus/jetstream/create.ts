/** Connecting the JetStream bus: connection, stream set-up, then the bus. */
import type { JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import { StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connect, nanos } from '@nats-io/transport-node';
import { FleetgateError, isFleetgateError } from '../../protocol/index.js';
import { errorMessage } from '../subscription-name.js';
import type { FleetgateTopics, TopicMap } from '../../protocol/index.js';
import { warnUnreportedError } from '../types.js';
import { JetStreamEventBus } from './jetstream-bus.js';
import type { JetStreamEventBusOptions, ResolvedJetStreamOptions } from './options.js';
import { resolveJetStreamOptions } from './options.js';
import {
  checkDeploymentId,
  otherDeployment,
  ownedDescription,
  streamOwner,
} from './stream-owner.js';

/**
 * Connects to NATS, creates or updates the stream and returns the bus.
 *
 * With `deployment`, the stream is that deployment's: one created here records it, one that
 * records none is adopted, and one that records another deployment is refused before it is
 * changed or anything is consumed from it.
 *
 * @throws FleetgateError `FLEETGATE_BUS_CONNECT_FAILED` when the server is unreachable, has no
 * JetStream, or the stream cannot be set up (for example, its subjects overlap another stream, or
 * it exists with the subjects of another subject prefix: it is never narrowed under the replicas
 * already on it); `FLEETGATE_BUS_DEPLOYMENT_MISMATCH` when the stream belongs to another
 * deployment.
 *
 * @example
 * ```ts
 * import { createJetStreamEventBus } from 'fleetgate/nats';
 * const bus = await createJetStreamEventBus({ servers: 'nats://127.0.0.1:4222' });
 * ```
 */
export async function createJetStreamEventBus<M extends TopicMap = FleetgateTopics>(
  options: JetStreamEventBusOptions = {},
): Promise<JetStreamEventBus<M>> {
  const resolved = resolveJetStreamOptions(options);
  const { deployment } = options;
  if (deployment !== undefined) checkDeploymentId(deployment);
  const servers = options.servers ?? 'nats://127.0.0.1:4222';
  let nc: NatsConnection;
  try {
    nc =
      options.connection ??
      (await connect({
        servers,
        name: options.name ?? 'fleetgate',
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
      }));
  } catch (cause) {
    throw new FleetgateError(
      'FLEETGATE_BUS_CONNECT_FAILED',
      `Could not connect to NATS at ${String(servers)}: ${errorMessage(cause)}`,
      { cause, details: { servers } },
    );
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: resolved.publishTimeoutMs });
    if (options.manageStream === false) {
      const info = await jsm.streams.info(resolved.stream);
      checkOwner(info.config.description, resolved.stream, deployment);
    } else await ensureStream(jsm, resolved, deployment);
    const js = jetstream(nc, { timeout: resolved.publishTimeoutMs });
    return new JetStreamEventBus<M>(
      nc,
      options.connection === undefined,
      js,
      jsm,
      resolved,
      options.onUnreportedError ?? warnUnreportedError,
    );
  } catch (cause) {
    if (options.connection === undefined) await nc.close().catch(() => undefined);
    if (isFleetgateError(cause)) throw cause;
    throw new FleetgateError(
      'FLEETGATE_BUS_CONNECT_FAILED',
      `Could not set up JetStream stream ${resolved.stream}: ${errorMessage(cause)}`,
      { cause, details: { stream: resolved.stream } },
    );
  }
}

/**
 * Creates the stream, or updates an existing one to this bus's limits. An existing stream is
 * checked first, its owner and then its subjects, so a refused bus changes nothing.
 */
async function ensureStream(
  jsm: JetStreamManager,
  o: ResolvedJetStreamOptions,
  deployment: string | undefined,
): Promise<void> {
  const wanted: Partial<StreamConfig> = {
    subjects: [`${o.subjectPrefix}.>`, `${o.deadLetterPrefix}.>`],
    duplicate_window: nanos(o.duplicateWindowMs),
    max_age: nanos(o.maxAgeMs),
  };
  let existing = await jsm.streams.info(o.stream).catch(() => undefined);
  if (existing === undefined) {
    try {
      await jsm.streams.add({
        name: o.stream,
        ...wanted,
        ...(deployment === undefined ? {} : { description: ownedDescription('', deployment) }),
        storage: o.storage === 'memory' ? StorageType.Memory : StorageType.File,
        num_replicas: o.replicas,
      });
      return;
    } catch (error) {
      // Created by another replica in the meantime (or by another deployment: the server refuses
      // a second create whose description differs): checked and updated below.
      existing = await jsm.streams.info(o.stream).catch(() => undefined);
      if (existing === undefined) throw error;
    }
  }
  const description = existing.config.description;
  checkOwner(description, o.stream, deployment);
  checkSubjectsKept(existing.config.subjects ?? [], wanted.subjects ?? [], o);
  const adopt = deployment !== undefined && streamOwner(description) === undefined;
  await jsm.streams.update(
    o.stream,
    adopt ? { ...wanted, description: ownedDescription(description, deployment) } : wanted,
  );
  if (adopt) {
    // Another deployment adopting the same stream at the same moment: the last update stands. A
    // bus that reads the other's record back is refused here instead of sharing the stream.
    const after = await jsm.streams.info(o.stream);
    checkOwner(after.config.description, o.stream, deployment);
  }
}

/** Refuses a bus of `deployment` on a stream that records another deployment. */
function checkOwner(
  description: string | undefined,
  stream: string,
  deployment: string | undefined,
): void {
  const owner = streamOwner(description);
  if (deployment === undefined || owner === undefined || owner === deployment) return;
  throw otherDeployment(stream, owner, deployment);
}

/**
 * Refuses an update that would drop subjects the stream has: the replicas already on the stream
 * (another subject prefix, another deployment) would lose it under them — their publishes then
 * find no stream and their consumers' filters match nothing.
 */
function checkSubjectsKept(
  subjects: readonly string[],
  wanted: readonly string[],
  o: ResolvedJetStreamOptions,
): void {
  const dropped = subjects.filter((subject) => !wanted.includes(subject));
  if (dropped.length === 0) return;
  throw new FleetgateError(
    'FLEETGATE_BUS_CONNECT_FAILED',
    `JetStream stream ${o.stream} holds subjects ${subjects.join(', ')}, not those of subject ` +
      `prefix ${o.subjectPrefix} (${wanted.join(', ')}); it was left unchanged. Use the prefix ` +
      `of the gateways already on ${o.stream}, or another stream name for another deployment.`,
    {
      details: {
        stream: o.stream,
        subjects: [...subjects],
        subjectPrefix: o.subjectPrefix,
        deadLetterPrefix: o.deadLetterPrefix,
        wanted: [...wanted],
      },
    },
  );
}
