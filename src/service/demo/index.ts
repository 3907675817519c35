/**
 * The demo fleet of `fleetgate start` without a configuration (used by the CLI; not part of the
 * package's public API).
 */
export * from './demo-fleet.js';
