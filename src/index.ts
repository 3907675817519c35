/**
 * Fleetgate: blast-radius gating and exactly-once world-state deltas for fleets of A2A agents.
 * This module is the library's public door; optional backends live behind subpath exports
 * (`fleetgate/nats` for the JetStream bus).
 */
export * from './protocol/index.js';
export * from './bus/index.js';
export * from './store/index.js';
export * from './fleet/index.js';
export * from './extensions/index.js';
export * from './dispatch/index.js';
export * from './world/index.js';
export * from './alerts/index.js';
export * from './tasks/index.js';
