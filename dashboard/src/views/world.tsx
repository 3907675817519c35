/**
 * The world state: each domain's values with version and last writer; per numeric path a small
 * history chart (uPlot) from the domain's audit log; each change links to its task and dispatch.
 */
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Store } from '../state.js';
import { ago, shortId, useNow, useStore } from '../state.js';
import type { AuditRecord, WorldDomain } from '../types.js';

/** Leaf values of a state object by dot path (`data.untriaged`). */
export function flatten(value: unknown, prefix = ''): [string, unknown][] {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
      flatten(v, prefix === '' ? k : `${prefix}.${k}`),
    );
  }
  return [[prefix, value]];
}

/** The time ranges of the charts. */
export const RANGES = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, all: 0 } as const;
export type Range = keyof typeof RANGES;

function clock(seconds: number): string {
  const d = new Date(seconds * 1000);
  return `${d.toLocaleDateString()} ${d.toLocaleTimeString()}`;
}

/**
 * A value's history: a time axis, the value axis, and the time and value under the cursor in the
 * legend. The x range is the chosen time range (up to now), or the whole history for `all`.
 */
function Chart(props: { points: [number, number][]; label: string; from: number; to: number }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (el.current === null || props.points.length === 0) return undefined;
    const xs = props.points.map((p) => p[0] / 1000);
    const ys = props.points.map((p) => p[1]);
    const width = Math.max(260, Math.min(520, (el.current.parentElement?.clientWidth ?? 360) - 16));
    const plot = new uPlot(
      {
        width,
        height: 150,
        legend: { show: true, live: true },
        cursor: { show: true, drag: { x: false, y: false }, points: { size: 7 } },
        scales: {
          x: {
            time: true,
            ...(props.from > 0
              ? { range: (): uPlot.Range.MinMax => [props.from / 1000, props.to / 1000] }
              : {}),
          },
        },
        axes: [
          { font: '11px system-ui', size: 46, grid: { stroke: '#e5e7eb' } },
          { size: 44, font: '11px system-ui', grid: { stroke: '#e5e7eb' } },
        ],
        series: [
          { label: 'time', value: (_u, v) => (v === null ? '—' : clock(v)) },
          {
            label: props.label,
            stroke: '#1d4ed8',
            width: 2,
            points: { show: true, size: 5 },
            paths: uPlot.paths.stepped!({ align: 1 }),
          },
        ],
      },
      [xs, ys],
      el.current,
    );
    return () => plot.destroy();
    // `to` is read when the chart is drawn: the clock's tick alone does not redraw it.
  }, [JSON.stringify(props.points), props.label, props.from]);
  return (
    <div
      class="chart"
      ref={el}
      role="img"
      aria-label={`history of ${props.label}`}
      data-points={props.points.length}
    />
  );
}

