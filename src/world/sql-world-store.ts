/**
 * The {@link WorldStore} on SQLite or PostgreSQL through kysely. Each unit of work is one database
 * transaction: the event-id claims, domain rows, audit rows and outbox rows commit together, so a
 * redelivered event (another replica, a restart, a bus re-send) finds its id claimed and is
 * skipped. On PostgreSQL the domain rows are locked (`FOR UPDATE`, in name order, so two replicas
 * never deadlock) for the rest of the transaction; SQLite runs one writer at a time anyway.
 *
 * A domain's state is kept in rows (`fleetgate_world_values`, see `value-rows.ts`): a unit of work
 * reads the rows its entries need and writes the rows they changed, so a tiny `inc` costs the same
 * in a domain of 10 KiB as in one of 100 MiB. The domain row keeps the version, the time, the
 * base for replay, and in `state` a small header (the domain's size in bytes, the next row
 * position).
 */
import type { Kysely, Transaction } from 'kysely';
import { CompiledQuery, sql } from 'kysely';
import type { JsonObject } from './json.js';
import { normaliseHistoryQuery } from './history-query.js';
import type { WorldOutbox } from './outbox-port.js';
import type { WorldSqlStatements, WorldSqlite } from './sqlite-port.js';
import type { SqlWorldDatabase, WorldDomainTable } from './store-tables.js';
import {
  INSERT_CHUNK,
  auditInsertSql,
  auditParams,
  chunks,
  toAuditRecord,
  toAuditRow,
} from './sql-rows.js';
import { assembleState, decodeHeader, encodeHeader, rowBytes, splitState } from './value-rows.js';
import type { LoadedRows } from './sql-value-rows.js';
import {
  SPLIT_DEPTH,
  groupValueRows,
  loadDomainRows,
  loadDomainRowsDirect,
  toBase,
  writeValueRows,
  writeValueRowsDirect,
} from './sql-value-rows.js';
import type {
  AuditRecord,
  HistoryQuery,
  LoadedDomain,
  PruneResult,
  StoredDomain,
  WorldEmission,
  WorldStore,
  WorldUnitOfWork,
} from './types.js';

export type { SqlWorldDatabase } from './store-tables.js';

/** Options of {@link createSqlWorldStore}. */
export interface SqlWorldStoreOptions<DB extends SqlWorldDatabase = SqlWorldDatabase> {
  /**
   * The store's kysely instance (`openStore(url).db`), migrated to `0003_world` or later, with the
   * outbox's migrations. Any database type that includes the world tables will do.
   */
  db: Kysely<DB>;
  /** The database engine (`openStore(url).kind`). */
  kind: 'sqlite' | 'postgres';
  /**
   * Writes the emissions into the transactional outbox, in the unit of work's transaction: the
   * bus's `OUTBOX_WRITERS`.
   */
  outbox: WorldOutbox;
  /** Called after a unit of work that wrote outbox rows committed, e.g. `relay.notify`. */
  onCommitted?: () => void;
  /**
   * A SQLite store's direct access (`store.sqlite`): units of work run as prepared statements in
   * the store's group-committed writes, sharing a commit with the writes queued beside them.
   * Buys `store-paths`' `world_direct_saves_us_per_call` (~245 µs, ~16% of a proxied call's
   * gateway CPU).
   */
  sqlite?: WorldSqlite | undefined;
  /**
   * Largest `previous` / `next` value of an audit record written whole, as JSON bytes (default
   * 8 KiB); a larger one is written as an `AuditSummary`. The operand (`value`) is always whole:
   * replay needs it.
   */
  auditValueMaxBytes?: number;
}

type Db = Kysely<SqlWorldDatabase> | Transaction<SqlWorldDatabase>;

/** `fn`'s result as a promise, a throw as a rejection: the direct statements are synchronous. */
function settled<T>(fn: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(fn()));
}

const CLAIM_EVENT =
  'insert into "fleetgate_world_events" ("event_id", "applied_at") values (?, ?) on conflict ("event_id") do nothing';
