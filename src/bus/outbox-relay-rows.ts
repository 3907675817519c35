/**
 * The outbox relay's queries, one implementation per database: on a SQLite store's direct access
 * as prepared statements (a round takes the rows the writers handed over, `outbox-handover.ts`,
 * and its marks join the writes committed with them), and through kysely (PostgreSQL, where the
 * rounds of several replicas lock the rows they read). `test/outbox-relay-rows.test.ts` holds both
 * to one contract.
 */
import type { Kysely } from 'kysely';
import type { OutboxDatabase } from './outbox-tables.js';
import type { SqliteAccess } from '../store/index.js';
import type { OutboxRow } from './outbox-direct.js';
import { SELECT_UNSENT, markOutboxRowsSent } from './outbox-direct.js';
import type { OutboxHandover } from './outbox-handover.js';
import type { ParkedRow } from './outbox-parking.js';

/** The queries of one round. */
export interface RoundRows {
  /** Up to `limit` unsent rows, in `seq` order. */
  unsent(limit: number): Promise<OutboxRow[]>;
  /** Marks published rows sent at `at` (a row marked already stays as it is). */
  markSent(rows: readonly OutboxRow[], at: number): Promise<void>;
  /** Moves rows no bus will take into `fleetgate_outbox_parked` (an unsent row only, once). */
  park(rows: readonly ParkedRow[], at: number): Promise<void>;
  /** The round's rows are all marked or parked (`complete`), or not: what the next may take. */
  settled(rows: readonly OutboxRow[], complete: boolean): void;
}

/** The relay's queries on the outbox. */
export interface RelayRows {
  /** Runs a round's queries; with locked rows, in one transaction that holds them. */
  round<T>(work: (rows: RoundRows) => Promise<T>): Promise<T>;
  /** Counts a failed publish on its row, outside any round's transaction. */
  failed(eventId: string, message: string): Promise<void>;
}

const PARK =
  'insert into "fleetgate_outbox_parked" ("id", "seq", "topic", "payload", "correlation_id", ' +
  '"time", "created_at", "parked_at", "reason") ' +
  'select "id", "seq", "topic", "payload", "correlation_id", "time", "created_at", ?, ? ' +
  'from "fleetgate_outbox" where "id" = ? and "sent_at" is null on conflict ("id") do nothing';
const DELETE_UNSENT = 'delete from "fleetgate_outbox" where "id" = ? and "sent_at" is null';
const FAILED =
  'update "fleetgate_outbox" set "attempts" = "attempts" + 1, "last_error" = ? where "id" = ?';

/** A parked row's reason as stored. */
function reasonOf(row: ParkedRow): string {
  return row.error.message.slice(0, 1000);
}

/** The relay's queries on a SQLite store's direct access, taking the rows `handover` holds. */
export function sqliteRelayRows(direct: SqliteAccess, handover: OutboxHandover): RelayRows {
  const rows: RoundRows = {
    unsent(limit) {
      const taken = handover.take(limit);
      if (taken !== undefined) return Promise.resolve(taken);
      return direct.read((sql) => sql.all<OutboxRow>(SELECT_UNSENT, [limit]));
    },
    async markSent(published, at) {
      // By position (the table's own key), joining the claims and world updates committed in
      // the same turn of the loop.
      const seqs = published.map((row) => row.seq);
      await direct.write((sql) => markOutboxRowsSent(sql, seqs, at), { group: 'loop' });
    },
    async park(parked, at) {
      await direct.write((sql) => {
        for (const row of parked) {
          sql.run(PARK, [at, reasonOf(row), row.id]);
          sql.run(DELETE_UNSENT, [row.id]);
        }
      });
    },
    settled(round, complete) {
      handover.ended(round, complete);
    },
  };
  return {
    round: (work) => work(rows),
    async failed(eventId, message) {
      await direct.write((sql) => sql.run(FAILED, [message, eventId]));
    },
  };
}

/** The columns a parked row keeps from its outbox row (both tables name them alike). */
const KEPT_COLUMNS = [
  'id',
  'seq',
  'topic',
  'payload',
  'correlation_id',
  'time',
  'created_at',
] as const;

/** One round's queries through `q` (the database, or the round's transaction with `lock`). */
function kyselyRoundRows(q: Kysely<OutboxDatabase>, lock: boolean): RoundRows {
  const park = async (trx: Kysely<OutboxDatabase>, parked: readonly ParkedRow[], at: number) => {
    for (const row of parked) {
      await trx
        .insertInto('fleetgate_outbox_parked')
        .columns([...KEPT_COLUMNS, 'parked_at', 'reason'])
        .expression((eb) =>
          eb
            .selectFrom('fleetgate_outbox')
            .select((s) => [
              ...KEPT_COLUMNS,
              s.val(at).as('parked_at'),
              s.val(reasonOf(row)).as('reason'),
            ])
            .where('id', '=', row.id)
            .where('sent_at', 'is', null),
        )
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      await trx
        .deleteFrom('fleetgate_outbox')
        .where('id', '=', row.id)
        .where('sent_at', 'is', null)
        .execute();
    }
  };
  return {
    unsent(limit) {
      let select = q
        .selectFrom('fleetgate_outbox')
        .select(['seq', 'id', 'topic', 'payload', 'correlation_id', 'time'])
        .where('sent_at', 'is', null)
        .orderBy('seq')
        .limit(limit);
      if (lock) select = select.forUpdate().skipLocked();
      return select.execute();
    },
    async markSent(published, at) {
      await q
        .updateTable('fleetgate_outbox')
        .set({ sent_at: at, last_error: null })
        .where(
          'id',
          'in',
          published.map((row) => row.id),
        )
        .where('sent_at', 'is', null)
        .execute();
    },
    // Moved in one transaction: the round's own with locked rows, else one of their own.
    park: (parked, at) =>
      q.isTransaction
        ? park(q, parked, at)
        : q.transaction().execute((trx) => park(trx, parked, at)),
    settled() {
      // Every round reads the table: nothing to keep between rounds.
    },
  };
}

/**
 * The relay's queries through kysely; with `lockRows` (PostgreSQL), each round in a transaction
 * that locks the rows it reads (`FOR UPDATE SKIP LOCKED`), so the relays of several replicas share
 * the outbox instead of each publishing every row.
 */
export function kyselyRelayRows(db: Kysely<OutboxDatabase>, lockRows: boolean): RelayRows {
  const unlocked = kyselyRoundRows(db, false);
  return {
    round: (work) =>
      lockRows
        ? db.transaction().execute((trx) => work(kyselyRoundRows(trx, true)))
        : work(unlocked),
    async failed(eventId, message) {
      await db
        .updateTable('fleetgate_outbox')
        .set((eb) => ({ attempts: eb('attempts', '+', 1), last_error: message }))
        .where('id', '=', eventId)
        .execute();
    },
  };
}
