/**
 * The tasks' migration: durable task records and the terminal claim. The composition root hands
 * it to the store (migration names are permanent).
 */
import type { StoreMigration } from '../store/index.js';

/** The tasks' migrations (`fleetgate_task`), by name. */
export const TASKS_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0004_tasks': {
    // Durable task records and the terminal claim.
    tables: {
      fleetgate_task: {
        columns: {
          agent: 'text not null',
          task_id: 'text not null',
          skill: 'text not null',
          correlation_id: 'text not null',
          state: 'text not null',
          push_token_hash: 'text',
          created_at: 'bigint not null',
          updated_at: 'bigint not null',
          terminal_at: 'bigint',
          terminal_via: 'text',
        },
        primaryKey: ['agent', 'task_id'],
      },
    },
    indexes: {
      fleetgate_task_by_id: 'fleetgate_task (task_id)',
      fleetgate_task_in_flight: 'fleetgate_task (created_at) where terminal_at is null',
    },
  },
};
