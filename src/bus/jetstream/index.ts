/** The NATS JetStream bus; reached through the `fleetgate/nats` subpath export. */
export { JetStreamEventBus } from './jetstream-bus.js';
export { createJetStreamEventBus } from './create.js';
export type { DeadLetter, JetStreamEventBusOptions, ResolvedJetStreamOptions } from './options.js';
export { DEAD_LETTER_HEADERS } from './codec.js';