const SELECT_DOMAIN = 'select * from "fleetgate_world_domains" where "name" = ?';
const INSERT_DOMAIN =
  'insert into "fleetgate_world_domains" ("name", "version", "state", "base_state", "base_version", "updated_at") ' +
  'values (?, ?, ?, ?, ?, ?) on conflict ("name") do nothing';
const UPDATE_DOMAIN =
  'update "fleetgate_world_domains" set "state" = ?, "version" = ?, "updated_at" = ? where "name" = ?';
const DELETE_DOMAIN_VALUES = 'delete from "fleetgate_world_values" where "domain" = ?';
const DELETE_DOMAIN = 'delete from "fleetgate_world_domains" where "name" = ?';

/** A {@link WorldStore} in the tables of the `0003_world` migration. */
export class SqlWorldStore implements WorldStore {
  readonly durableEmit = true;
  readonly loadsByPath = true;
  readonly #db: Kysely<SqlWorldDatabase>;
  readonly #kind: 'sqlite' | 'postgres';
  readonly #onCommitted: (() => void) | undefined;
  readonly #auditMax: number;
  readonly #direct: WorldSqlite | undefined;
  readonly #outbox: WorldOutbox;

  constructor(options: SqlWorldStoreOptions<SqlWorldDatabase>) {
    this.#db = options.db;
    this.#kind = options.kind;
    this.#outbox = options.outbox;
    this.#direct = options.kind === 'sqlite' ? options.sqlite : undefined;
    this.#onCommitted = options.onCommitted;
    this.#auditMax = options.auditValueMaxBytes ?? 8 * 1024;
  }

