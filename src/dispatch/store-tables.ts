/**
 * The dispatch records' migration. The composition root hands it to the store (migration names
 * are permanent).
 */
import type { Kysely } from 'kysely';
import type { StoreMigration } from '../store/index.js';

/** The dispatch migrations (`fleetgate_dispatch`), by name. */
export const DISPATCH_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0005_dispatch': {
    // Durable dispatch records.
    tables: {
      fleetgate_dispatch: {
        columns: {
          id: 'text primary key',
          agent: 'text not null',
          skill: 'text not null',
          correlation_id: 'text not null',
          status: 'text not null',
          task_id: 'text',
          created_at: 'bigint not null',
          updated_at: 'bigint not null',
          result: 'text',
        },
      },
    },
    indexes: {
      fleetgate_dispatch_by_task: 'fleetgate_dispatch (agent, task_id)',
    },
  },
  '0300_dispatch_trace': {
    // The trace context a dispatch was asked with, so a call released later carries it too.
    // A table of its own: shipped tables never change shape.
    tables: {
      fleetgate_dispatch_trace: {
        columns: { dispatch_id: 'text primary key', traceparent: 'text not null' },
      },
    },
  },
  '0600_dispatch_send': {
    // Who holds a dispatch and what it sends: the message and context ids chosen before any
    // byte leaves for the agent, and when the send began. A restart (or another replica) finds
    // a call whose holder died by these: never sent, or sent and to be looked up by its context.
    tables: {
      fleetgate_dispatch_send: {
        columns: {
          dispatch_id: 'text primary key',
          owner: 'text not null',
          message_id: 'text not null',
          context_id: 'text not null',
          sent_at: 'bigint',
        },
      },
    },
  },
  '0610_dispatch_send_before': {
    async up(db) {
      // Calls in flight in a store written before holders were recorded: sent by a process that
      // no longer runs (no instance lease has this holder), their message ids unknown. Recovery
      // ends them "outcome unknown" instead of leaving them running forever.
      // Built on the migration's own handle: this room's import graph stays free of kysely.
      const any = db as Kysely<LegacyTables>;
      await any
        .insertInto('fleetgate_dispatch_send')
        .columns(['dispatch_id', 'owner', 'message_id', 'context_id', 'sent_at'])
        .expression((eb) =>
          eb
            .selectFrom('fleetgate_dispatch as d')
            .select([
              'd.id',
              eb.val(LEGACY_HOLDER).as('owner'),
              eb.val('').as('message_id'),
              eb.val('').as('context_id'),
              'd.updated_at',
            ])
            .where('d.status', 'in', ['running', 'awaiting-input'])
            .where('d.task_id', 'is', null)
            .where((w) =>
              w.not(
                w.exists(
                  w
                    .selectFrom('fleetgate_dispatch_send as s')
                    .select('s.dispatch_id')
                    .whereRef('s.dispatch_id', '=', 'd.id'),
                ),
              ),
            ),
        )
        .execute();
    },
    async down(db) {
      await (db as Kysely<LegacyTables>)
        .deleteFrom('fleetgate_dispatch_send')
        .where('owner', '=', LEGACY_HOLDER)
        .execute();
    },
  },
  '0900_dispatch_requester': {
    // Who asked for a call, kept with every dispatch (before, only a call held for approval kept
    // its requester, on the approval). Nullable: calls recorded before have none, and a replica
    // of the previous release, still writing during a roll, leaves it out.
    addColumns: { fleetgate_dispatch: { requested_by: 'text' } },
    indexes: {
      // The recovery sweep's `orphans` and `adrift`: the few calls in flight among every call
      // kept, by status, then with or without a task id.
      fleetgate_dispatch_in_flight: 'fleetgate_dispatch (status, task_id)',
    },
  },
  '1000_dispatch_call_columns': {
    // The first of two releases that fold the call's side rows into its own: who holds it, what
    // it sent and its trace context, written on the dispatch row in the same statements as
    // `fleetgate_dispatch_send` and `fleetgate_dispatch_trace`. Those tables stay the truth while a
    // replica of the previous release may run beside this one (it reads and takes calls over
    // through them only); the next release backfills what such a replica wrote, reads these
    // columns and stops writing the side rows. Beside them, the door the call came through (the
    // A2A proxy skips, with no read, the events of calls that did not come through it). Nullable:
    // rows of earlier releases have none.
    addColumns: {
      fleetgate_dispatch: {
        door: 'text',
        owner: 'text',
        message_id: 'text',
        context_id: 'text',
        sent_at: 'bigint',
        traceparent: 'text',
      },
    },
  },
};

/** The columns the legacy-holder migration reads and writes. */
interface LegacyTables {
  fleetgate_dispatch: { id: string; status: string; task_id: string | null; updated_at: number };
  fleetgate_dispatch_send: {
    dispatch_id: string;
    owner: string;
    message_id: string;
    context_id: string;
    sent_at: number | null;
  };
}

/** The holder of calls that were in flight when a store was upgraded to record holders. */
export const LEGACY_HOLDER = 'before-0610';
