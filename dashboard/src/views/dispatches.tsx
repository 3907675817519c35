/**
 * Dispatches: recent dispatches with their status and a timeline each (requested → gated →
 * approved → started → deltas → done), and a form that dispatches a skill to an agent or lets
 * the gateway route it, showing what the gate will look at before sending and what it decided.
 */
import { useEffect, useState } from 'preact/hooks';
import { BLAST_RADII } from '../../../src/protocol/radius.js';
import { DISPATCH_STATUSES } from '../../../src/protocol/topics.js';
import { Count, FilterSelect, SearchText, useSearch, VirtualTable } from '../search.js';
import { errorText } from '../api.js';
import { RadiusBadge } from '../radius.js';
import type { DispatchInfo, Store } from '../state.js';
import { ago, roleAtLeast, shortId, useNow, useStore } from '../state.js';
import type { Decision, DispatchRecord, Explanation, Radius, SearchDispatch } from '../types.js';

function DecisionView(props: { decision: Decision; record?: DispatchRecord }) {
  const d = props.decision;
  return (
    <div
      class={`decision decision-${d.action}`}
      data-decision={d.action}
      data-dispatch-id={props.record?.id}
      role="status"
    >
      <strong>
        gate:{' '}
        {d.action === 'allow' ? 'allowed' : d.action === 'hold' ? 'held for approval' : 'denied'}
      </strong>
      {d.mode !== undefined && <span class="badge mode">{d.mode}</span>}
      {d.effectiveRadius !== undefined && (
        <RadiusBadge radius={(d.effectiveRadius ?? null) as Radius | null} />
      )}
      {props.record !== undefined && (
        <span>
          {' '}
          → {props.record.agent} / {props.record.skill}:{' '}
          <span class={`badge status status-${props.record.status}`}>{props.record.status}</span>
        </span>
      )}
      {d.reason !== undefined && <div class="small">{d.reason}</div>}
      {d.reasons !== undefined && (
        <ul class="reasons">
          {d.reasons.map((r, i) => (
            <li key={i}>
              <code>{r.kind}</code> {r.detail}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** What the gate would decide for one candidate agent now (`GET /api/policy/explain`). */
function describeMode(e: Explanation): string {
  const d = e.decision;
  if (d.deny !== undefined) return `denied: ${d.deny.reason}`;
  switch (d.mode) {
    case 'autonomous':
      return 'runs at once';
    case 'notification':
      return 'runs at once; people are notified';
    case 'veto':
      return `runs after a ${Math.round((d.vetoTtlMs ?? 0) / 1000)} s veto window unless vetoed`;
    case 'gated':
    case 'compound':
      return `waits for ${d.approvers} approver${d.approvers === 1 ? '' : 's'}`;
    default:
      return d.mode;
  }
}

function Preview(props: { store: Store; agents: string[]; skill: string }) {
  const { store, skill } = props;
  const [explained, setExplained] = useState<Record<string, Explanation | string>>({});
  const key = props.agents.join(',');
  useEffect(() => {
    let live = true;
    setExplained({});
    for (const agent of props.agents) {
      const query = `agent=${encodeURIComponent(agent)}&skill=${encodeURIComponent(skill)}`;
      store
        .api!.get<Explanation>(`/api/policy/explain?${query}`)
        .then((e) => live && setExplained((x) => ({ ...x, [agent]: e })))
        .catch((error: unknown) => {
          const text = errorText(error);
          if (live) setExplained((x) => ({ ...x, [agent]: text }));
        });
    }
    return () => {
      live = false;
    };
  }, [store, key, skill]);
  return (
    <div class="preview" aria-live="polite">
      <span class="muted small">before sending, the gate would decide:</span>
      <ul>
        {props.agents.map((agent) => {
          const e = explained[agent];
          const status = store.agents.find((a) => a.name === agent)?.status ?? '';
          return (
            <li key={agent} data-preview={agent}>
              {agent} <span class="muted small">({status})</span>{' '}
              {e === undefined ? (
                <span class="muted">…</span>
              ) : typeof e === 'string' ? (
                <span class="error">{e}</span>
              ) : (
                <>
                  <RadiusBadge radius={e.decision.effectiveRadius} />{' '}
                  <span class="badge mode">{e.decision.mode}</span>{' '}
                  <strong
                    data-preview-decision={e.decision.deny === undefined ? e.decision.mode : 'deny'}
                  >
                    {describeMode(e)}
                  </strong>
                  <ul class="reasons small">
                    {e.decision.reasons.map((r, i) => (
                      <li key={i}>
                        <code>{r.kind}</code> {r.detail}
                      </li>
                    ))}
                  </ul>
                </>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function DispatchForm(props: { store: Store }) {
  const { store } = props;
  const [agent, setAgent] = useState('');
  const [skill, setSkill] = useState('');
  const [text, setText] = useState('');
  const [result, setResult] = useState<
    { record: DispatchRecord; decision: Decision } | undefined
  >();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const skills =
    agent === ''
      ? [...new Set(store.agents.flatMap((a) => a.skills.map((s) => s.id)))].sort()
      : (store.agents.find((a) => a.name === agent)?.skills.map((s) => s.id) ?? []);
  const offering = store.agents.filter(
    (a) => (agent === '' || a.name === agent) && a.skills.some((s) => s.id === skill),
  );
  const send = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError('');
    setResult(undefined);
    try {
      const answer = await store.api!.post<DispatchRecord & { decision: Decision }>(
        '/api/dispatch',
        {
          ...(agent === '' ? {} : { agent }),
          skill,
          ...(text === '' ? {} : { text }),
        },
      );
      const { decision, ...record } = answer;
      setResult({ record, decision });
      if (!store.dispatches.has(record.id)) {
        store.dispatches.set(record.id, {
          record,
          timeline: [{ step: 'requested', at: record.createdAt }],
          deltas: [],
        });
        store.changed();
      }
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="dispatch-form" onSubmit={(e) => void send(e)}>
      <h3>Dispatch</h3>
      <label>
        agent{' '}
        <select
          name="agent"
          value={agent}
          onChange={(e) => {
            setAgent(e.currentTarget.value);
            setSkill('');
          }}
        >
          <option value="">route by skill</option>
          {store.agents.map((a) => (
            <option key={a.name} value={a.name}>
              {a.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        skill{' '}
        <select
          name="skill"
          value={skill}
          required
          onChange={(e) => setSkill(e.currentTarget.value)}
        >
          <option value="">choose…</option>
          {skills.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      <label>
        text <input name="text" value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      {skill !== '' && offering.length > 0 && (
        <Preview store={store} agents={offering.map((a) => a.name)} skill={skill} />
      )}
      <button type="submit" disabled={busy || skill === ''}>
        Send
      </button>
      {result !== undefined && (
        <>
          <DecisionView decision={result.decision} record={result.record} />
          <a href={`#/calls/${encodeURIComponent(result.record.id)}`} data-call-link>
            follow this call
          </a>
        </>
      )}
      {error !== '' && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

function Timeline(props: { info: DispatchInfo }) {
  return (
    <ol class="timeline">
      {props.info.timeline.map((t, i) => (
        <li key={i} data-step={t.step}>
          <span class="step">{t.step}</span>{' '}
          <span class="muted small">{new Date(t.at).toLocaleTimeString()}</span>
          {t.detail !== undefined && <span class="small"> {t.detail}</span>}
        </li>
      ))}
    </ol>
  );
}

const ROW = 34;

/** Fleet-wide options of the filters, from the fleet view. */
export function fleetOptions(store: Store): {
  agents: string[];
  skills: string[];
  domains: string[];
} {
  const agents = store.agents.map((a) => a.name);
  const skills = [...new Set(store.agents.flatMap((a) => a.skills.map((s) => s.id)))].sort();
  const domains = [
    ...new Set(store.agents.flatMap((a) => a.skills.flatMap((s) => s.domains ?? []))),
  ].sort();
  return { agents, skills, domains };
}

/** Every dispatch the store holds, searched and paged by the gateway. */
function DispatchSearch(props: { store: Store; initial: Record<string, string> }) {
  const { store } = props;
  const now = useNow(5000);
  const [filters, setFilters] = useState<Record<string, string>>({
    agent: '',
    skill: '',
    radius: '',
    status: '',
    domain: '',
    text: '',
    ...props.initial,
  });
  const search = useSearch<SearchDispatch>(store, '/api/search/dispatches', filters);
  const set = (k: string) => (v: string) => setFilters((f) => ({ ...f, [k]: v }));
  // New dispatches show up while the first page is what is on screen.
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = store.listen((e) => {
      if (!e.topic.startsWith('skill.dispatch.') || search.items.length > 100) return;
      timer ??= setTimeout(() => {
        timer = undefined;
        search.reload();
      }, 300);
    });
    return () => {
      off();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [store, search.items.length]);
  const o = fleetOptions(store);
  return (
    <div
      class="search"
      data-search="dispatches"
      data-took-ms={Math.round(search.tookMs)}
      data-query={search.shown}
    >
      <h3>All dispatches</h3>
      <div class="filters">
        <FilterSelect
          name="agent"
          label="agent"
          value={filters.agent!}
          options={o.agents}
          onChange={set('agent')}
        />
        <FilterSelect
          name="skill"
          label="skill"
          value={filters.skill!}
          options={o.skills}
          onChange={set('skill')}
        />
        <FilterSelect
          name="radius"
          label="radius"
          value={filters.radius!}
          options={BLAST_RADII}
          onChange={set('radius')}
        />
        <FilterSelect
          name="status"
          label="status"
          value={filters.status!}
          options={DISPATCH_STATUSES}
          onChange={set('status')}
        />
        <FilterSelect
          name="domain"
          label="domain"
          value={filters.domain!}
          options={o.domains}
          onChange={set('domain')}
        />
        <SearchText value={filters.text!} onChange={set('text')} />
        <Count shown={search.items.length} total={search.total} noun="dispatches" />
        {search.loading && <span class="muted small">loading…</span>}
      </div>
      {search.error !== '' && (
        <p class="error" role="alert">
          {search.error}
        </p>
      )}
      <VirtualTable
        class="dispatch-search"
        rows={search.items}
        rowHeight={ROW}
        height={480}
        columns={6}
        onEnd={search.more}
        head={
          <tr>
            <th scope="col">status</th>
            <th scope="col">agent / skill</th>
            <th scope="col">radius</th>
            <th scope="col">asked</th>
            <th scope="col">call</th>
            <th scope="col">outcome</th>
          </tr>
        }
        row={(d) => {
          const result = d.result;
          return (
            <tr
              key={d.id}
              class="row"
              data-dispatch={d.id}
              data-status={d.status}
              style={{ height: `${ROW}px` }}
            >
              <td>
                <span class={`badge status status-${d.status}`}>{d.status}</span>
              </td>
              <td>
                {d.agent} / {d.skill}
              </td>
              <td>
                <RadiusBadge radius={d.radius} />
              </td>
              <td class="small" title={new Date(d.createdAt).toISOString()}>
                {ago(d.createdAt, now)}
              </td>
              <td>
                <a href={`#/calls/${encodeURIComponent(d.id)}`} data-call-link>
                  {shortId(d.id)}
                </a>
              </td>
              <td class="small clip">{result?.error?.message ?? result?.text ?? ''}</td>
            </tr>
          );
        }}
      />
    </div>
  );
}

export function DispatchesView(props: {
  store: Store;
  focus: { id?: string; task?: string };
  initial?: Record<string, string>;
}) {
  const store = useStore(props.store);
  const now = useNow(5000);
  const canDispatch = store.session !== undefined && roleAtLeast(store.session.role, 'operator');
  const list = [...store.dispatches.values()]
    .sort((a, b) => b.record.updatedAt - a.record.updatedAt)
    .slice(0, 200);
  return (
    <section aria-labelledby="dispatches-title">
      <div class="toolbar">
        <h2 id="dispatches-title">Dispatches</h2>
      </div>
      {canDispatch && <DispatchForm store={store} />}
      <DispatchSearch store={store} initial={props.initial ?? {}} />
      <h3>Seen live since the page opened</h3>
      {list.length === 0 && <p class="muted">No dispatch seen since the page opened.</p>}
      <ul class="dispatches">
        {list.map((info) => {
          const r = info.record;
          const focused =
            props.focus.id === r.id ||
            (props.focus.task !== undefined && props.focus.task === r.taskId);
          const reason = r.reason ?? r.result?.error?.message;
          return (
            <li
              key={r.id}
              class={`dispatch${focused ? ' focused' : ''}`}
              data-dispatch={r.id}
              data-status={r.status}
            >
              <details open={focused}>
                <summary>
                  <span class={`badge status status-${r.status}`}>{r.status}</span>{' '}
                  <strong>
                    {r.agent} / {r.skill}
                  </strong>{' '}
                  <span class="muted small">
                    {ago(r.updatedAt, now)} · {shortId(r.id)}
                    {r.taskId !== null && ` · task ${r.taskId.slice(0, 8)}`}
                  </span>
                  {reason !== undefined && r.status !== 'completed' && (
                    <span class="reason"> — {reason}</span>
                  )}{' '}
                  <a href={`#/calls/${encodeURIComponent(r.id)}`} class="small" data-call-link>
                    open call
                  </a>
                </summary>
                <Timeline info={info} />
                {r.result?.text !== undefined && <pre class="input">{r.result.text}</pre>}
                {info.deltas.length > 0 && (
                  <ul class="small">
                    {info.deltas.map((d, i) => (
                      <li key={i}>
                        <code>
                          {d.domain} {d.path} {d.op} {JSON.stringify(d.value)}
                        </code>
                      </li>
                    ))}
                  </ul>
                )}
              </details>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