  async unitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: WorldEmission[] }> {
    let wroteOutbox = false;
    const direct = this.#direct;
    if (direct !== undefined) {
      // Joins the claims and relay marks committed in the same turn of the event loop: one
      // commit (and one write of the pages they share) for all of them.
      const result = await direct.write(
        (sql) =>
          work(
            this.#directUnitOfWork(sql, () => {
              wroteOutbox = true;
            }),
          ),
        { group: 'loop' },
      );
      if (wroteOutbox) this.#onCommitted?.();
      return { result, emitted: [] };
    }
    const result = await this.#db.transaction().execute(async (trx) => {
      const uow = this.#unitOfWork(trx, () => {
        wroteOutbox = true;
      });
      return work(uow);
    });
    if (wroteOutbox) this.#onCommitted?.();
    return { result, emitted: [] };
  }

  #selectDomains(db: Db, names: readonly string[]) {
    let query = db
      .selectFrom('fleetgate_world_domains')
      .selectAll()
      .where('name', 'in', [...names])
      .orderBy('name');
    if (this.#kind === 'postgres') query = query.forUpdate();
    return query.execute();
  }

  #unitOfWork(trx: Transaction<SqlWorldDatabase>, onEmit: () => void): WorldUnitOfWork {
    /** What this unit of work loaded of each domain, to write back only what changed. */
    const loaded = new Map<string, LoadedRows>();
    return {
      claim: async (ids, now) => {
        const fresh = new Set<string>();
        // Sorted, so two replicas claiming overlapping batches lock the ids in the same order.
        const sorted = [...new Set(ids)].sort();
        for (const chunk of chunks(sorted, INSERT_CHUNK)) {
          const rows = await trx
            .insertInto('fleetgate_world_events')
            .values(chunk.map((event_id) => ({ event_id, applied_at: now })))
            .onConflict((oc) => oc.column('event_id').doNothing())
            .returning('event_id')
            .execute();
          for (const row of rows) fresh.add(row.event_id);
        }
        return fresh;
      },
      load: async (names, init, needs) => {
        const out = new Map<string, LoadedDomain>();
        if (names.length === 0) return out;
        const sorted = [...new Set(names)].sort();
        const found = await this.#selectDomains(trx, sorted);
        const missing = sorted.filter((name) => !found.some((row) => row.name === name));
        const ours = new Set<string>();
        if (missing.length > 0) {
          const created = missing.map(init);
          const inserted = await trx
            .insertInto('fleetgate_world_domains')
            .values(
              created.map((d) => ({
                name: d.name,
                version: d.version,
                state: encodeHeader({ bytes: 0, next: 1 }),
                base_state: JSON.stringify(d.base),
                base_version: d.baseVersion,
                updated_at: d.updatedAt,
              })),
            )
            .onConflict((oc) => oc.column('name').doNothing())
            .returning('name')
            .execute();
          for (const row of inserted) ours.add(row.name);
          for (const d of created) {
            if (!ours.has(d.name)) continue;
            // Created here: its state is the initial one, every row still to be written.
            loaded.set(d.name, { rows: new Map(), header: { bytes: 0, next: 1 } });
            d.bytes = 0;
            for (const row of splitState(d.state, SPLIT_DEPTH)) d.bytes += rowBytes(row);
            out.set(d.name, { domain: d, created: true });
          }
          // A row another replica created meanwhile is read (and locked) like any other.
          const raced = missing.filter((name) => !ours.has(name));
          if (raced.length > 0) found.push(...(await this.#selectDomains(trx, raced)));
        }
        for (const [name, domain] of await loadDomainRows(trx, found, needs)) {
          loaded.set(name, domain.loaded);
          out.set(name, { domain: domain.stored, created: false });
        }
        return out;
      },
      save: async (domains) => {
        for (const d of domains) {
          const before = loaded.get(d.name);
          if (before === undefined) continue;
          const header = await writeValueRows(trx, d, before);
          await trx
            .updateTable('fleetgate_world_domains')
            .set({
              state: encodeHeader(header),
              version: d.version,
              updated_at: d.updatedAt,
            })
            .where('name', '=', d.name)
            .execute();
          d.bytes = header.bytes;
        }
      },
      discard: async (names) => {
        if (names.length === 0) return;
        await trx
          .deleteFrom('fleetgate_world_values')
          .where('domain', 'in', [...names])
          .execute();
        await trx
          .deleteFrom('fleetgate_world_domains')
          .where('name', 'in', [...names])
          .execute();
      },
      audit: async (records) => {
        // The audit log is the bulk of every write (one row per entry): the statement text is
        // built once per chunk size and the rows are bound directly, skipping the query
        // builder, which cost more than the insert itself.
        for (const chunk of chunks(records, INSERT_CHUNK)) {
          const params: unknown[] = [];
          for (const record of chunk) auditParams(toAuditRow(record, this.#auditMax), params);
          await trx.executeQuery(
            CompiledQuery.raw(auditInsertSql(this.#kind, chunk.length), params),
          );
        }
      },
      emit: async (events) => {
        if (events.length === 0) return;
        await this.#outbox.writeEvents(trx, this.#kind, events, Date.now());
        onEmit();
      },
    };
  }

  /**
   * The unit of work on a SQLite store's direct statements: the same rows as {@link #unitOfWork},
   * one prepared statement per row. SQLite has one writer, so nothing else changes the domains
   * while the write runs (no locks to take).
   */
  #directUnitOfWork(sql: WorldSqlStatements, onEmit: () => void): WorldUnitOfWork {
    const loaded = new Map<string, LoadedRows>();
    return {
      claim: (ids, now) =>
        settled(() => {
          const fresh = new Set<string>();
          for (const id of [...new Set(ids)].sort()) {
            if (sql.run(CLAIM_EVENT, [id, now]).changes === 1) fresh.add(id);
          }
          return fresh;
        }),
      load: (names, init, needs) =>
        settled(() => {
          const out = new Map<string, LoadedDomain>();
          const found: WorldDomainTable[] = [];
          for (const name of [...new Set(names)].sort()) {
            const row = sql.get<WorldDomainTable>(SELECT_DOMAIN, [name]);
            if (row !== undefined) {
              found.push(row);
              continue;
            }
            const d = init(name);
            const created =
              sql.run(INSERT_DOMAIN, [
                d.name,
                d.version,
                encodeHeader({ bytes: 0, next: 1 }),
                JSON.stringify(d.base),
                d.baseVersion,
                d.updatedAt,
              ]).changes === 1;
            if (!created) {
              // Another writer of the file created it meanwhile: read it like any other.
              const raced = sql.get<WorldDomainTable>(SELECT_DOMAIN, [name]);
              if (raced !== undefined) found.push(raced);
              continue;
            }
            // Created here: its state is the initial one, every row still to be written.
            loaded.set(d.name, { rows: new Map(), header: { bytes: 0, next: 1 } });
            d.bytes = 0;
            for (const row of splitState(d.state, SPLIT_DEPTH)) d.bytes += rowBytes(row);
            out.set(d.name, { domain: d, created: true });
          }
          for (const [name, domain] of loadDomainRowsDirect(sql, found, needs)) {
            loaded.set(name, domain.loaded);
            out.set(name, { domain: domain.stored, created: false });
          }
          return out;
        }),
      save: (domains) =>
        settled(() => {
          for (const d of domains) {
            const before = loaded.get(d.name);
            if (before === undefined) continue;
            const header = writeValueRowsDirect(sql, d, before);
            sql.run(UPDATE_DOMAIN, [encodeHeader(header), d.version, d.updatedAt, d.name]);
            d.bytes = header.bytes;
          }
        }),
      discard: (names) =>
        settled(() => {
          for (const name of names) {
            sql.run(DELETE_DOMAIN_VALUES, [name]);
            sql.run(DELETE_DOMAIN, [name]);
          }
        }),
      audit: (records) =>
        settled(() => {
          // One prepared row statement, bound per record: SQLite parses it once, while a
          // statement per batch size would be prepared again for every new size.
          const text = auditInsertSql('sqlite', 1);
          for (const record of records) {
            const params: unknown[] = [];
            auditParams(toAuditRow(record, this.#auditMax), params);
            sql.run(text, params);
          }
        }),
      emit: (events) =>
        settled(() => {
          if (events.length === 0) return;
          this.#outbox.insertRows(sql, events, Date.now());
          onEmit();
        }),
    };
  }

  async seed(name: string, state: JsonObject, now: number): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('fleetgate_world_domains')
        .values({
          name,
          version: 0,
          state: encodeHeader({ bytes: 0, next: 1 }),
          base_state: JSON.stringify(state),
          base_version: 0,
          updated_at: now,
        })
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('name')
        .execute();
      if (inserted.length === 0) return false;
      const domain: StoredDomain = {
        name,
        version: 0,
        state,
        updatedAt: now,
        base: state,
        baseVersion: 0,
      };
      const header = await writeValueRows(trx, domain, {
        rows: new Map(),
        header: { bytes: 0, next: 1 },
      });
      await trx
        .updateTable('fleetgate_world_domains')
        .set({ state: encodeHeader(header) })
        .where('name', '=', name)
        .execute();
      return true;
    });
  }

  async domain(name: string): Promise<StoredDomain | undefined> {
    const row = await this.#db
      .selectFrom('fleetgate_world_domains')
      .selectAll()
      .where('name', '=', name)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return (await loadDomainRows(this.#db, [row], undefined)).get(name)?.stored;
  }

  async domains(): Promise<StoredDomain[]> {
    const rows = await this.#db
      .selectFrom('fleetgate_world_domains')
      .selectAll()
      .orderBy('name')
      .execute();
    const values = await this.#db
      .selectFrom('fleetgate_world_values')
      .select(['domain', 'path', 'kind', 'value', 'pos'])
      .execute();
    const byDomain = groupValueRows(values);
    return rows.map((row) => {
      const header = decodeHeader(row.state);
      return {
        name: row.name,
        version: Number(row.version),
        updatedAt: Number(row.updated_at),
        ...toBase(row),
        state:
          header === undefined
            ? (JSON.parse(row.state) as JsonObject)
            : assembleState(byDomain.get(row.name) ?? []),
        ...(header === undefined ? {} : { bytes: header.bytes }),
      };
    });
  }

  async history(domain: string, query: HistoryQuery = {}): Promise<AuditRecord[]> {
    const q = normaliseHistoryQuery(query);
    let select = this.#db
      .selectFrom('fleetgate_world_audit')
      .selectAll()
      .where('domain', '=', domain);
    if (q.path !== undefined) {
      const prefix = `${q.path}.`;
      const length = [...prefix].length;
      select = select.where((eb) =>
        eb.or([eb('path', '=', q.path!), eb(sql`substr(path, 1, ${length})`, '=', prefix)]),
      );
    }
    if (q.since !== undefined) select = select.where('recorded_at', '>=', q.since);
    if (q.afterSeq !== undefined) select = select.where('seq', '>', q.afterSeq);
    if (q.status !== undefined) select = select.where('status', '=', q.status);
    const rows = await select.orderBy('seq', q.order).limit(q.limit).execute();
    return rows.map(toAuditRecord);
  }

  async appliedSinceBase(domain: string): Promise<AuditRecord[]> {
    const rows = await this.#db
      .selectFrom('fleetgate_world_audit')
      .selectAll()
      .where('domain', '=', domain)
      .where('status', '=', 'applied')
      .orderBy('seq')
      .execute();
    return rows.map(toAuditRecord);
  }

  async prune(options: {
    before: number;
    eventIdsBefore: number;
    fold: (base: JsonObject, applied: readonly AuditRecord[]) => JsonObject;
  }): Promise<PruneResult> {
    return this.#db.transaction().execute(async (trx) => {
      const cuts = await trx
        .selectFrom('fleetgate_world_audit')
        .select(['domain', (eb) => eb.fn.max('seq').as('max_seq')])
        .where('recorded_at', '<', options.before)
        .groupBy('domain')
        .orderBy('domain')
        .execute();
      let auditRecords = 0;
      for (const cut of cuts) {
        const maxSeq = Number(cut.max_seq);
        const [row] = await this.#selectDomains(trx, [cut.domain]);
        const applied = (
          await trx
            .selectFrom('fleetgate_world_audit')
            .selectAll()
            .where('domain', '=', cut.domain)
            .where('status', '=', 'applied')
            .where('seq', '<=', maxSeq)
            .orderBy('seq')
            .execute()
        ).map(toAuditRecord);
        if (row !== undefined && applied.length > 0) {
          const domain = toBase(row);
          const base = options.fold(domain.base, applied);
          await trx
            .updateTable('fleetgate_world_domains')
            .set({
              base_state: JSON.stringify(base),
              base_version: applied[applied.length - 1]!.version ?? domain.baseVersion,
            })
            .where('name', '=', cut.domain)
            .execute();
        }
        const deleted = await trx
          .deleteFrom('fleetgate_world_audit')
          .where('domain', '=', cut.domain)
          .where('seq', '<=', maxSeq)
          .executeTakeFirst();
        auditRecords += Number(deleted.numDeletedRows);
      }
      const events = await trx
        .deleteFrom('fleetgate_world_events')
        .where('applied_at', '<', options.eventIdsBefore)
        .executeTakeFirst();
      return { auditRecords, eventIds: Number(events.numDeletedRows) };
    });
  }
}

/**
 * Creates the SQL {@link WorldStore} over an open store.
 *
 * @example
 * ```ts
 * const store = await openStore('sqlite:./data/fleetgate.db');
 * const relay = createOutboxRelay({ db: store.db, bus });
 * const world = createSqlWorldStore({
 *   db: store.db,
 *   kind: store.kind,
 *   outbox: OUTBOX_WRITERS,
 *   onCommitted: relay.notify,
 * });
 * ```
 */
export function createSqlWorldStore<DB extends SqlWorldDatabase>(
  options: SqlWorldStoreOptions<DB>,
): SqlWorldStore {
  // Kysely's type parameter is invariant; a database with more tables than these is still one
  // this store can use, so it is narrowed to the tables the store touches.
  const db = options.db as unknown as Kysely<SqlWorldDatabase>;
  return new SqlWorldStore({ ...options, db });
}
