/** The fleet: a row per agent, a cell per skill coloured by its effective radius. */
import { memo } from 'preact/compat';
import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../api.js';
import { Legend, RADII, RadiusBadge, radiusRank } from '../radius.js';
import type { Store } from '../state.js';
import { ago, roleAtLeast, useNow, useStore } from '../state.js';
import type { AgentView, Radius, SkillView } from '../types.js';

function source(s: SkillView): string {
  if (s.effectiveRadius === null) return 'unknown → policy';
  if (
    s.floor !== null &&
    (s.declaredRadius === null || radiusRank(s.floor) > radiusRank(s.declaredRadius))
  )
    return 'floor';
  if (s.declaredRadius !== null && s.effectiveRadius !== s.declaredRadius) return 'acknowledged';
  return 'declared';
}

/** One skill's cell; memoised, so the rows' clock tick does not re-render 2,000 of them. */
const SkillCell = memo(function SkillCell(props: {
  store: Store;
  agent: AgentView;
  skill: SkillView;
  canAck: boolean;
  /** The declaration change last seen for this skill. */
  drift: string | undefined;
}) {
  const { store, agent, skill, drift } = props;
  const [message, setMessage] = useState('');
  const ack = async (): Promise<void> => {
    setMessage('');
    try {
      await store.api!.post(`/api/agents/${encodeURIComponent(agent.name)}/ack`, {
        skill: skill.id,
      });
      await store.loadFleet();
    } catch (error) {
      setMessage(errorText(error));
    }
  };
  return (
    <li class="skill" data-skill={skill.id} data-agent={agent.name}>
      <span class="skill-id">{skill.id}</span>
      <RadiusBadge radius={skill.effectiveRadius} title={`effective radius (${source(skill)})`} />
      <span class="muted small">{source(skill)}</span>
      {skill.hitlMode !== null && <span class="badge mode">{skill.hitlMode}</span>}
      {skill.floor !== null && <span class="badge floor">floor {skill.floor}</span>}
      {drift !== undefined && (
        <span class="badge drift" title="declaration changed">
          drift: {drift}
        </span>
      )}
      {skill.pendingRadius !== null && (
        <span class="badge ack" data-ack={skill.id}>
          narrowed to {skill.pendingRadius}, awaiting acknowledgement
          {props.canAck && (
            <button type="button" class="small-button" onClick={() => void ack()}>
              Acknowledge
            </button>
          )}
        </span>
      )}
      {message !== '' && (
        <span class="error small" role="alert">
          {message}
        </span>
      )}
    </li>
  );
});

/** Skill cells rendered at once: more than the tallest screen holds (a cell is a line). */
const FIRST_CELLS = 100;
/** Skill cells added per frame after the first paint until the whole fleet is on the page. */
const MORE_CELLS = 300;

/** How many of `agents` (from the first) hold `cells` skill cells; at least one more than `from`. */
function agentsFor(agents: readonly AgentView[], from: number, cells: number): number {
  let n = from;
  let budget = cells;
  while (n < agents.length && (n === from || budget > 0)) {
    budget -= Math.max(1, agents[n]!.skills.length);
    n += 1;
  }
  return n;
}

/**
 * The number of agents to render: the first screen at once, then the rest a chunk per frame, so
 * a fleet of hundreds of agents paints its first screen without waiting for every row below it.
 */
function useProgressive(agents: readonly AgentView[]): number {
  const [shown, setShown] = useState(0);
  const total = agents.length;
  const first = shown === 0 ? agentsFor(agents, 0, FIRST_CELLS) : shown;
  useEffect(() => {
    if (first >= total) return;
    // After the frame that paints the current rows: one chunk more in a task of its own.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const frame = requestAnimationFrame(() => {
      timer = setTimeout(() => setShown(agentsFor(agents, first, MORE_CELLS)), 0);
    });
    return () => {
      cancelAnimationFrame(frame);
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [first, total, agents]);
  return Math.min(first, total);
}

interface RowProps {
  store: Store;
  agent: AgentView;
  min: Radius | 'all';
  canAck: boolean;
  driftVersion: number;
  /** The fetch/change ages' clock (a tick re-renders every row). */
  now: number;
}

/** One agent's row; re-rendered only when one of its props changed. */
const AgentRow = memo(function AgentRow(props: RowProps) {
  const { store, agent: a, min, canAck, now } = props;
  const skills = a.skills.filter(
    (s) => min === 'all' || radiusRank(s.effectiveRadius) >= radiusRank(min),
  );
  if (skills.length === 0 && min !== 'all') return null;
  return (
    <tr data-agent={a.name}>
      <th scope="row">
        <div>{a.name}</div>
        <div class="muted small">{a.description ?? ''}</div>
      </th>
      <td>
        <span class={`badge status-${a.status}`}>{a.status}</span>
        <div class="muted small">fetched {ago(a.lastFetchedAt, now)}</div>
        <div class="muted small">changed {ago(a.lastChangedAt, now)}</div>
        {a.lastError !== null && <div class="error small">{a.lastError.code}</div>}
        {a.diagnostics.length > 0 && (
          <details class="diagnostics">
            <summary>{a.diagnostics.length} diagnostic(s)</summary>
            <ul>
              {a.diagnostics.map((d, i) => (
                <li key={i}>
                  <code>{d.code ?? ''}</code> {d.path ?? ''} {d.message ?? JSON.stringify(d)}
                </li>
              ))}
            </ul>
          </details>
        )}
      </td>
      <td>
        <ul class="skills">
          {skills.map((s) => (
            <SkillCell
              key={s.id}
              store={store}
              agent={a}
              skill={s}
              canAck={canAck}
              drift={store.drift.get(`${a.name}/${s.id}`)}
            />
          ))}
        </ul>
      </td>
    </tr>
  );
});

export function FleetView(props: { store: Store }) {
  const store = useStore(props.store);
  const now = useNow(5000);
  const [min, setMin] = useState<Radius | 'all'>('all');
  const canAck = store.session !== undefined && roleAtLeast(store.session.role, 'admin');
  const shown = useProgressive(store.agents);
  useEffect(() => {
    if (store.agents.length > 0) performance.mark('fleetgate:fleet-rows');
  }, [store.agents.length > 0]);
  // Rows are memoised: other views' updates (approvals, effects) re-render this component, and
  // 2,000 skill cells are worth not diffing again; a row re-renders when its agent changed.
  const rows = store.agents
    .slice(0, shown)
    .map((a) => (
      <AgentRow
        key={a.name}
        store={store}
        agent={a}
        min={min}
        canAck={canAck}
        driftVersion={store.driftVersion}
        now={now}
      />
    ));
  return (
    <section aria-labelledby="fleet-title">
      <div class="toolbar">
        <h2 id="fleet-title">Fleet</h2>
        <label>
          radius ≥{' '}
          <select value={min} onChange={(e) => setMin(e.currentTarget.value as Radius | 'all')}>
            <option value="all">any</option>
            {RADII.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <Legend />
        <span class="muted small" data-fleet-shown={shown} data-fleet-total={store.agents.length}>
          {store.agents.length} agent(s)
          {shown < store.agents.length ? `, ${shown} rendered so far` : ''}
        </span>
      </div>
      <div class="table-wrap">
        <table class="fleet">
          <thead>
            <tr>
              <th scope="col">agent</th>
              <th scope="col">card</th>
              <th scope="col">skills</th>
            </tr>
          </thead>
          <tbody>{rows}</tbody>
        </table>
      </div>
    </section>
  );
}