/** Every change of one path, newest first, with the call that made it. */
function PathHistory(props: { store: Store; domain: string; path: string }) {
  const { store, domain, path } = props;
  const [records, setRecords] = useState<AuditRecord[] | undefined>();
  const [error, setError] = useState('');
  const version = store.world[domain]?.version;
  useEffect(() => {
    let live = true;
    store
      .api!.get<{ records: AuditRecord[] }>(
        `/api/world/${encodeURIComponent(domain)}/history?path=${encodeURIComponent(path)}&order=desc&limit=500`,
      )
      .then((r) => live && setRecords(r.records))
      .catch((e: unknown) => live && setError(String(e)));
    return () => {
      live = false;
    };
  }, [store, domain, path, version]);
  return (
    <article class="domain path-history" data-history-path={path} data-history-domain={domain}>
      <h3>
        {domain} <code>{path}</code>: every change{' '}
        <a class="small" href="#/world">
          close
        </a>
      </h3>
      {error !== '' && <p class="error">{error}</p>}
      {records === undefined ? (
        <p class="muted">…</p>
      ) : records.length === 0 ? (
        <p class="muted">No change recorded for this path.</p>
      ) : (
        <div class="table-wrap">
          <table class="history-table">
            <thead>
              <tr>
                <th scope="col">when</th>
                <th scope="col">op</th>
                <th scope="col">before</th>
                <th scope="col">after</th>
                <th scope="col">by</th>
                <th scope="col">call</th>
              </tr>
            </thead>
            <tbody>
              {records.map((r) => (
                <tr key={r.seq} data-seq={r.seq} class={r.status === 'rejected' ? 'rejected' : ''}>
                  <td class="small">{new Date(r.recordedAt).toLocaleString()}</td>
                  <td>
                    {r.op} <code>{JSON.stringify(r.value)}</code>
                  </td>
                  <td>
                    <code>{JSON.stringify(r.previous ?? null)}</code>
                  </td>
                  <td data-after>
                    {r.status === 'rejected' ? (
                      <span class="error">rejected: {r.reason}</span>
                    ) : (
                      <code>{JSON.stringify(r.next ?? null)}</code>
                    )}
                  </td>
                  <td>
                    {r.agent} / {r.skill}
                  </td>
                  <td>
                    <a
                      href={`#/calls?agent=${encodeURIComponent(r.agent)}&task=${encodeURIComponent(r.taskId)}`}
                      data-call-link
                    >
                      {r.taskId.slice(0, 8)}
                    </a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </article>
  );
}

function Domain(props: { store: Store; domain: WorldDomain; now: number; range: Range }) {
  const { store, domain, now, range } = props;
  // The range's start, fixed when the range or the domain changes (not on every clock tick).
  const [from, setFrom] = useState(0);
  const [records, setRecords] = useState<AuditRecord[]>([]);
  useEffect(() => {
    let live = true;
    const since = RANGES[range] === 0 ? 0 : Date.now() - RANGES[range];
    setFrom(since);
    store
      .api!.get<{ records: AuditRecord[] }>(
        `/api/world/${encodeURIComponent(domain.name)}/history?order=desc&limit=5000${since === 0 ? '' : `&since=${since}`}`,
      )
      .then((r) => live && setRecords(r.records))
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [store, domain.name, domain.version, range]);
  const applied = records.filter((r) => r.status === 'applied');
  const last = applied[0];
  const byTask = new Map<string, string>();
  for (const info of store.dispatches.values())
    if (info.record.taskId) byTask.set(info.record.taskId, info.record.id);
  return (
    <article class="domain" data-domain={domain.name}>
      <h3>
        {domain.name} <span class="muted small">v{domain.version}</span>
      </h3>
      <div class="muted small">
        updated {ago(domain.updatedAt, now)}
        {last !== undefined && (
          <>
            {' '}
            by <strong>{last.agent}</strong> / {last.skill}
          </>
        )}
      </div>
      <table class="values">
        <tbody>
          {flatten(domain.state).map(([path, value]) => {
            const changes = applied
              .filter((r) => r.path === path && typeof r.next === 'number')
              .reverse();
            const first = changes[0];
            const history: [number, number][] = changes.map((r) => [
              r.recordedAt,
              r.next as number,
            ]);
            // The value before the first recorded change starts the line.
            if (first !== undefined && typeof first.previous === 'number') {
              history.unshift([Math.max(from, first.recordedAt - 1000), first.previous]);
            }
            return (
              <Fragment key={path}>
                <tr data-path={path}>
                  <th scope="row">
                    <a
                      href={`#/world?domain=${encodeURIComponent(domain.name)}&path=${encodeURIComponent(path)}`}
                      title="every change of this path"
                    >
                      <code>{path}</code>
                    </a>
                  </th>
                  <td class="value">{typeof value === 'string' ? value : JSON.stringify(value)}</td>
                </tr>
                {typeof value === 'number' && history.length > 0 && (
                  <tr class="chart-row">
                    <td colSpan={2}>
                      <Chart points={history} label={path} from={from} to={now} />
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
      {applied.length > 0 && (
        <details>
          <summary>recent changes ({Math.min(applied.length, 20)})</summary>
          <ul class="changes">
            {applied.slice(0, 20).map((r) => {
              const dispatch = byTask.get(r.taskId);
              return (
                <li key={r.seq}>
                  <code>
                    {r.path} {r.op} {JSON.stringify(r.value)}
                  </code>{' '}
                  → {JSON.stringify(r.next)}{' '}
                  <span class="muted small">{ago(r.recordedAt, now)}</span> task{' '}
                  <a
                    href={`#/calls?agent=${encodeURIComponent(r.agent)}&task=${encodeURIComponent(r.taskId)}`}
                  >
                    {r.taskId.slice(0, 8)}
                  </a>
                  {dispatch !== undefined && (
                    <>
                      {' '}
                      dispatch{' '}
                      <a href={`#/calls/${encodeURIComponent(dispatch)}`}>{shortId(dispatch)}</a>
                    </>
                  )}
                </li>
              );
            })}
          </ul>
        </details>
      )}
    </article>
  );
}

export function WorldView(props: { store: Store; params?: URLSearchParams }) {
  const store = useStore(props.store);
  const now = useNow(5000);
  const [range, setRange] = useState<Range>('1h');
  const pathDomain = props.params?.get('domain') ?? '';
  const path = props.params?.get('path') ?? '';
  const domains = Object.values(store.world).sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section aria-labelledby="world-title">
      <div class="toolbar">
        <h2 id="world-title">World state</h2>
        <div role="radiogroup" aria-label="time range" class="tabs range-picker">
          {(Object.keys(RANGES) as Range[]).map((r) => (
            <button
              key={r}
              type="button"
              role="radio"
              aria-checked={range === r}
              data-range={r}
              onClick={() => setRange(r)}
            >
              {r}
            </button>
          ))}
        </div>
      </div>
      {pathDomain !== '' && path !== '' && (
        <PathHistory store={store} domain={pathDomain} path={path} />
      )}
      {domains.length === 0 && <p class="muted">No domain yet.</p>}
      <div class="domains">
        {domains.map((d) => (
          <Domain key={d.name} store={store} domain={d} now={now} range={range} />
        ))}
      </div>
    </section>
  );
}
