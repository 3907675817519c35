/**
 * The ids the rooms make for their records: the rooms' door to them. Not part of the package's
 * `fleetgate/protocol` export (its door is `protocol/index.ts`).
 */
export { newRecordId } from './record-id.js';
