/**
 * A domain's rows in `fleetgate_world_values` (see `value-rows.ts` for the model): what a unit of
 * work of the SQL world store loads of a domain, and how it writes back only what changed.
 */
import type { Kysely, Transaction } from 'kysely';
import type { JsonObject } from './json.js';
import { INSERT_CHUNK, chunks } from './sql-rows.js';
import type { SqlWorldDatabase } from './sql-world-store.js';
import type { WorldDomainTable } from './store-tables.js';
import type { StoredDomain } from './types.js';
import type { PathNeed, RowsHeader, SplitRow, ValueRow } from './value-rows.js';
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

/**
 * The rows of one domain a unit of work needs (all of them without `need`), as a partial tree.
 * A domain an older store kept whole is read whole; its first save writes it as rows.
 */
export async function loadDomainRows(
  db: Db,
  row: WorldDomainTable,
  need: readonly PathNeed[] | undefined,
): Promise<{ stored: StoredDomain; loaded: LoadedRows }> {
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
    return {
      stored: { ...base, state, bytes },
      loaded: { rows: new Map(), header: { bytes: 0, next: 1 } },
    };
  }
  const rows = await selectValueRows(db, row.name, need);
  const byPath = new Map<string, ValueRow>();
  for (const r of rows) byPath.set(r.path, r);
  return {
    stored: { ...base, state: assembleState(rows), bytes: header.bytes },
    loaded: { rows: byPath, header },
  };
}

/** Rows of `domain`: those `need` asks for, or all. */
async function selectValueRows(
  db: Db,
  domain: string,
  need: readonly PathNeed[] | undefined,
): Promise<ValueRow[]> {
  let query = db
    .selectFrom('fleetgate_world_values')
    .select(['path', 'kind', 'value', 'pos'])
    .where('domain', '=', domain);
  if (need !== undefined) {
    const { paths, subtrees } = rowsNeeded(need, SPLIT_DEPTH);
    if (paths.size === 0) return [];
    // Rows below a prefix P are exactly those in [P + '.', P + '/'): '/' follows '.' in byte
    // order, the column's collation on both engines.
    query = query.where((eb) =>
      eb.or([
        eb('path', 'in', [...paths]),
        ...[...subtrees].map((p) => eb.and([eb('path', '>', `${p}.`), eb('path', '<', `${p}/`)])),
      ]),
    );
  }
  const rows = await query.execute();
  return rows.map((r) => ({
    path: r.path,
    kind: r.kind as ValueRow['kind'],
    value: r.value,
    pos: Number(r.pos),
  }));
}

/**
 * Writes what changed between the rows a unit of work loaded and the rows of the domain's
 * (partial) state now: new rows inserted, changed ones updated in place (keeping their
 * position), rows that are gone deleted. Returns the new header.
 */
export async function writeValueRows(
  db: Db,
  domain: StoredDomain,
  before: LoadedRows,
): Promise<RowsHeader> {
  const now = splitState(domain.state, SPLIT_DEPTH);
  let { bytes, next } = before.header;
  const inserts: ValueRow[] = [];
  const updates: SplitRow[] = [];
  const kept = new Set<string>();
  for (const row of now) {
    kept.add(row.path);
    const old = before.rows.get(row.path);
    if (old === undefined) {
      inserts.push({ ...row, pos: next });
      next += 1;
      bytes += rowBytes(row);
    } else if (old.kind !== row.kind || old.value !== row.value) {
      updates.push(row);
      bytes += rowBytes(row) - rowBytes(old);
    }
  }
  const gone: string[] = [];
  for (const [path, old] of before.rows) {
    if (kept.has(path)) continue;
    gone.push(path);
    bytes -= rowBytes(old);
  }
  for (const chunk of chunks(gone, INSERT_CHUNK)) {
    await db
      .deleteFrom('fleetgate_world_values')
      .where('domain', '=', domain.name)
      .where('path', 'in', chunk)
      .execute();
  }
  for (const row of updates) {
    await db
      .updateTable('fleetgate_world_values')
      .set({ kind: row.kind, value: row.value })
      .where('domain', '=', domain.name)
      .where('path', '=', row.path)
      .execute();
  }
  for (const chunk of chunks(inserts, INSERT_CHUNK)) {
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
  // What is stored now is what was loaded plus these changes (a second save writes the rest).
  for (const path of gone) before.rows.delete(path);
  for (const row of updates) {
    const old = before.rows.get(row.path)!;
    before.rows.set(row.path, { ...row, pos: old.pos });
  }
  for (const row of inserts) before.rows.set(row.path, row);
  before.header = { bytes, next };
  return before.header;
}
