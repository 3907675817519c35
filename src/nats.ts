/**
 * `fleetgate/nats`: the NATS JetStream event bus, kept apart from the main entry so embedded users
 * never load the NATS client.
 *
 * @example
 * ```ts
 * import { createJetStreamEventBus } from 'fleetgate/nats';
 * const bus = await createJetStreamEventBus({ servers: 'nats://127.0.0.1:4222', stream: 'FLEETGATE' });
 * ```
 */
export * from './bus/jetstream/index.js';
