/**
 * The world state: each domain's values with version and last writer; per numeric path a small
 * history chart (uPlot) from the domain's audit log; each change links to its task and dispatch.
 */
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Store } from '../state.js';
import { ago, useNow, useStore } from '../state.js';
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

function Chart(props: { points: [number, number][]; label: string }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (el.current === null || props.points.length === 0) return undefined;
    const xs = props.points.map((p) => p[0] / 1000);
    const ys = props.points.map((p) => p[1]);
    const plot = new uPlot(
      {
        width: 300,
        height: 90,
        legend: { show: false },
        cursor: { show: false },
        axes: [{ show: false }, { size: 40, font: '11px system-ui' }],
        series: [
          {},
          { label: props.label, stroke: '#1d4ed8', width: 2, points: { show: true, size: 4 } },
        ],
      },
      [xs, ys],
      el.current,
    );
    return () => plot.destroy();
  }, [props.points, props.label]);
  return <div class="chart" ref={el} role="img" aria-label={`history of ${props.label}`} />;
}

function Domain(props: { store: Store; domain: WorldDomain; now: number }) {
  const { store, domain, now } = props;
  const [records, setRecords] = useState<AuditRecord[]>([]);
  useEffect(() => {
    let live = true;
    store
      .api!.get<{ records: AuditRecord[] }>(
        `/api/world/${encodeURIComponent(domain.name)}/history?order=desc&limit=500`,
      )
      .then((r) => live && setRecords(r.records))
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [store, domain.name, domain.version]);
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
              history.unshift([first.recordedAt - 1000, first.previous]);
            }
            return (
              <Fragment key={path}>
                <tr data-path={path}>
                  <th scope="row">
                    <code>{path}</code>
                  </th>
                  <td class="value">{typeof value === 'string' ? value : JSON.stringify(value)}</td>
                </tr>
                {typeof value === 'number' && history.length > 0 && (
                  <tr class="chart-row">
                    <td colSpan={2}>
                      <Chart points={history} label={path} />
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
                      <a href={`#/calls/${encodeURIComponent(dispatch)}`}>{dispatch.slice(0, 8)}</a>
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

export function WorldView(props: { store: Store }) {
  const store = useStore(props.store);
  const now = useNow(5000);
  const domains = Object.values(store.world).sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section aria-labelledby="world-title">
      <div class="toolbar">
        <h2 id="world-title">World state</h2>
      </div>
      {domains.length === 0 && <p class="muted">No domain yet.</p>}
      <div class="domains">
        {domains.map((d) => (
          <Domain key={d.name} store={store} domain={d} now={now} />
        ))}
      </div>
    </section>
  );
}
