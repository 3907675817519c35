/**
 * The contracts of Fleetgate: extension URIs, MIME types, stamps, radii and hitl modes (ordered
 * scales), the radius palette, delta entries, cost samples, part/task codecs, card declarations,
 * the bus topic map with its event payloads, deterministic event ids, the declaration lookup port
 * and the coded error table. Pure: no I/O, and nothing imported from the rest of `src`.
 */
export * from './errors.js';
export * from './ordered-scale.js';
export * from './uris.js';
export * from './radius.js';
export * from './radius-palette.js';
export * from './hitl.js';
export * from './limits.js';
export * from './delta.js';
export { parseDeltaPayload } from './delta-collect.js';
export * from './event-parts.js';
export * from './cost.js';
export * from './parts.js';
export * from './task.js';
export * from './extract.js';
export * from './declarations.js';
export type * from './declaration-lookup.js';
export type * from './topics.js';
export type * from './gate.js';
export { CALL_DOORS, DISPATCH_STATUSES, REASON_KINDS, callDoorText } from './topics.js';
export * from './event-id.js';
export * from './card-json.js';
export { jsonPath } from './json-path.js';
export { parseDuration, parseSize } from './durations.js';
