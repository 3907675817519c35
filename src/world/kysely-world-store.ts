/**
 * The world store through kysely: the store's PostgreSQL implementation (it runs on SQLite too, for
 * a caller that holds no direct access), each unit of work one kysely transaction with the domain
 * rows locked `FOR UPDATE` on PostgreSQL. `sqlite-world-store.ts` is the SQLite one, and
 * `test/sql-world-store.test.ts` holds both to one contract.
 */
import type { Kysely, Transaction } from 'kysely';
import { CompiledQuery, sql } from 'kysely';
import type { JsonObject } from './json.js';
import { normaliseHistoryQuery } from './history-query.js';
import type { SqlWorldDatabase } from './store-tables.js';
import {
  INSERT_CHUNK,
  auditInsertSql,
  auditParams,
  chunks,
  toAuditRecord,
  toAuditRow,
} from './sql-rows.js';
import { encodeHeader } from './value-rows.js';
import type { LoadedRows } from './sql-value-rows.js';
import { loadDomainRows, writeValueRows } from './sql-value-rows.js';
import {
  SqlWorldStore,
  assembleDomains,
  createdDomain,
  foldedBase,
  newDomainRow,
  noRows,
  seededDomain,
  type PruneOptions,
  type SqlWorldSettings,
} from './sql-world-base.js';
import type {
  AuditRecord,
  HistoryQuery,
  LoadedDomain,
  PruneResult,
  StoredDomain,
  WorldUnitOfWork,
} from './types.js';

type Db = Kysely<SqlWorldDatabase> | Transaction<SqlWorldDatabase>;

/** The world store through kysely; see the file comment. */
export class KyselyWorldStore extends SqlWorldStore {
  readonly #db: Kysely<SqlWorldDatabase>;
  readonly #kind: 'sqlite' | 'postgres';

  constructor(
    db: Kysely<SqlWorldDatabase>,
    kind: 'sqlite' | 'postgres',
    settings: SqlWorldSettings,
  ) {
    super(settings);
    this.#db = db;
    this.#kind = kind;
  }

  protected runUnitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
    onEmit: () => void,
  ): Promise<T> {
    return this.#db.transaction().execute((trx) => work(this.#unitOfWork(trx, onEmit)));
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
            .values(created.map(newDomainRow))
            .onConflict((oc) => oc.column('name').doNothing())
            .returning('name')
            .execute();
          for (const row of inserted) ours.add(row.name);
          for (const d of created) {
            if (ours.has(d.name)) out.set(d.name, createdDomain(d, loaded));
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
          for (const record of chunk) {
            auditParams(toAuditRow(record, this.settings.auditMax), params);
          }
          await trx.executeQuery(
            CompiledQuery.raw(auditInsertSql(this.#kind, chunk.length), params),
          );
        }
      },
      emit: async (events) => {
        if (events.length === 0) return;
        await this.settings.outbox.writeEvents(trx, this.#kind, events, Date.now());
        onEmit();
      },
    };
  }

  async seed(name: string, state: JsonObject, now: number): Promise<boolean> {
    const { row, domain } = seededDomain(name, state, now);
    return this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('fleetgate_world_domains')
        .values(row)
        .onConflict((oc) => oc.column('name').doNothing())
        .returning('name')
        .execute();
      if (inserted.length === 0) return false;
      const header = await writeValueRows(trx, domain, noRows());
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
    return assembleDomains(rows, values);
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

  appliedSinceBase(domain: string): Promise<AuditRecord[]> {
    return this.#applied(this.#db, domain);
  }

  /** The applied records of `domain` (up to `maxSeq`), oldest first. */
  async #applied(db: Db, domain: string, maxSeq?: number): Promise<AuditRecord[]> {
    let select = db
      .selectFrom('fleetgate_world_audit')
      .selectAll()
      .where('domain', '=', domain)
      .where('status', '=', 'applied');
    if (maxSeq !== undefined) select = select.where('seq', '<=', maxSeq);
    return (await select.orderBy('seq').execute()).map(toAuditRecord);
  }

  async prune(options: PruneOptions): Promise<PruneResult> {
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
        const applied = await this.#applied(trx, cut.domain, maxSeq);
        if (row !== undefined && applied.length > 0) {
          await trx
            .updateTable('fleetgate_world_domains')
            .set(foldedBase(row, applied, options.fold))
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
