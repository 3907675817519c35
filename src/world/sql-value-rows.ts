/**
 * A domain's rows in `fleetgate_world_values` (see `value-rows.ts` for the model): what a unit of
 * work of the SQL world store loads of a domain, and how it writes back only what changed.
 */
import type { Expression, Kysely, SqlBool, Transaction } from 'kysely';
import { expressionBuilder } from 'kysely';
import type { JsonObject } from './json.js';
import { INSERT_CHUNK, chunks } from './sql-rows.js';
import type { SqlWorldDatabase, WorldDomainTable, WorldValueTable } from './store-tables.js';
import type { SqliteStatements } from '../store/index.js';
import type { StoredDomain } from './types.js';
import type { PathNeed, RowsHeader, ValueRow } from './value-rows.js';
import {
  DEFAULT_SPLIT_DEPTH,
  assembleState,
  decodeHeader,
  rowBytes,
  rowsNeeded,
  splitState,
} from './value-rows.js';

/** Fixed for a store: rows written at one depth are read back at the same depth. */
export const SPLIT_DEPTH = DEFAULT_SPLIT_DEPTH;

type Db = Kysely<SqlWorldDatabase> | Transaction<SqlWorldDatabase>;

/** What a unit of work loaded of one domain: the rows as they are stored, and the header. */
export interface LoadedRows {
  rows: Map<string, ValueRow>;
  header: RowsHeader;
}

export function toBase(row: WorldDomainTable): Pick<StoredDomain, 'base' | 'baseVersion'> {
  return {
    base: JSON.parse(row.base_state) as JsonObject,
    baseVersion: Number(row.base_version),
  };
}

/** One domain as a unit of work loaded it. */
export interface LoadedDomainRows {
  stored: StoredDomain;
  loaded: LoadedRows;
}

/** A domain whose rows a unit of work reads, and which of them it needs. */
interface WantedRows {
  name: string;
  need: readonly PathNeed[] | undefined;
}

/**
 * The domains as far as their domain rows tell (the value rows still to read), and the value
 * rows to read for each.
 */
function domainsToLoad(
  domains: readonly WorldDomainTable[],
  needs: ReadonlyMap<string, readonly PathNeed[]> | undefined,
): { out: Map<string, LoadedDomainRows>; wanted: WantedRows[] } {
  const out = new Map<string, LoadedDomainRows>();
  const wanted: WantedRows[] = [];
  for (const row of domains) {
    const header = decodeHeader(row.state);
    const base = {
      name: row.name,
      version: Number(row.version),
      updatedAt: Number(row.updated_at),
      ...toBase(row),
    };
    if (header === undefined) {
      const state = JSON.parse(row.state) as JsonObject;
      let bytes = 0;
      for (const r of splitState(state, SPLIT_DEPTH)) bytes += rowBytes(r);
      // Nothing loaded as rows: the first save writes every row (and the header).
      out.set(row.name, {
        stored: { ...base, state, bytes },
        loaded: { rows: new Map(), header: { bytes: 0, next: 1 } },
      });
      continue;
    }
    out.set(row.name, {
      stored: { ...base, state: {}, bytes: header.bytes },
      loaded: { rows: new Map(), header },
    });
    wanted.push({ name: row.name, need: needs?.get(row.name) });
  }
  return { out, wanted };
}

/** Builds each wanted domain's partial state from the value rows read for it. */
function assembleLoaded(
  out: Map<string, LoadedDomainRows>,
  wanted: readonly WantedRows[],
  rows: ReadonlyMap<string, ValueRow[]>,
): Map<string, LoadedDomainRows> {
  for (const { name } of wanted) {
    const entry = out.get(name)!;
    const mine = rows.get(name) ?? [];
    for (const r of mine) entry.loaded.rows.set(r.path, r);
    entry.stored.state = assembleState(mine);
  }
  return out;
}

/**
 * The rows the domains need (all of a domain's rows when `needs` has nothing for it), as partial
 * trees, read in one query. A domain an older store kept whole is read whole; its first save
 * writes it as rows.
 */
