/**
 * Indexes for the call page's story (`GET /api/dispatches/:id/story`, routes-calls.ts), which
 * reads one call's events from the outbox by its correlation id and its world changes from the
 * audit log by its task. Without them each story read every row of both tables, and both grow
 * with every call. The service owns this migration because the story is its read; the tables
 * stay their rooms' (migration names are permanent: never rename one that shipped).
 */
import type { StoreMigration } from '../store/index.js';

/** The story's indexes, by name. */
export const STORY_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  // After every migration that shipped (the Migrator runs names in order, never out of it).
  '0700_story_indexes': {
    indexes: {
      // `where correlation_id = ? order by seq limit n`: the rows in order, no sort.
      fleetgate_outbox_by_correlation: 'fleetgate_outbox (correlation_id, seq)',
      // `where agent = ? and task_id = ? order by seq limit n`. One task's rows are written
      // together with rising seq, so a unit of work adds them to one place of the index (an index
      // by path cost a page per path written, which is why 0301 dropped it).
      fleetgate_world_audit_by_task: 'fleetgate_world_audit (agent, task_id, seq)',
    },
  },
};
