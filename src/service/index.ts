/**
 * The gateway service: configuration loading, the gateway's store (every domain's migrations) and
 * the fleet runtime.
 */
export * from './config.js';
export * from './migrations.js';
export * from './fleet-runtime.js';
