/** The fleet: agent directory, card sources, card broker, declaration registries and the ratchet. */
export * from './blast-registry.js';
export * from './agent-config.js';
export * from './directory.js';
export * from './card-source.js';
export * from './card-broker.js';
export * from './ratchet.js';
export { createSemaphore } from './semaphore.js';
export * from './card-cache.js';
export * from './learned-floors.js';
export * from './declaration-lookup.js';
export * from './store-tables.js';
