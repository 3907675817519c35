/**
 * Every world change the gateway recorded (the audit log of every domain), searched and paged by
 * the gateway: by agent, skill, radius, domain, path, applied or rejected, and text; each row
 * with the value before and after and a link to the call that made it.
 */
import { useState } from 'preact/hooks';
import { Count, FilterSelect, SearchText, useSearch, VirtualTable } from '../search.js';
import type { Store } from '../state.js';
import type { SearchEffect } from '../types.js';
import { fleetOptions } from './dispatches.js';

const RADII = ['self', 'project', 'repo', 'fleet', 'public'] as const;
const ROW = 34;

function short(v: unknown): string {
  const text = v === undefined ? '' : JSON.stringify(v);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

export function EffectSearch(props: { store: Store; initial?: Record<string, string> }) {
  const { store } = props;
  const [filters, setFilters] = useState<Record<string, string>>({
    agent: '',
    skill: '',
    radius: '',
    domain: '',
    status: '',
    text: '',
    ...props.initial,
  });
  const search = useSearch<SearchEffect>(store, '/api/search/effects', filters);
  const set = (k: string) => (v: string) => setFilters((f) => ({ ...f, [k]: v }));
  const o = fleetOptions(store);
  const domains = [...new Set([...o.domains, ...Object.keys(store.world)])].sort();
  return (
    <div
      class="search"
      data-search="effects"
      data-took-ms={Math.round(search.tookMs)}
      data-query={search.shown}
    >
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
          options={RADII}
          onChange={set('radius')}
        />
        <FilterSelect
          name="domain"
          label="domain"
          value={filters.domain!}
          options={domains}
          onChange={set('domain')}
        />
        <FilterSelect
          name="status"
          label="outcome"
          value={filters.status!}
          options={['applied', 'rejected']}
          onChange={set('status')}
        />
        <SearchText value={filters.text!} onChange={set('text')} />
        <Count shown={search.items.length} total={search.total} noun="changes" />
        {search.loading && <span class="muted small">loading…</span>}
      </div>
      {search.error !== '' && (
        <p class="error" role="alert">
          {search.error}
        </p>
      )}
      <VirtualTable
        class="effect-search"
        rows={search.items}
        rowHeight={ROW}
        height={560}
        columns={7}
        onEnd={search.more}
        head={
          <tr>
            <th scope="col">time</th>
            <th scope="col">agent / skill</th>
            <th scope="col">domain</th>
            <th scope="col">path</th>
            <th scope="col">op</th>
            <th scope="col">before → after</th>
            <th scope="col">call</th>
          </tr>
        }
        row={(r) => (
          <tr
            key={r.seq}
            class={`row effect-row ${r.status}`}
            data-seq={r.seq}
            data-path={r.path}
            style={{ height: `${ROW}px` }}
          >
            <td class="small">{new Date(r.recordedAt).toLocaleString()}</td>
            <td>
              {r.agent} / {r.skill}
            </td>
            <td>{r.domain}</td>
            <td>
              <code>{r.path}</code>
            </td>
            <td>{r.op}</td>
            <td class="clip">
              {r.status === 'rejected' ? (
                <span class="error">rejected: {r.reason}</span>
              ) : (
                <code>
                  {short(r.previous)} → {short(r.next)}
                </code>
              )}
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
        )}
      />
    </div>
  );
}
