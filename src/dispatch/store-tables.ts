/**
 * The dispatch records' migration. The composition root hands it to the store (migration names
 * are permanent).
 */
import type { StoreMigration } from '../store/index.js';

/** The dispatch migrations (`fleetgate_dispatch`), by name. */
export const DISPATCH_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0005_dispatch': {
    async up(db) {
      // Durable dispatch records.
      await db.schema
        .createTable('fleetgate_dispatch')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('status', 'text', (col) => col.notNull())
        .addColumn('task_id', 'text')
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addColumn('result', 'text')
        .execute();
      await db.schema
        .createIndex('fleetgate_dispatch_by_task')
        .on('fleetgate_dispatch')
        .columns(['agent', 'task_id'])
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_dispatch').execute();
    },
  },
  '0300_dispatch_trace': {
    async up(db) {
      // The trace context a dispatch was asked with, so a call released later carries it too.
      // A table of its own: shipped tables never change shape.
      await db.schema
        .createTable('fleetgate_dispatch_trace')
        .addColumn('dispatch_id', 'text', (col) => col.primaryKey())
        .addColumn('traceparent', 'text', (col) => col.notNull())
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_dispatch_trace').execute();
    },
  },
  '0600_dispatch_send': {
    async up(db) {
      // Who holds a dispatch and what it sends: the message and context ids chosen before any
      // byte leaves for the agent, and when the send began. A restart (or another replica) finds
      // a call whose holder died by these: never sent, or sent and to be looked up by its context.
      await db.schema
        .createTable('fleetgate_dispatch_send')
        .addColumn('dispatch_id', 'text', (col) => col.primaryKey())
        .addColumn('owner', 'text', (col) => col.notNull())
        .addColumn('message_id', 'text', (col) => col.notNull())
        .addColumn('context_id', 'text', (col) => col.notNull())
        .addColumn('sent_at', 'bigint')
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_dispatch_send').execute();
    },
  },
};
