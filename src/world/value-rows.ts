/**
 * How the SQL world store keeps a domain: not as one JSON text rewritten on every change, but as
 * rows, one per node of the domain's tree down to a depth (`splitDepth`, 3 by default) — so a
 * change rewrites the rows it touches, not the domain.
 *
 * - An object or array nearer the root than `splitDepth` is a **node row** (`o`, or `a` with the
 *   array's length); its members are rows of their own.
 * - Anything else is a **value row** holding its JSON whole (`data.prs.123` with `splitDepth` 3).
 * - `pos` orders rows: a parent always comes before its children, and an object's members come in
 *   the order they were added, so the assembled domain has its keys in the order they were set.
 *
 * A unit of work loads only the rows its entries need ({@link rowsNeeded}), builds a partial tree
 * from them ({@link assembleState}; an array's unloaded elements are holes), applies the entries
 * to it like to a whole domain, and writes back what changed ({@link splitState} compared with
 * what was loaded). No I/O here.
 */
import type { JsonObject, JsonValue } from './json.js';

/** The kind of a row: an object node, an array node, or a value kept whole. */
export type RowKind = 'o' | 'a' | 'v';

/** A row as split from a tree (no position yet). */
export interface SplitRow {
  path: string;
  kind: RowKind;
  /** JSON of a value row; the length of an array node; null for an object node. */
  value: string | null;
}

/** A stored row. */
export interface ValueRow extends SplitRow {
  pos: number;
}

/** Default depth of the rows: containers at depth 1 and 2 (`data`, `data.items`) are split. */
export const DEFAULT_SPLIT_DEPTH = 3;

const ODD_KEY = '\u0001';

function encodeOddKey(key: string): string {
  return ODD_KEY + Buffer.from(key, 'utf8').toString('hex');
}

function decodeKey(key: string): string {
  return key.startsWith(ODD_KEY) ? Buffer.from(key.slice(1), 'hex').toString('utf8') : key;
}

/** A key that can be a segment of a row path: what a delta path segment may be. */
function isRowKey(key: string): boolean {
  if (key === '') return false;
  for (let i = 0; i < key.length; i += 1) {
    const code = key.charCodeAt(i);
    if (code === 0x2e || code < 0x20) return false;
  }
  return true;
}

/**
 * The rows of `root`, parents before children, members in insertion order. An object with a key
 * no delta path can name (one with a dot, an empty one) is kept whole, as a value row. Holes of a sparse
 * array (elements a partial tree did not load) are skipped.
 */
export function splitState(root: JsonObject, splitDepth: number): SplitRow[] {
  const out: SplitRow[] = [];
  const walk = (value: JsonValue, path: string, depth: number): void => {
    if (depth < splitDepth && value !== null && typeof value === 'object') {
      if (Array.isArray(value)) {
        out.push({ path, kind: 'a', value: String(value.length) });
        for (let i = 0; i < value.length; i += 1) {
          if (i in value) walk(value[i]!, `${path}.${i}`, depth + 1);
        }
        return;
      }
      const keys = Object.keys(value);
      if (keys.every(isRowKey)) {
        out.push({ path, kind: 'o', value: null });
        for (const key of keys) walk(value[key]!, `${path}.${key}`, depth + 1);
        return;
      }
      // A key no delta path can name (a dot, empty, a control character) stays inside a value.
    }
    out.push({ path, kind: 'v', value: JSON.stringify(value) });
  };
  for (const key of Object.keys(root)) {
    if (isRowKey(key)) walk(root[key]!, key, 1);
    // A root key no delta path can name (only a seed can have one): its value whole, under an
    // encoded key no path can collide with.
    else out.push({ path: encodeOddKey(key), kind: 'v', value: JSON.stringify(root[key]) });
  }
  return out;
}

/**
 * Builds the tree of `rows` (any subset of a domain's rows whose parents are included): members
 * in `pos` order, array elements at their index (unloaded ones stay holes).
 */
export function assembleState(rows: Iterable<ValueRow>): JsonObject {
  const root: JsonObject = {};
  const containers = new Map<string, JsonObject | JsonValue[]>([['', root]]);
  const sorted = [...rows].sort((a, b) => a.pos - b.pos);
  for (const row of sorted) {
    const at = row.path.lastIndexOf('.');
    const parent = containers.get(at < 0 ? '' : row.path.slice(0, at));
    if (parent === undefined) continue;
    const key = decodeKey(row.path.slice(at + 1));
    let value: JsonValue;
    if (row.kind === 'o') {
      value = {};
      containers.set(row.path, value);
    } else if (row.kind === 'a') {
      value = new Array<JsonValue>(Number(row.value));
      containers.set(row.path, value);
    } else {
      value = JSON.parse(row.value ?? 'null') as JsonValue;
    }
    if (Array.isArray(parent)) parent[Number(key)] = value;
    else parent[key] = value;
  }
  return root;
}

/** What one entry needs of its domain's rows. */
export interface PathNeed {
  segments: readonly string[];
  op: string;
}

/**
 * The rows the entries need: every row on each entry's path down to `splitDepth` (`paths`), and
 * for a `set` that may replace a split node, every row below it (`subtrees`, by path prefix). A
 * node at `splitDepth` is a value row, with no rows below it: a `set` there needs no subtree.
 */
export function rowsNeeded(
  needs: Iterable<PathNeed>,
  splitDepth: number,
): { paths: Set<string>; subtrees: Set<string> } {
  const paths = new Set<string>();
  const subtrees = new Set<string>();
  for (const need of needs) {
    const n = need.segments.length;
    let path = '';
    for (let i = 0; i < Math.min(n, splitDepth); i += 1) {
      path = i === 0 ? need.segments[0]! : `${path}.${need.segments[i]!}`;
      paths.add(path);
    }
    if (need.op === 'set' && n < splitDepth) subtrees.add(need.segments.join('.'));
  }
  return { paths, subtrees };
}

/**
 * The bytes a row adds to its domain's JSON, about: its key with quotes, colon and comma, and its
 * value (a node's brackets; its members count for themselves). The sum over a domain's rows is
 * within a few bytes per row of the length of the domain as JSON text.
 */
export function rowBytes(row: SplitRow): number {
  const key = row.path.length - row.path.lastIndexOf('.') - 1;
  return key + 4 + (row.kind === 'v' ? (row.value?.length ?? 4) : 2);
}

/** What the domain row's `state` column holds for a domain kept in rows. */
export interface RowsHeader {
  /** About the domain's size as JSON text: the sum of {@link rowBytes}. */
  bytes: number;
  /** The `pos` the next new row gets. */
  next: number;
}

/** JSON text of a header. */
export function encodeHeader(header: RowsHeader): string {
  return JSON.stringify({ $rows: header });
}

/** The header in a domain row's `state`, or undefined for a domain kept whole (older stores). */
export function decodeHeader(text: string): RowsHeader | undefined {
  if (!text.startsWith('{"$rows"')) return undefined;
  const parsed = JSON.parse(text) as { $rows?: RowsHeader };
  return parsed.$rows;
}
