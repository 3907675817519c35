/**
 * The fleet: agent directory, card sources, the card refresher, the declaration book (declared,
 * ratchet, operator and learned floors), acknowledgements, and the card broker that wires them.
 */
export * from './blast-registry.js';
export * from './agent-config.js';
export * from './directory.js';
export * from './card-source.js';
export * from './card-broker.js';
export * from './card-refresher.js';
export type { AgentCardState, CardStatus, LoadedAgent, RefreshOutcome } from './card-state.js';
export * from './declaration-book.js';
export * from './acknowledgements.js';
export * from './ratchet.js';
export { createSemaphore } from './semaphore.js';
export * from './card-cache.js';
export * from './learned-floors.js';
export * from './declaration-lookup.js';
export * from './store-tables.js';