export async function loadDomainRows(
  db: Db,
  domains: readonly WorldDomainTable[],
  needs: ReadonlyMap<string, readonly PathNeed[]> | undefined,
): Promise<Map<string, LoadedDomainRows>> {
  const { out, wanted } = domainsToLoad(domains, needs);
  return assembleLoaded(out, wanted, await selectValueRows(db, wanted));
}

/** {@link loadDomainRows} through a SQLite store's direct statements. */
export function loadDomainRowsDirect(
  sql: SqliteStatements,
  domains: readonly WorldDomainTable[],
  needs: ReadonlyMap<string, readonly PathNeed[]> | undefined,
): Map<string, LoadedDomainRows> {
  const { out, wanted } = domainsToLoad(domains, needs);
  return assembleLoaded(out, wanted, selectValueRowsDirect(sql, wanted));
}

/**
 * The value-row query of the wanted domains, as SQL text with `?` placeholders and its
 * parameters; undefined when no row is needed.
 */
function valueRowsQuery(
  wanted: readonly WantedRows[],
): { text: string; params: unknown[] } | undefined {
  const filters: string[] = [];
  const params: unknown[] = [];
  for (const { name, need } of wanted) {
    if (need === undefined) {
      filters.push('"domain" = ?');
      params.push(name);
      continue;
    }
    const { paths, subtrees } = rowsNeeded(need, SPLIT_DEPTH);
    if (paths.size === 0) continue;
    // Each term names the domain, so each is one lookup of the (domain, path) key (an OR nested
    // inside one domain's term lets SQLite's planner read every row of the domain). Rows below a
    // prefix P are exactly those in [P + '.', P + '/'): '/' follows '.' in byte order.
    filters.push(`("domain" = ? and "path" in (${Array.from(paths, () => '?').join(', ')}))`);
    params.push(name, ...paths);
    for (const p of subtrees) {
      filters.push('("domain" = ? and "path" > ? and "path" < ?)');
      params.push(name, `${p}.`, `${p}/`);
    }
  }
  if (filters.length === 0) return undefined;
  return {
    text: `select "domain", "path", "kind", "value", "pos" from "fleetgate_world_values" where ${filters.join(' or ')}`,
    params,
  };
}

/** Value rows grouped by domain, in the order they were read. */
export function groupValueRows(
  rows: readonly Pick<WorldValueTable, 'domain' | 'path' | 'kind' | 'value' | 'pos'>[],
): Map<string, ValueRow[]> {
  const out = new Map<string, ValueRow[]>();
  for (const r of rows) {
    let list = out.get(r.domain);
    if (list === undefined) out.set(r.domain, (list = []));
    list.push({
      path: r.path,
      kind: r.kind as ValueRow['kind'],
      value: r.value,
      pos: Number(r.pos),
    });
  }
  return out;
}

function selectValueRowsDirect(
  sql: SqliteStatements,
  wanted: readonly WantedRows[],
): Map<string, ValueRow[]> {
  const query = valueRowsQuery(wanted);
  if (query === undefined) return new Map();
  return groupValueRows(sql.all<WorldValueTable>(query.text, query.params));
}

/** The rows each domain's need asks for (all of them without one), by domain, in one query. */
async function selectValueRows(
  db: Db,
  wanted: readonly WantedRows[],
): Promise<Map<string, ValueRow[]>> {
  const filters: Expression<SqlBool>[] = [];
  const eb = expressionBuilder<SqlWorldDatabase, 'fleetgate_world_values'>();
  for (const { name, need } of wanted) {
    if (need === undefined) {
      filters.push(eb('domain', '=', name));
      continue;
    }
    const { paths, subtrees } = rowsNeeded(need, SPLIT_DEPTH);
    if (paths.size === 0) continue;
    // Each term names the domain, so each is one lookup of the (domain, path) key: under an OR
    // nested inside one domain's term, SQLite's planner used the domain alone and read every row
    // of the domain (a domain that grows by pushes made every unit of work slower).
    filters.push(eb.and([eb('domain', '=', name), eb('path', 'in', [...paths])]));
    // Rows below a prefix P are exactly those in [P + '.', P + '/'): '/' follows '.' in byte
    // order, the column's collation on both engines.
    for (const p of subtrees) {
      filters.push(
        eb.and([eb('domain', '=', name), eb('path', '>', `${p}.`), eb('path', '<', `${p}/`)]),
      );
    }
  }
  if (filters.length === 0) return new Map();
  const rows = await db
    .selectFrom('fleetgate_world_values')
    .select(['domain', 'path', 'kind', 'value', 'pos'])
    .where(eb.or(filters))
    .execute();
  return groupValueRows(rows);
}

