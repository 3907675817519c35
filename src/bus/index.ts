/**
 * The event bus: typed topics, NATS-syntax topic patterns, the `EventBus` interface, the embedded
 * in-memory bus and the transactional outbox. The JetStream bus is in `fleetgate/nats`.
 */
export type {
  EventBus,
  Delivery,
  EventHandler,
  OverflowPolicy,
  PublishOptions,
  PublishResult,
  StartFrom,
  SubscribeOptions,
  Subscription,
  UnreportedErrorHandler,
} from './types.js';
export { warnUnreportedError } from './types.js';
export {
  MAX_TOPIC_LENGTH,
  MAX_TOPIC_TOKENS,
  isValidPattern,
  isValidTopic,
  parsePattern,
  parseTopic,
  tokensMatch,
  topicMatches,
} from './topic-pattern.js';
export { TopicTrie } from './topic-trie.js';
export { standingSubscriber } from './standing-subscriber.js';
export type { StandingSubscriber } from './standing-subscriber.js';
export { createEventIdGenerator } from './event-stamps.js';
export { EventCollector } from './collecting-bus.js';
export type { CollectedEvent, DeferredEffect, PublishTarget } from './collecting-bus.js';
export { InMemoryEventBus, createInMemoryEventBus } from './in-memory-bus.js';
export type { InMemoryBusStats, InMemoryEventBusOptions } from './in-memory-bus.js';
export {
  createOutboxWriter,
  pruneOutbox,
  createOutboxLog,
  writeOutboxEvent,
  writeOutboxEvents,
  OUTBOX_WRITERS,
} from './outbox.js';
export type { OutboxRelay, OutboxRelayOptions } from './outbox-relay.js';
export { createOutboxRelay } from './outbox-relay.js';
export { OUTBOX_MIGRATIONS } from './outbox-tables.js';
export type {
  LoggedEvent,
  OutboxLog,
  OutboxDatabase,
  OutboxExecutor,
  OutboxParkedTable,
  OutboxQueryExecutor,
  OutboxRelayDatabase,
  OutboxTable,
  OutboxWriter,
  OutboxWriteOptions,
  OutboxWriteResult,
} from './outbox.js';
export { insertOutboxRows } from './outbox-direct.js';
export type { OutboxEventInput } from './outbox-rows.js';
