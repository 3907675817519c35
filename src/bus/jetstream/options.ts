/** Options of the JetStream bus, their defaults and their validation. */
import { FleetgateError } from '../../protocol/index.js';
import type { EventEnvelope } from '../../protocol/index.js';
import type { UnreportedErrorHandler } from '../types.js';
import type { NatsConnection } from '@nats-io/transport-node';

/** Options of {@link createJetStreamEventBus}. */
export interface JetStreamEventBusOptions {
  /** Server URL(s) to connect to (default `nats://127.0.0.1:4222`); ignored with `connection`. */
  servers?: string | string[];
  /** An existing connection to use; the bus then never closes it. */
  connection?: NatsConnection;
  /** Stream name (default `FLEETGATE`). */
  stream?: string;
  /** Subject prefix of events (default `fleetgate`): topic `a.b` is subject `fleetgate.a.b`. */
  subjectPrefix?: string;
  /** Subject prefix of dead letters (default `<subjectPrefix>_dlq`). */
  deadLetterPrefix?: string;
  /** How long the server remembers event ids to drop duplicates (default 2 minutes). */
  duplicateWindowMs?: number;
  /** How long the stream keeps events (default 7 days; 0 keeps them until limits). */
  maxAgeMs?: number;
  /** Stream storage (default `file`). */
  storage?: 'file' | 'memory';
  /** Stream replicas in a cluster (default 1). */
  replicas?: number;
  /** Tries per event for a durable subscription before it is dead-lettered (default 5). */
  maxDeliver?: number;
  /** How long the server waits for an ack before redelivering (default 30 s). */
  ackWaitMs?: number;
  /** Delay before a failed event is redelivered (default 1 s). */
  redeliveryDelayMs?: number;
  /** How long `publish` waits for the server's acknowledgement (default 5 s). */
  publishTimeoutMs?: number;
  /** Connection name shown by the server (default `fleetgate`). */
  name?: string;
  /**
   * Create or update the stream on connect (default true). Read-only tools (`fleetgate tail`)
   * pass false: the stream must exist and its configuration is left as the gateway set it.
   */
  manageStream?: boolean;
  /**
   * The deployment this bus belongs to (the gateway passes the id its store keeps): a stream
   * created here records it in its description, a stream that records none is adopted, and a
   * stream that records another deployment is refused (`FLEETGATE_BUS_DEPLOYMENT_MISMATCH`)
   * before it is changed or read. Letters, digits, `_` and `-`, at most 64. Without it nothing is
   * checked or recorded.
   */
  deployment?: string;
  /** Receives errors that cannot go to `system.error` (default: a process warning). */
  onUnreportedError?: UnreportedErrorHandler;
}

/** An event a durable subscription kept failing on, as read from the dead-letter subject. */
export interface DeadLetter {
  event: EventEnvelope;
  /** Name of the subscription whose handler failed. */
  subscription: string;
  /** How many times it was delivered. */
  deliveries: number;
  /** The last handler error. */
  error: string;
}

/** {@link JetStreamEventBusOptions} with every default filled in. */
export type ResolvedJetStreamOptions = Readonly<
  Required<
    Omit<
      JetStreamEventBusOptions,
      'servers' | 'connection' | 'onUnreportedError' | 'name' | 'manageStream' | 'deployment'
    >
  >
>;

const SUBJECT_PREFIX = /^[A-Za-z0-9_-]+$/u;
const STREAM_NAME = /^[A-Za-z0-9_-]{1,255}$/u;

/** Fills in defaults and checks names and limits. */
export function resolveJetStreamOptions(
  options: JetStreamEventBusOptions,
): ResolvedJetStreamOptions {
  const subjectPrefix = options.subjectPrefix ?? 'fleetgate';
  const resolved: ResolvedJetStreamOptions = {
    stream: options.stream ?? 'FLEETGATE',
    subjectPrefix,
    deadLetterPrefix: options.deadLetterPrefix ?? `${subjectPrefix}_dlq`,
    duplicateWindowMs: options.duplicateWindowMs ?? 120_000,
    maxAgeMs: options.maxAgeMs ?? 7 * 24 * 3_600_000,
    storage: options.storage ?? 'file',
    replicas: options.replicas ?? 1,
    maxDeliver: options.maxDeliver ?? 5,
    ackWaitMs: options.ackWaitMs ?? 30_000,
    redeliveryDelayMs: options.redeliveryDelayMs ?? 1_000,
    publishTimeoutMs: options.publishTimeoutMs ?? 5_000,
  };
  if (!STREAM_NAME.test(resolved.stream)) {
    throw new FleetgateError(
      'FLEETGATE_BUS_CONNECT_FAILED',
      `Invalid stream name ${resolved.stream}`,
    );
  }
  for (const prefix of [resolved.subjectPrefix, resolved.deadLetterPrefix]) {
    if (!SUBJECT_PREFIX.test(prefix)) {
      throw new FleetgateError('FLEETGATE_BUS_CONNECT_FAILED', `Invalid subject prefix ${prefix}`);
    }
  }
  if (resolved.subjectPrefix === resolved.deadLetterPrefix) {
    throw new FleetgateError(
      'FLEETGATE_BUS_CONNECT_FAILED',
      'subjectPrefix and deadLetterPrefix must differ',
    );
  }
  if (!Number.isSafeInteger(resolved.maxDeliver) || resolved.maxDeliver < 1) {
    throw new FleetgateError(
      'FLEETGATE_BUS_CONNECT_FAILED',
      'maxDeliver must be a positive integer',
    );
  }
  return resolved;
}
