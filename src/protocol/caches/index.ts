/**
 * Bounded caches of derived values: the rooms' door to them. Not part of the package's
 * `fleetgate/protocol` export (its door is `protocol/index.ts`).
 */
export { remember } from './remember.js';
