/** Task tracking: durable task records with the terminal claim, and the push receiver. */
export * from './task-records.js';
export * from './push-receiver.js';
export * from './poll-scheduler.js';
export * from './tracker.js';
export * from './store-tables.js';
export type { ForgetRule } from './forgotten-task.js';
