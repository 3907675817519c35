/** The metrics strip on every page, computed from what the page already holds (no extra calls). */
import { useMemo } from 'preact/hooks';
import { RADII, RadiusBadge } from '../radius.js';
import type { Store } from '../state.js';
import { useNow, useStore } from '../state.js';

function percentile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function duration(ms: number | undefined): string {
  if (ms === undefined) return '—';
  if (ms < 60_000) return `${Math.round(ms / 1000)}s`;
  return `${Math.round(ms / 60_000)}m`;
}

function uptime(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function MetricsStrip(props: { store: Store }) {
  const store = useStore(props.store);
  const now = useNow(5000);
  const byRadius = new Map<string, number>();
  // What the inbox counts as pending: snoozed requests are not.
  const waiting = store.awaitingDecision;
  for (const a of waiting)
    byRadius.set(a.radius ?? 'unknown', (byRadius.get(a.radius ?? 'unknown') ?? 0) + 1);
  // Sorted once per history read, not on every render (a live stream renders every frame).
  const decided = useMemo(
    () =>
      store.history
        .filter((a) => a.decidedAt !== null && a.status !== 'expired')
        .map((a) => a.decidedAt! - a.createdAt)
        .sort((x, y) => x - y),
    [store.history],
  );
  const perMinute = store.deltasSince(now - 60_000);
  const stale = store.agents.filter((a) => a.status === 'stale' || a.status === 'failed').length;
  return (
    <dl class="metrics" aria-label="Metrics">
      <div>
        <dt>pending by radius</dt>
        <dd class="pending-radii">
          {waiting.length === 0
            ? '0'
            : [...RADII, 'unknown' as const].map((r) => {
                const n = byRadius.get(r);
                return n === undefined ? null : (
                  <span key={r}>
                    <RadiusBadge radius={r === 'unknown' ? null : r} label={`${r} ${n}`} />{' '}
                  </span>
                );
              })}
        </dd>
      </div>
      <div>
        <dt>time to decision p50 / p95</dt>
        <dd>
          {duration(percentile(decided, 0.5))} / {duration(percentile(decided, 0.95))}
        </dd>
      </div>
      <div>
        <dt>deltas / min</dt>
        <dd data-metric="deltas-per-min">{perMinute}</dd>
      </div>
      <div>
        <dt>rejected deltas</dt>
        <dd>{store.rejectedDeltas}</dd>
      </div>
      <div>
        <dt>stale cards</dt>
        <dd>{stale}</dd>
      </div>
      <div>
        <dt>gateway</dt>
        <dd data-gateway-version={store.status?.version ?? ''}>
          {store.status === undefined
            ? '—'
            : store.streamLostAt === undefined
              ? `${store.status.version} · up ${uptime(store.status.uptimeMs + Math.max(0, now - store.statusReadAt))}`
              : // Out of reach: how long it has been up is not known, only when it was last heard.
                `${store.status.version} · not heard from since ${new Date(store.streamLostAt).toLocaleTimeString()}`}
        </dd>
      </div>
      <div>
        <dt>live</dt>
        <dd
          class={`stream stream-${store.stream}`}
          data-stream={store.stream}
          title={store.streamDetail}
        >
          {store.stream}
        </dd>
        {store.stream === 'offline' && store.streamDetail !== '' && (
          <dd class="small stream-offline" data-stream-detail>
            {store.streamDetail}
          </dd>
        )}
      </div>
    </dl>
  );
}
