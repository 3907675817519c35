/**
 * Live effects: every `world.state.delta` entry as it arrives, rejected entries with their reason,
 * `ops.alert.*` coloured by severity. Pause keeps what arrives for later; filters by agent,
 * domain and severity.
 */
import { memo } from 'preact/compat';
import { useMemo, useRef, useState } from 'preact/hooks';
import type { EffectRow, Store } from '../state.js';
import { useStore } from '../state.js';
import { EffectSearch } from './effect-search.js';
import { VirtualTable } from '../search.js';

/** A row's height: the table renders only the rows in view of the whole buffer. */
const ROW = 34;

function valueText(v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text === undefined ? '' : text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

/** Times of day; one formatter for every row (a new one per row costs more than the row). */
const TIME = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

/**
 * One row of the table, rendered again only when its place shows another row. The table keys its
 * rows by place, not by row: a live stream (thousands of rows a second, delivered in batches of
 * hundreds) replaces every row in view at each batch, and a place that keeps its `<tr>` and cells
 * only changes their text, where a row keyed by itself would cost a new row's elements, styles and
 * layout for each place at every batch.
 */
const EffectRowView = memo(function EffectRowView(props: { row: EffectRow }) {
  const r = props.row;
  return (
    <tr
      class={`row effect ${r.kind} ${r.kind === 'alert' ? `sev-${r.severity}` : ''}`}
      data-kind={r.kind}
      data-key={r.key}
      style={{ height: `${ROW}px` }}
    >
      <td class="small">{TIME.format(r.at)}</td>
      <td>
        {r.agent} / {r.skill}
      </td>
      <td>{r.domain}</td>
      {r.kind === 'delta' ? (
        <>
          <td>
            <code>{r.path}</code>
          </td>
          <td>{r.op}</td>
          <td>
            <code>{valueText(r.value)}</code>
          </td>
        </>
      ) : (
        <td colSpan={3}>
          <span class="badge">{r.kind === 'alert' ? r.severity : 'rejected'}</span>{' '}
          {r.kind === 'rejected' && (
            <code>
              {r.path} {r.op} {valueText(r.value)}
            </code>
          )}{' '}
          {r.message}
        </td>
      )}
      <td class="small">
        {r.taskId === '' ? (
          ''
        ) : (
          <a
            href={`#/calls?agent=${encodeURIComponent(r.agent)}&task=${encodeURIComponent(r.taskId)}`}
            data-call-link
          >
            {r.taskId.slice(0, 8)}
          </a>
        )}
      </td>
    </tr>
  );
});

/** Live effects, or a search of every change recorded. */
export function EffectsPage(props: { store: Store; params: URLSearchParams }) {
  const [tab, setTab] = useState<'live' | 'search'>(
    props.params.get('tab') === 'search' ? 'search' : 'live',
  );
  return (
    <>
      <div role="tablist" class="tabs effects-tabs">
        <button
          type="button"
          role="tab"
          aria-selected={tab === 'live'}
          onClick={() => setTab('live')}
        >
          Live
        </button>
        <button
          type="button"
          role="tab"
          aria-selected={tab === 'search'}
          onClick={() => setTab('search')}
          data-tab="search"
        >
          Search all changes
        </button>
      </div>
      {tab === 'live' ? <EffectsView store={props.store} /> : <EffectSearch store={props.store} />}
    </>
  );
}

export function EffectsView(props: { store: Store }) {
  const store = useStore(props.store);
  const [paused, setPaused] = useState(false);
  const frozen = useRef<EffectRow[]>([]);
  const [agent, setAgent] = useState('');
  const [domain, setDomain] = useState('');
  const [severity, setSeverity] = useState('');
  // The buffer changes in place; `effectCount` moves whenever it does. Other changes of the store
  // (snapshots, the stream's state) render the view without filtering 2,000 rows again.
  const received = store.effectCount;
  const rows = useMemo(() => {
    const source = paused ? frozen.current : store.effects;
    const shown: EffectRow[] = [];
    for (let i = source.length - 1; i >= 0; i -= 1) {
      const r = source[i]!;
      if (agent !== '' && r.agent !== agent) continue;
      if (domain !== '' && r.domain !== domain) continue;
      if (severity !== '' && (r.kind !== 'alert' || r.severity !== severity)) continue;
      shown.push(r);
    }
    return shown;
  }, [paused ? frozen.current : received, agent, domain, severity]);
  // Rows received since the pause (the buffer may be full, so its length says nothing).
  const waiting = paused ? received - (frozen.current.at(-1)?.key ?? 0) : 0;
  const { agents, domains } = useMemo(
    () => ({
      agents: [...new Set(store.effects.map((r) => r.agent))].sort(),
      domains: [
        ...new Set(store.effects.filter((r) => r.kind !== 'alert').map((r) => r.domain)),
      ].sort(),
    }),
    [received],
  );
  return (
    <section aria-labelledby="effects-title">
      <div class="toolbar">
        <h2 id="effects-title">Live effects</h2>
        <button
          type="button"
          aria-pressed={paused}
          onClick={() => {
            frozen.current = store.effects.slice();
            setPaused(!paused);
          }}
        >
          {paused ? `Resume (${waiting} new)` : 'Pause'}
        </button>
        <label>
          agent{' '}
          <select value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
            <option value="">all</option>
            {agents.map((a) => (
              <option key={a}>{a}</option>
            ))}
          </select>
        </label>
        <label>
          domain{' '}
          <select value={domain} onChange={(e) => setDomain(e.currentTarget.value)}>
            <option value="">all</option>
            {domains.map((d) => (
              <option key={d}>{d}</option>
            ))}
          </select>
        </label>
        <label>
          severity{' '}
          <select value={severity} onChange={(e) => setSeverity(e.currentTarget.value)}>
            <option value="">all</option>
            {['info', 'warning', 'error', 'critical'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
      </div>
      <VirtualTable
        class="effects"
        rows={rows}
        rowHeight={ROW}
        height={600}
        columns={7}
        head={
          <tr>
            <th scope="col">time</th>
            <th scope="col">agent / skill</th>
            <th scope="col">domain</th>
            <th scope="col">path</th>
            <th scope="col">op</th>
            <th scope="col">value</th>
            <th scope="col">task</th>
          </tr>
        }
        row={(r, i) => <EffectRowView key={i} row={r} />}
      />
      {rows.length === 0 && (
        <p class="muted">No effects yet: they appear here as agents report them.</p>
      )}
    </section>
  );
}
