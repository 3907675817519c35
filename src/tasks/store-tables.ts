/**
 * The tasks' migration: durable task records and the terminal claim. The composition root hands
 * it to the store (migration names are permanent).
 */
import { sql } from 'kysely';
import type { StoreMigration } from '../store/index.js';

/** The tasks' migrations (`fleetgate_task`), by name. */
export const TASKS_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0004_tasks': {
    async up(db) {
      // Durable task records and the terminal claim.
      await db.schema
        .createTable('fleetgate_task')
        .addColumn('agent', 'text', (col) => col.notNull())
        .addColumn('task_id', 'text', (col) => col.notNull())
        .addColumn('skill', 'text', (col) => col.notNull())
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('state', 'text', (col) => col.notNull())
        .addColumn('push_token_hash', 'text')
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addColumn('terminal_at', 'bigint')
        .addColumn('terminal_via', 'text')
        .addPrimaryKeyConstraint('fleetgate_task_pk', ['agent', 'task_id'])
        .execute();
      await db.schema
        .createIndex('fleetgate_task_by_id')
        .on('fleetgate_task')
        .column('task_id')
        .execute();
      await db.schema
        .createIndex('fleetgate_task_in_flight')
        .on('fleetgate_task')
        .column('created_at')
        .where(sql.ref('terminal_at'), 'is', null)
        .execute();
    },
    async down(db) {
      await db.schema.dropTable('fleetgate_task').execute();
    },
  },
};