/** What a save writes of a domain's rows: upserts, deletions, and the header after them. */
interface RowsPlan {
  writes: ValueRow[];
  gone: string[];
  header: RowsHeader;
}

/** Compares the rows a unit of work loaded with the rows of the domain's (partial) state now. */
function planValueRows(domain: StoredDomain, before: LoadedRows): RowsPlan {
  const now = splitState(domain.state, SPLIT_DEPTH);
  let { bytes, next } = before.header;
  // New rows and changed ones, written by upserts: a changed row keeps its position.
  const writes: ValueRow[] = [];
  const kept = new Set<string>();
  for (const row of now) {
    kept.add(row.path);
    const old = before.rows.get(row.path);
    if (old === undefined) {
      writes.push({ ...row, pos: next });
      next += 1;
      bytes += rowBytes(row);
    } else if (old.kind !== row.kind || old.value !== row.value) {
      writes.push({ ...row, pos: old.pos });
      bytes += rowBytes(row) - rowBytes(old);
    }
  }
  const gone: string[] = [];
  for (const [path, old] of before.rows) {
    if (kept.has(path)) continue;
    gone.push(path);
    bytes -= rowBytes(old);
  }
  return { writes, gone, header: { bytes, next } };
}

/** What is stored now is what was loaded plus the plan's changes (a second save writes the rest). */
function applyPlan(before: LoadedRows, plan: RowsPlan): RowsHeader {
  for (const path of plan.gone) before.rows.delete(path);
  for (const row of plan.writes) before.rows.set(row.path, row);
  before.header = plan.header;
  return before.header;
}

/**
 * Writes what changed between the rows a unit of work loaded and the rows of the domain's
 * (partial) state now: new and changed rows upserted (a changed row keeps its position), rows
 * that are gone deleted. Returns the new header.
 */
export async function writeValueRows(
  db: Db,
  domain: StoredDomain,
  before: LoadedRows,
): Promise<RowsHeader> {
  const plan = planValueRows(domain, before);
  for (const chunk of chunks(plan.gone, INSERT_CHUNK)) {
    await db
      .deleteFrom('fleetgate_world_values')
      .where('domain', '=', domain.name)
      .where('path', 'in', chunk)
      .execute();
  }
  for (const chunk of chunks(plan.writes, INSERT_CHUNK)) {
    await db
      .insertInto('fleetgate_world_values')
      .values(
        chunk.map((r) => ({
          domain: domain.name,
          path: r.path,
          kind: r.kind,
          value: r.value,
          pos: r.pos,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['domain', 'path']).doUpdateSet((eb) => ({
          kind: eb.ref('excluded.kind'),
          value: eb.ref('excluded.value'),
        })),
      )
      .execute();
  }
  return applyPlan(before, plan);
}

const DELETE_VALUE_ROW = 'delete from "fleetgate_world_values" where "domain" = ? and "path" = ?';
const UPSERT_VALUE_ROW =
  'insert into "fleetgate_world_values" ("domain", "path", "kind", "value", "pos") values (?, ?, ?, ?, ?) ' +
  'on conflict ("domain", "path") do update set "kind" = "excluded"."kind", "value" = "excluded"."value"';

/** {@link writeValueRows} through a SQLite store's direct statements (one prepared row each). */
export function writeValueRowsDirect(
  sql: SqliteStatements,
  domain: StoredDomain,
  before: LoadedRows,
): RowsHeader {
  const plan = planValueRows(domain, before);
  for (const path of plan.gone) sql.run(DELETE_VALUE_ROW, [domain.name, path]);
  for (const r of plan.writes)
    sql.run(UPSERT_VALUE_ROW, [domain.name, r.path, r.kind, r.value, r.pos]);
  return applyPlan(before, plan);
}
