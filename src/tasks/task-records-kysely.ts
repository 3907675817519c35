/**
 * The task records through kysely: the store's PostgreSQL implementation (it runs on SQLite too,
 * for a caller that holds no direct access). `task-records-sqlite.ts` is the SQLite one, and
 * `test/task-records.test.ts` holds both to one contract.
 */
import type { Kysely } from 'kysely';
import type { OutboxEventInput } from '../bus/index.js';
import { createOutboxWriter } from '../bus/index.js';
import type { OpenTopics } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import {
  fromTaskRow,
  type ClaimDatabase,
  type TaskClaim,
  type TaskRecordStore,
} from './task-record-types.js';

const outbox = createOutboxWriter<OpenTopics>();

/** The claim as a kysely transaction: compare-and-set, else insert, then the outbox rows. */
function claimInTransaction(
  db: Kysely<ClaimDatabase>,
  agent: string,
  taskId: string,
  claim: TaskClaim,
  events: readonly OutboxEventInput[],
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('fleetgate_task')
      .set({
        state: claim.state,
        updated_at: claim.at,
        terminal_at: claim.at,
        terminal_via: claim.via,
      })
      .where('agent', '=', agent)
      .where('task_id', '=', taskId)
      .where('terminal_at', 'is', null)
      .executeTakeFirst();
    let won = Number(updated.numUpdatedRows) === 1;
    if (!won && claim.call !== undefined) {
      // Never tracked (the reply was terminal): record it terminal now, unless a record exists.
      const inserted = await trx
        .insertInto('fleetgate_task')
        .values({
          agent,
          task_id: taskId,
          skill: claim.call.skill,
          correlation_id: claim.call.correlationId,
          state: claim.state,
          push_token_hash: null,
          created_at: claim.call.startedAt,
          updated_at: claim.at,
          terminal_at: claim.at,
          terminal_via: claim.via,
        })
        .onConflict((oc) => oc.columns(['agent', 'task_id']).doNothing())
        .executeTakeFirst();
      won = Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    if (!won) return false;
    for (const event of events) {
      await outbox.write(trx, event.topic, event.payload, {
        id: event.id,
        ...defined({ correlationId: event.correlationId }),
      });
    }
    return true;
  });
}

/** Deletes terminal records claimed before `before`, `batchSize` per statement (retention). */
async function pruneTerminal(
  db: Kysely<ClaimDatabase>,
  before: number,
  batchSize: number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await db
      .deleteFrom('fleetgate_task')
      .where((eb) =>
        eb(
          eb.refTuple('agent', 'task_id'),
          'in',
          eb
            .selectFrom('fleetgate_task')
            .select(['agent', 'task_id'])
            .where('terminal_at', 'is not', null)
            .where('terminal_at', '<', before)
            .limit(batchSize)
            .$asTuple('agent', 'task_id'),
        ),
      )
      .executeTakeFirst();
    const n = Number(result.numDeletedRows);
    total += n;
    if (n < batchSize) return total;
  }
}

/** Task records on `db`; see the file comment. */
export function kyselyTaskRecords(db: Kysely<ClaimDatabase>): TaskRecordStore {
  // A plain object, not a class: callers wrap the records with a spread, which copies own
  // properties only.
  return {
    async create(record) {
      await db
        .insertInto('fleetgate_task')
        .values({
          agent: record.agent,
          task_id: record.taskId,
          skill: record.skill,
          correlation_id: record.correlationId,
          state: record.state,
          push_token_hash: record.pushTokenHash,
          created_at: record.createdAt,
          updated_at: record.updatedAt,
          terminal_at: null,
          terminal_via: null,
        })
        .onConflict((oc) => oc.columns(['agent', 'task_id']).doNothing())
        .execute();
    },
    async get(agent, taskId) {
      const row = await db
        .selectFrom('fleetgate_task')
        .selectAll()
        .where('agent', '=', agent)
        .where('task_id', '=', taskId)
        .executeTakeFirst();
      return row === undefined ? undefined : fromTaskRow(row);
    },
    async byTaskId(taskId) {
      const rows = await db
        .selectFrom('fleetgate_task')
        .selectAll()
        .where('task_id', '=', taskId)
        .execute();
      return rows.map(fromTaskRow);
    },
    async inFlight(page = {}) {
      const after = page.after;
      let query = db.selectFrom('fleetgate_task').selectAll().where('terminal_at', 'is', null);
      if (after !== undefined) {
        // Keyset paging on (created_at, agent, task_id): stable while records come and go.
        query = query.where((eb) =>
          eb.or([
            eb('created_at', '>', after.createdAt),
            eb.and([
              eb('created_at', '=', after.createdAt),
              eb.or([
                eb('agent', '>', after.agent),
                eb.and([eb('agent', '=', after.agent), eb('task_id', '>', after.taskId)]),
              ]),
            ]),
          ]),
        );
      }
      const rows = await query
        .orderBy('created_at')
        .orderBy('agent')
        .orderBy('task_id')
        .limit(page.limit ?? 1_000)
        .execute();
      return rows.map(fromTaskRow);
    },
    prune(before, batchSize = 1_000) {
      return pruneTerminal(db, before, batchSize);
    },
    async noteState(agent, taskId, state, at) {
      await db
        .updateTable('fleetgate_task')
        .set({ state, updated_at: at })
        .where('agent', '=', agent)
        .where('task_id', '=', taskId)
        .where('terminal_at', 'is', null)
        .execute();
    },
    claim(agent, taskId, claim, events = []) {
      return claimInTransaction(db, agent, taskId, claim, events);
    },
  };
}
