/** The fleet: a row per agent, a cell per skill coloured by its effective radius. */
import { useMemo, useState } from 'preact/hooks';
import { ApiError } from '../api.js';
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

function SkillCell(props: { store: Store; agent: AgentView; skill: SkillView; canAck: boolean }) {
  const { store, agent, skill } = props;
  const [message, setMessage] = useState('');
  const drift = store.drift.get(`${agent.name}/${skill.id}`);
  const ack = async (): Promise<void> => {
    setMessage('');
    try {
      await store.api!.post(`/api/agents/${encodeURIComponent(agent.name)}/ack`, {
        skill: skill.id,
      });
      await store.loadFleet();
    } catch (error) {
      setMessage(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error));
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
}

export function FleetView(props: { store: Store }) {
  const store = useStore(props.store);
  const now = useNow(5000);
  const [min, setMin] = useState<Radius | 'all'>('all');
  const canAck = store.session !== undefined && roleAtLeast(store.session.role, 'admin');
  const keep = (s: SkillView): boolean =>
    min === 'all' || radiusRank(s.effectiveRadius) >= radiusRank(min);
  // The table is rebuilt only when what it shows changed: other views' updates (approvals,
  // effects) re-render this component, and 2,000 skill cells are worth not diffing again.
  const body = useMemo(
    () => (
      <tbody>
        {store.agents.map((a) => {
          const skills = a.skills.filter(keep);
          if (skills.length === 0 && min !== 'all') return null;
          return (
            <tr key={a.name} data-agent={a.name}>
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
                          <code>{d.code ?? ''}</code> {d.path ?? ''}{' '}
                          {d.message ?? JSON.stringify(d)}
                        </li>
                      ))}
                    </ul>
                  </details>
                )}
              </td>
              <td>
                <ul class="skills">
                  {skills.map((s) => (
                    <SkillCell key={s.id} store={store} agent={a} skill={s} canAck={canAck} />
                  ))}
                </ul>
              </td>
            </tr>
          );
        })}
      </tbody>
    ),
    [store.agents, min, canAck, store.driftVersion, now],
  );
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
          {body}
        </table>
      </div>
    </section>
  );
}
