/**
 * The dispatch records' migration. The composition root hands it to the store (migration names
 * are permanent).
 */
import { sql } from 'kysely';
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
  '0610_dispatch_send_before': {
    async up(db) {
      // Calls in flight in a store written before holders were recorded: sent by a process that
      // no longer runs (no instance lease has this holder), their message ids unknown. Recovery
      // ends them "outcome unknown" instead of leaving them running forever.
      await sql`
        insert into fleetgate_dispatch_send (dispatch_id, owner, message_id, context_id, sent_at)
        select d.id, ${LEGACY_HOLDER}, '', '', d.updated_at from fleetgate_dispatch d
        where d.status in ('running', 'awaiting-input') and d.task_id is null
          and not exists (select 1 from fleetgate_dispatch_send s where s.dispatch_id = d.id)
      `.execute(db);
    },
    async down(db) {
      await sql`delete from fleetgate_dispatch_send where owner = ${LEGACY_HOLDER}`.execute(db);
    },
  },
};

/** The holder of calls that were in flight when a store was upgraded to record holders. */
export const LEGACY_HOLDER = 'before-0610';
