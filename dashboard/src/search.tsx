/**
 * Server-side search for the long lists (dispatches, world changes, approval history): the
 * filters go to `/api/search/*` as query parameters, pages come back newest first with a cursor
 * and the total; the rows render in a virtualised table (only the rows in view are in the DOM),
 * and the next page loads as the list scrolls near its end.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from './api.js';
import type { Store } from './state.js';

export interface Page<T> {
  items: T[];
  next: string | null;
  total: number | null;
}

export interface SearchState<T> {
  items: T[];
  total: number | null;
  next: string | null;
  loading: boolean;
  error: string;
  /** Milliseconds from asking the first page to having it (for the load benchmark). */
  tookMs: number;
  /** The query (filters) of the rows held now. */
  shown: string;
  more: () => void;
  reload: () => void;
}

/** Query parameters without the empty ones. */
export function queryOf(filters: Record<string, string>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v !== '') params.set(k, v);
  return params.toString();
}

/** A search at `path` with `filters`; a change of filters starts again from the first page. */
export function useSearch<T>(
  store: Store,
  path: string,
  filters: Record<string, string>,
  pageSize = 100,
): SearchState<T> {
  const [items, setItems] = useState<T[]>([]);
  const [total, setTotal] = useState<number | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState('');
  const [tookMs, setTookMs] = useState(0);
  const [shown, setShown] = useState('\u0000');
  const [generation, setGeneration] = useState(0);
  const key = queryOf(filters);
  const current = useRef(0);
  useEffect(() => {
    const mine = ++current.current;
    const started = performance.now();
    setLoading(true);
    store
      .api!.get<Page<T>>(`${path}?${key}${key === '' ? '' : '&'}limit=${pageSize}`)
      .then((page) => {
        if (mine !== current.current) return;
        setItems(page.items);
        setShown(key);
        setTotal(page.total);
        setNext(page.next);
        setError('');
        setTookMs(performance.now() - started);
      })
      .catch((e: unknown) => {
        if (mine === current.current) setError(errorText(e));
      })
      .finally(() => {
        if (mine === current.current) setLoading(false);
      });
  }, [store, path, key, generation]);
  const more = (): void => {
    if (next === null || loading) return;
    const mine = current.current;
    setLoading(true);
    store
      .api!.get<Page<T>>(
        `${path}?${key}${key === '' ? '' : '&'}limit=${pageSize}&count=false&cursor=${encodeURIComponent(next)}`,
      )
      .then((page) => {
        if (mine !== current.current) return;
        setItems((before) => [...before, ...page.items]);
        setNext(page.next);
      })
      .catch((e: unknown) => {
        if (mine === current.current) setError(errorText(e));
      })
      .finally(() => {
        if (mine === current.current) setLoading(false);
      });
  };
  return {
    items,
    total,
    next,
    loading,
    error,
    tookMs,
    shown,
    more,
    reload: () => setGeneration((g) => g + 1),
  };
}

/** A text input that reports its value once typing pauses. */
export function SearchText(props: { value: string; onChange(v: string): void; label?: string }) {
  const [text, setText] = useState(props.value);
  useEffect(() => {
    if (text === props.value) return;
    const t = setTimeout(() => props.onChange(text), 200);
    return () => clearTimeout(t);
  }, [text]);
  return (
    <label>
      {props.label ?? 'search'}{' '}
      <input
        type="search"
        name="text"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') props.onChange(text);
        }}
      />
    </label>
  );
}

/** A select of a filter: `all` is the empty value. */
export function FilterSelect(props: {
  name: string;
  label: string;
  value: string;
  options: readonly string[];
  onChange(v: string): void;
}) {
  return (
    <label>
      {props.label}{' '}
      <select
        name={props.name}
        value={props.value}
        onChange={(e) => props.onChange(e.currentTarget.value)}
      >
        <option value="">all</option>
        {props.options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

/** "12 of 10,000" */
export function Count(props: { shown: number; total: number | null; noun: string }) {
  return (
    <span class="count-line small muted" data-total={props.total ?? ''} data-shown={props.shown}>
      {props.total === null
        ? `${props.shown.toLocaleString('en')} ${props.noun}`
        : `${props.total.toLocaleString('en')} ${props.noun} match · ${props.shown.toLocaleString('en')} loaded`}
    </span>
  );
}

/**
 * A table that renders only the rows in view (rows have one fixed height), with spacer rows for
 * the rest; `onEnd` is called when the view nears the last loaded row.
 */
export function VirtualTable<T>(props: {
  rows: readonly T[];
  rowHeight: number;
  height: number;
  head: ComponentChildren;
  columns: number;
  row(item: T, index: number): ComponentChildren;
  onEnd?: () => void;
  class?: string;
}) {
  const { rows, rowHeight, height } = props;
  const [top, setTop] = useState(0);
  const box = useRef<HTMLDivElement>(null);
  const overscan = 8;
  // `overscan` rows either side of the view: at the top of the list only below it (a live list at
  // its top changes every rendered row at each batch, so each spare row costs a row's update).
  const inView = Math.floor(top / rowHeight);
  const first = Math.max(0, inView - overscan);
  const last = Math.min(rows.length, inView + Math.ceil(height / rowHeight) + overscan);
  useEffect(() => {
    if (props.onEnd !== undefined && last >= rows.length - overscan && rows.length > 0) {
      props.onEnd();
    }
  }, [last, rows.length]);
  return (
    <div
      class={`table-wrap virtual ${props.class === undefined ? '' : `${props.class}-wrap`}`}
      style={{ maxHeight: `${height}px` }}
      ref={box}
      onScroll={(e) => setTop(e.currentTarget.scrollTop)}
      data-rows={rows.length}
    >
      <table class={props.class}>
        <thead>{props.head}</thead>
        <tbody>
          {first > 0 && (
            <tr class="spacer" aria-hidden="true" style={{ height: `${first * rowHeight}px` }}>
              <td colSpan={props.columns} />
            </tr>
          )}
          {rows.slice(first, last).map((item, i) => props.row(item, first + i))}
          {last < rows.length && (
            <tr
              class="spacer"
              aria-hidden="true"
              style={{ height: `${(rows.length - last) * rowHeight}px` }}
            >
              <td colSpan={props.columns} />
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
