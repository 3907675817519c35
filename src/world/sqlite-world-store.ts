/**
 * The world store on a SQLite store's direct access (the store's `SqliteAccess`): every query a prepared
 * statement, every write (a unit of work, a seed, a prune) one group-committed unit. SQLite has one
 * writer, so nothing else changes the domains while a write runs (no locks to take). The store's
 * SQLite implementation; `kysely-world-store.ts` is its PostgreSQL one, and
 * `test/sql-world-store.test.ts` holds both to one contract.
 */
import type { Selectable } from 'kysely';
import type { JsonObject } from './json.js';
import type { NormalisedHistoryQuery } from './history-query.js';
import { normaliseHistoryQuery } from './history-query.js';
import type { SqliteAccess, SqliteStatements } from '../store/index.js';
import type { WorldAuditTable, WorldDomainTable, WorldValueTable } from './store-tables.js';
import { auditInsertSql, auditParams, toAuditRecord, toAuditRow } from './sql-rows.js';
import { encodeHeader } from './value-rows.js';
import type { LoadedRows } from './sql-value-rows.js';
import { loadDomainRowsDirect, writeValueRowsDirect } from './sql-value-rows.js';
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

/** `fn`'s result as a promise, a throw as a rejection: the direct statements are synchronous. */
function settled<T>(fn: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(fn()));
}

/** An audit row as read back. */
type AuditRow = Selectable<WorldAuditTable>;

const CLAIM_EVENT =
  'insert into "fleetgate_world_events" ("event_id", "applied_at") values (?, ?) on conflict ("event_id") do nothing';
const SELECT_DOMAIN = 'select * from "fleetgate_world_domains" where "name" = ?';
const SELECT_DOMAINS = 'select * from "fleetgate_world_domains" order by "name"';
const SELECT_VALUES =
  'select "domain", "path", "kind", "value", "pos" from "fleetgate_world_values"';
const INSERT_DOMAIN =
  'insert into "fleetgate_world_domains" ("name", "version", "state", "base_state", "base_version", "updated_at") ' +
  'values (?, ?, ?, ?, ?, ?) on conflict ("name") do nothing';
const UPDATE_DOMAIN =
  'update "fleetgate_world_domains" set "state" = ?, "version" = ?, "updated_at" = ? where "name" = ?';
const UPDATE_HEADER = 'update "fleetgate_world_domains" set "state" = ? where "name" = ?';
const UPDATE_BASE =
  'update "fleetgate_world_domains" set "base_state" = ?, "base_version" = ? where "name" = ?';
const DELETE_DOMAIN_VALUES = 'delete from "fleetgate_world_values" where "domain" = ?';
const DELETE_DOMAIN = 'delete from "fleetgate_world_domains" where "name" = ?';
const SELECT_AUDIT = 'select * from "fleetgate_world_audit" where "domain" = ?';
const SELECT_APPLIED = `${SELECT_AUDIT} and "status" = ? order by "seq"`;
const SELECT_APPLIED_UP_TO = `${SELECT_AUDIT} and "status" = ? and "seq" <= ? order by "seq"`;
const SELECT_CUTS =
  'select "domain", max("seq") as "max_seq" from "fleetgate_world_audit" where "recorded_at" < ? ' +
  'group by "domain" order by "domain"';
const DELETE_AUDIT_UP_TO = 'delete from "fleetgate_world_audit" where "domain" = ? and "seq" <= ?';
const DELETE_EVENT_IDS = 'delete from "fleetgate_world_events" where "applied_at" < ?';

/** The parameters of {@link INSERT_DOMAIN} for `row`, in its column order. */
function insertDomainParams(row: WorldDomainTable): unknown[] {
  return [row.name, row.version, row.state, row.base_state, row.base_version, row.updated_at];
}

/** The history query as SQL text and parameters: the kysely implementation's filters, in order. */
function historyQuery(
  domain: string,
  q: NormalisedHistoryQuery,
): { text: string; params: unknown[] } {
  let text = SELECT_AUDIT;
  const params: unknown[] = [domain];
  if (q.path !== undefined) {
    // The prefix test counts characters (substr's unit for text), not bytes or UTF-16 units.
    const prefix = `${q.path}.`;
    text += ' and ("path" = ? or substr(path, 1, ?) = ?)';
    params.push(q.path, [...prefix].length, prefix);
  }
  if (q.since !== undefined) {
    text += ' and "recorded_at" >= ?';
    params.push(q.since);
  }
  if (q.afterSeq !== undefined) {
    text += ' and "seq" > ?';
    params.push(q.afterSeq);
  }
  if (q.status !== undefined) {
    text += ' and "status" = ?';
    params.push(q.status);
  }
  text += ` order by "seq" ${q.order === 'asc' ? 'asc' : 'desc'} limit ?`;
  params.push(q.limit);
  return { text, params };
}

