/**
 * The instruments of `/metrics`: the counters that bus events feed, and the gauges read when
 * scraped from what the gateway, its ports and the live-event hub hold (nothing until they are
 * given). They are registered in the order the scrape lists them.
 */
import { sql } from 'kysely';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import { BLAST_RADII } from '../../protocol/index.js';
import type { Gateway, GatewayPorts } from '../gateway-types.js';
import type { EventHubStats } from './event-hub.js';

/** What the gauges read when scraped: set when the metrics start. */
export interface MetricsSources {
  gateway?: Gateway;
  ports?: GatewayPorts;
  hubStats?: () => EventHubStats;
}

const RADII = [...BLAST_RADII, 'unknown'] as const;

/**
 * Registers every instrument on `registry`: the fleet's (dispatches, gate decisions, approvals,
 * deltas, cards, tracked tasks), then the process's (outbox, bus handler errors, live events,
 * HTTP requests).
 */
export function registerInstruments(
  registry: Registry,
  sources: MetricsSources,
): GatewayInstruments {
  return { ...fleetInstruments(registry, sources), ...serviceInstruments(registry, sources) };
}

/** The counters and histograms that bus events and answered requests feed. */
export type GatewayInstruments = ReturnType<typeof fleetInstruments> &
  ReturnType<typeof serviceInstruments>;

/** Dispatches, gate decisions, approvals, deltas, card refreshes and tracked tasks. */
function fleetInstruments(registry: Registry, sources: MetricsSources) {
  const dispatches = new Counter({
    name: 'fleetgate_dispatches_total',
    help: 'Dispatches by agent, skill, effective radius and status they reached',
    labelNames: ['agent', 'skill', 'radius', 'status'],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'fleetgate_gate_decisions_total',
    help: 'Policy gate decisions by mode (autonomous, notification, veto, gated, compound, deny)',
    labelNames: ['mode'],
    registers: [registry],
  });
  new Gauge({
    name: 'fleetgate_approvals_pending',
    help: 'Approvals waiting for a decision, by radius',
    labelNames: ['radius'],
    registers: [registry],
    async collect() {
      if (sources.gateway === undefined) return;
      const pending = await sources.gateway.approvals.list({
        status: 'pending',
        includeSnoozed: true,
      });
      this.reset();
      for (const r of RADII) this.set({ radius: r }, 0);
      for (const a of pending) this.inc({ radius: a.radius ?? 'unknown' });
    },
  });
  const timeToDecision = new Histogram({
    name: 'fleetgate_approval_decision_seconds',
    help: 'Time from an approval request to its decision, by radius and outcome',
    labelNames: ['radius', 'outcome'],
    buckets: [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 14_400, 86_400],
    registers: [registry],
  });
  const deltas = new Counter({
    name: 'fleetgate_deltas_published_total',
    help: 'World-state delta entries published, by reporting agent',
    labelNames: ['agent'],
    registers: [registry],
  });
  const rejected = new Counter({
    name: 'fleetgate_deltas_rejected_total',
    help: 'World-state delta entries rejected, by reporting agent',
    labelNames: ['agent'],
    registers: [registry],
  });
  const refreshes = new Counter({
    name: 'fleetgate_card_refreshes_total',
    help: 'Card refresh outcomes by agent (refreshed, failed, stale)',
    labelNames: ['agent', 'outcome'],
    registers: [registry],
  });
  new Gauge({
    name: 'fleetgate_card_age_seconds',
    help: 'Seconds since each agent card was last fetched successfully (-1: never)',
    labelNames: ['agent', 'status'],
    registers: [registry],
    collect() {
      if (sources.gateway === undefined) return;
      this.reset();
      const now = Date.now();
      for (const s of sources.gateway.agents.states()) {
        this.set(
          { agent: s.name, status: s.status },
          s.lastFetchedAt === undefined ? -1 : (now - s.lastFetchedAt) / 1000,
        );
      }
    },
  });
  new Gauge({
    name: 'fleetgate_card_refresh_lease_held',
    help: '1 when this replica holds the card-refresh lease (fetches the cards), else 0',
    registers: [registry],
    collect() {
      if (sources.ports !== undefined) this.set(sources.ports.leaseHeld() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'fleetgate_tracker_tasks',
    help: 'Tasks the task tracker follows in this process',
    registers: [registry],
    collect() {
      if (sources.ports !== undefined) this.set(sources.ports.trackedTasks());
    },
  });
  return { dispatches, decisions, timeToDecision, deltas, rejected, refreshes };
}

/** The outbox, bus handler errors, live-event clients and HTTP requests. */
function serviceInstruments(registry: Registry, sources: MetricsSources) {
  const outboxLag = new Gauge({
    name: 'fleetgate_outbox_unsent',
    help: 'Outbox events committed but not yet published',
    registers: [registry],
  });
  new Gauge({
    name: 'fleetgate_outbox_lag_seconds',
    help: 'Age of the oldest unpublished outbox event (0 when none)',
    registers: [registry],
    async collect() {
      if (sources.ports === undefined) return;
      const row = await sources.ports.store.db
        .selectFrom('fleetgate_outbox')
        .select([
          sql<number | string>`count(*)`.as('unsent'),
          sql<number | string | null>`min(created_at)`.as('oldest'),
        ])
        .where('sent_at', 'is', null)
        .executeTakeFirst();
      const oldest =
        row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest);
      outboxLag.set(Number(row?.unsent ?? 0));
      this.set(oldest === undefined ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
    },
  });
  const handlerErrors = new Counter({
    name: 'fleetgate_bus_handler_errors_total',
    help: 'Failures reported on system.error, by error code',
    labelNames: ['code'],
    registers: [registry],
  });
  new Gauge({
    name: 'fleetgate_events_clients',
    help: 'Live-event (SSE) clients connected to this process',
    registers: [registry],
    collect() {
      if (sources.hubStats !== undefined) this.set(sources.hubStats().clients);
    },
  });
  new Gauge({
    name: 'fleetgate_events_clients_cut',
    help: 'Live-event clients cut for falling behind since start',
    registers: [registry],
    collect() {
      if (sources.hubStats !== undefined) this.set(sources.hubStats().cut);
    },
  });
  new Gauge({
    name: 'fleetgate_events_retained_bytes',
    help: 'Bytes of live events this process keeps for Last-Event-ID resume (events.retainBytes)',
    registers: [registry],
    collect() {
      if (sources.hubStats !== undefined) this.set(sources.hubStats().retainedBytes);
    },
  });
  new Gauge({
    name: 'fleetgate_events_queued_bytes',
    help: 'Bytes of live events waiting for clients that are behind (events.bufferBytes)',
    registers: [registry],
    collect() {
      if (sources.hubStats !== undefined) this.set(sources.hubStats().queuedBytes);
    },
  });
  const requests = new Histogram({
    name: 'fleetgate_http_request_seconds',
    help: 'HTTP API requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [registry],
  });
  return { handlerErrors, requests };
}
