/**
 * What the SQL world store's two implementations share (`sqlite-world-store.ts`,
 * `kysely-world-store.ts`): the class both extend, with the store's flags and settings and the
 * unit of work's commit notice, and the rows both build and read back the same way (a created or
 * seeded domain, the domains as a listing gives them, a base folded by retention). No I/O.
 */
import type { JsonObject } from './json.js';
import type { WorldOutbox } from './outbox-port.js';
import { SPLIT_DEPTH, groupValueRows, toBase, type LoadedRows } from './sql-value-rows.js';
import type { WorldDomainTable, WorldValueTable } from './store-tables.js';
import { assembleState, decodeHeader, encodeHeader, rowBytes, splitState } from './value-rows.js';
import type {
  AuditRecord,
  HistoryQuery,
  LoadedDomain,
  PruneResult,
  StoredDomain,
  WorldStore,
  WorldUnitOfWork,
} from './types.js';

/** Largest `previous` / `next` of an audit record written whole, by default (JSON bytes). */
export const DEFAULT_AUDIT_VALUE_MAX_BYTES = 8 * 1024;

/** What either implementation takes of the store's options. */
export interface SqlWorldSettings {
  /** Writes a unit of work's emissions into the outbox, inside it. */
  outbox: WorldOutbox;
  /** Called after a unit of work that wrote outbox rows committed. */
  onCommitted: (() => void) | undefined;
  /** Largest `previous` / `next` of an audit record written whole (JSON bytes). */
  auditMax: number;
}

/** What {@link WorldStore.prune} is given. */
export interface PruneOptions {
  before: number;
  eventIdsBefore: number;
  fold: (base: JsonObject, applied: readonly AuditRecord[]) => JsonObject;
}

/**
 * A {@link WorldStore} in the tables of the `0003_world` migration: its emissions go to the
 * transactional outbox, and a unit of work loads only the rows its entries need.
 */
export abstract class SqlWorldStore implements WorldStore {
  readonly durableEmit = true;
  readonly loadsByPath = true;
  protected readonly settings: SqlWorldSettings;

  protected constructor(settings: SqlWorldSettings) {
    this.settings = settings;
  }

  /** Runs `work` in one transaction; its emissions are outbox rows, so none come back. */
  async unitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
  ): Promise<{ result: T; emitted: [] }> {
    let wroteOutbox = false;
    const result = await this.runUnitOfWork(work, () => {
      wroteOutbox = true;
    });
    if (wroteOutbox) this.settings.onCommitted?.();
    return { result, emitted: [] };
  }

  /** Runs `work` in one transaction, on a unit of work that calls `onEmit` as it emits. */
  protected abstract runUnitOfWork<T>(
    work: (uow: WorldUnitOfWork) => Promise<T>,
    onEmit: () => void,
  ): Promise<T>;

  abstract seed(name: string, state: JsonObject, now: number): Promise<boolean>;
  abstract domain(name: string): Promise<StoredDomain | undefined>;
  abstract domains(): Promise<StoredDomain[]>;
  abstract history(domain: string, query?: HistoryQuery): Promise<AuditRecord[]>;
  abstract appliedSinceBase(domain: string): Promise<AuditRecord[]>;
  abstract prune(options: PruneOptions): Promise<PruneResult>;
}

/** Rows of a domain nothing was written of yet: the header of an empty domain. */
export function noRows(): LoadedRows {
  return { rows: new Map(), header: { bytes: 0, next: 1 } };
}

/** The row of a domain a unit of work creates: its header says no value row is written yet. */
export function newDomainRow(d: StoredDomain): WorldDomainTable {
  return {
    name: d.name,
    version: d.version,
    state: encodeHeader({ bytes: 0, next: 1 }),
    base_state: JSON.stringify(d.base),
    base_version: d.baseVersion,
    updated_at: d.updatedAt,
  };
}

/** A domain `load` just created: every row of it still to be written, its size that of its rows. */
export function createdDomain(d: StoredDomain, loaded: Map<string, LoadedRows>): LoadedDomain {
  loaded.set(d.name, noRows());
  d.bytes = 0;
  for (const row of splitState(d.state, SPLIT_DEPTH)) d.bytes += rowBytes(row);
  return { domain: d, created: true };
}

/** The domain row a seed inserts (its value rows are written after it) and the domain it holds. */
export function seededDomain(
  name: string,
  state: JsonObject,
  now: number,
): { row: WorldDomainTable; domain: StoredDomain } {
  const domain = { name, version: 0, state, updatedAt: now, base: state, baseVersion: 0 };
  return { row: newDomainRow(domain), domain };
}

/** Every domain, from its domain row and all value rows (in name order, as the rows are). */
export function assembleDomains(
  rows: readonly WorldDomainTable[],
  values: readonly Pick<WorldValueTable, 'domain' | 'path' | 'kind' | 'value' | 'pos'>[],
): StoredDomain[] {
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

/**
 * The base of a domain after retention folded its `applied` records (oldest first, at least one)
 * into it: the columns to write.
 */
export function foldedBase(
  row: WorldDomainTable,
  applied: readonly AuditRecord[],
  fold: PruneOptions['fold'],
): Pick<WorldDomainTable, 'base_state' | 'base_version'> {
  const domain = toBase(row);
  const base = fold(domain.base, applied);
  return {
    base_state: JSON.stringify(base),
    base_version: applied[applied.length - 1]!.version ?? domain.baseVersion,
  };
}
