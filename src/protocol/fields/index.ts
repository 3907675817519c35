/**
 * Helpers for building objects under `exactOptionalPropertyTypes`: the rooms' door to them. Not
 * part of the package's `fleetgate/protocol` export (its door is `protocol/index.ts`).
 */
export { defined, type Defined } from './defined.js';