/** The world store on `direct`; see the file comment. */
export class SqliteWorldStore extends SqlWorldStore {
  readonly #direct: SqliteAccess;

  constructor(direct: SqliteAccess, settings: SqlWorldSettings) {
    super(settings);
    this.#direct = direct;
  }

  protected runUnitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
    onEmit: () => void,
  ): Promise<T> {
    // Joins the claims and relay marks committed in the same turn of the event loop: one
    // commit (and one write of the pages they share) for all of them.
    return this.#direct.write((sql) => work(this.#directUnitOfWork(sql, onEmit)), {
      group: 'loop',
    });
  }

  /**
   * The unit of work on the direct statements: the same rows as the kysely implementation's, one
   * prepared statement per row.
   */
  #directUnitOfWork(sql: SqliteStatements, onEmit: () => void): WorldUnitOfWork {
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
            if (sql.run(INSERT_DOMAIN, insertDomainParams(newDomainRow(d))).changes === 1) {
              out.set(d.name, createdDomain(d, loaded));
              continue;
            }
            // Another writer of the file created it meanwhile: read it like any other.
            const raced = sql.get<WorldDomainTable>(SELECT_DOMAIN, [name]);
            if (raced !== undefined) found.push(raced);
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
            auditParams(toAuditRow(record, this.settings.auditMax), params);
            sql.run(text, params);
          }
        }),
      emit: (events) =>
        settled(() => {
          if (events.length === 0) return;
          this.settings.outbox.insertRows(sql, events, Date.now());
          onEmit();
        }),
    };
  }

  seed(name: string, state: JsonObject, now: number): Promise<boolean> {
    const { row, domain } = seededDomain(name, state, now);
    return this.#direct.write((sql) => {
      if (sql.run(INSERT_DOMAIN, insertDomainParams(row)).changes !== 1) return false;
      const header = writeValueRowsDirect(sql, domain, noRows());
      sql.run(UPDATE_HEADER, [encodeHeader(header), name]);
      return true;
    });
  }

  domain(name: string): Promise<StoredDomain | undefined> {
    return this.#direct.read((sql) => {
      const row = sql.get<WorldDomainTable>(SELECT_DOMAIN, [name]);
      if (row === undefined) return undefined;
      return loadDomainRowsDirect(sql, [row], undefined).get(name)?.stored;
    });
  }

  domains(): Promise<StoredDomain[]> {
    return this.#direct.read((sql) =>
      assembleDomains(
        sql.all<WorldDomainTable>(SELECT_DOMAINS),
        sql.all<WorldValueTable>(SELECT_VALUES),
      ),
    );
  }

  async history(domain: string, query: HistoryQuery = {}): Promise<AuditRecord[]> {
    const { text, params } = historyQuery(domain, normaliseHistoryQuery(query));
    const rows = await this.#direct.read((sql) => sql.all<AuditRow>(text, params));
    return rows.map(toAuditRecord);
  }

  async appliedSinceBase(domain: string): Promise<AuditRecord[]> {
    const rows = await this.#direct.read((sql) =>
      sql.all<AuditRow>(SELECT_APPLIED, [domain, 'applied']),
    );
    return rows.map(toAuditRecord);
  }

  /** Retention as one write: each domain's old records folded into its base, then deleted. */
  prune(options: PruneOptions): Promise<PruneResult> {
    return this.#direct.write((sql) => {
      const cuts = sql.all<{ domain: string; max_seq: number }>(SELECT_CUTS, [options.before]);
      let auditRecords = 0;
      for (const cut of cuts) {
        const maxSeq = Number(cut.max_seq);
        const row = sql.get<WorldDomainTable>(SELECT_DOMAIN, [cut.domain]);
        const applied = sql
          .all<AuditRow>(SELECT_APPLIED_UP_TO, [cut.domain, 'applied', maxSeq])
          .map(toAuditRecord);
        if (row !== undefined && applied.length > 0) {
          const folded = foldedBase(row, applied, options.fold);
          sql.run(UPDATE_BASE, [folded.base_state, folded.base_version, cut.domain]);
        }
        auditRecords += sql.run(DELETE_AUDIT_UP_TO, [cut.domain, maxSeq]).changes;
      }
      const eventIds = sql.run(DELETE_EVENT_IDS, [options.eventIdsBefore]).changes;
      return { auditRecords, eventIds };
    });
  }
}
