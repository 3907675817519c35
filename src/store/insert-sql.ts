/**
 * The text of a multi-row insert with its placeholders spelled for the engine, for a room that
 * binds its rows' values itself (prepared statements on SQLite, raw queries on PostgreSQL).
 */

// A memo of a pure function (statement text by table, dialect and row count; a few entries).
const texts = new Map<string, string>();

/**
 * `insert into "table" ("a", "b") values (?, ?), (?, ?) …` for `rows` rows: `?` on SQLite,
 * `$1, $2 …` on PostgreSQL, the values bound row after row in the order of `columns`; `tail`
 * follows the values (an `on conflict` clause, say).
 *
 * @example
 * ```ts
 * sql.run(insertRowsSql('sqlite', 'item', ['id', 'name'], 2), ['a', 'A', 'b', 'B']);
 * ```
 */
export function insertRowsSql(
  kind: 'sqlite' | 'postgres',
  table: string,
  columns: readonly string[],
  rows: number,
  tail = '',
): string {
  const key = `${table}:${kind}:${rows}:${tail}`;
  let text = texts.get(key);
  if (text === undefined) {
    const width = columns.length;
    const tuples: string[] = [];
    for (let r = 0; r < rows; r++) {
      const marks: string[] = [];
      for (let c = 1; c <= width; c++) marks.push(kind === 'postgres' ? `$${r * width + c}` : '?');
      tuples.push(`(${marks.join(', ')})`);
    }
    const names = columns.map((c) => `"${c}"`).join(', ');
    text = `insert into "${table}" (${names}) values ${tuples.join(', ')}${tail === '' ? '' : ` ${tail}`}`;
    texts.set(key, text);
  }
  return text;
}
