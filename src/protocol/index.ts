/**
 * The wire contracts of the extensions Fleetgate implements: URIs, MIME types, stamps, radii, hitl
 * modes, delta entries, cost samples, part/task codecs and card declarations. Pure: no I/O.
 */
export * from './uris.js';
export * from './radius.js';
export * from './hitl.js';
export * from './limits.js';
export * from './delta.js';
export * from './cost.js';
export * from './parts.js';
export * from './task.js';
export * from './extract.js';
export * from './declarations.js';
export * from './card-json.js';
export { jsonPath } from './json-path.js';
