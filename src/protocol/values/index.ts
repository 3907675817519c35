/**
 * Checks on values callers hand in as JSON: the rooms' door to them. Not part of the package's
 * `fleetgate/protocol` export (its door is `protocol/index.ts`).
 */
export { tooDeepAt } from './depth.js';
