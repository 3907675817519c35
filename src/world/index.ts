/**
 * World state: the materialiser that turns `world.state.delta` events into domains people can
 * read, the audit log of every applied and rejected entry, replay, retention, and the
 * `WorldStore` port with its in-memory and SQL (SQLite / PostgreSQL) implementations.
 */
export { applyDelta, type ApplyOptions, type ApplyOutcome } from './apply.js';
export {
  auditSnapshot,
  isPlainObject,
  toJsonValue,
  type AuditSummary,
  type JsonObject,
  type JsonValue,
} from './json.js';
export {
  createWorldMaterialiser,
  emptyDomainState,
  WORLD_MATERIALISER_SUBSCRIPTION,
  type ApplyReport,
  type WorldMaterialiser,
  type WorldMaterialiserOptions,
  type WorldRetention,
  type WorldRetry,
  type WorldStateDeltaEnvelope,
} from './materialiser.js';
export { HISTORY_LIMITS } from './history-query.js';
export { replayRecords } from './replay.js';
export { MemoryWorldStore, createMemoryWorldStore } from './memory-world-store.js';
export {
  SqlWorldStore,
  createSqlWorldStore,
  type SqlWorldDatabase,
  type SqlWorldStoreOptions,
} from './sql-world-store.js';
export {
  WORLD_MIGRATIONS,
  type WorldAuditTable,
  type WorldDatabase,
  type WorldDomainTable,
  type WorldEventTable,
} from './store-tables.js';
export type * from './types.js';
export type { WorldBus, WorldPublishedTopic, WorldSubscription } from './bus-port.js';
export type { WorldOutbox } from './outbox-port.js';
