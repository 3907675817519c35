/**
 * The instruments of `/metrics`: the counters that bus events feed, and the gauges read when
 * scraped from what the gateway, its ports and the live-event hub hold (nothing until they are
 * given). They are registered in the order the scrape lists them.
 */
import { sql } from 'kysely';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { GaugeConfiguration, Registry } from 'prom-client';
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
 * Declares prom-client instruments on one registry, one call each: name, help text, label names,
 * and a histogram's buckets. A gauge read when scraped gets `collect`, called with the gauge itself.
 *
 * @example
 * const metric = instrumentsOn(registry);
 * const pushes = metric.counter('a2a_proxy_push_deliveries_total', 'Push deliveries', ['outcome']);
 */
export function instrumentsOn(registry: Registry) {
  return {
    counter: <L extends string = never>(
      name: string,
      help: string,
      labelNames: readonly L[] = [],
    ) => new Counter<L>({ name, help, labelNames, registers: [registry] }),
    gauge: <L extends string = never>(
      name: string,
      help: string,
      labelNames: readonly L[] = [],
      collect?: (gauge: Gauge<L>) => void | Promise<void>,
    ): Gauge<L> => {
      const config: GaugeConfiguration<L> = { name, help, labelNames, registers: [registry] };
      if (collect !== undefined) {
        config.collect = function () {
          return collect(this);
        };
      }
      return new Gauge(config);
    },
    histogram: <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      buckets: number[],
    ) => new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] }),
  };
}

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

/** Dispatches, gate decisions, approvals, deltas, card refreshes, tracked tasks and alerts. */
function fleetInstruments(registry: Registry, sources: MetricsSources) {
  const metric = instrumentsOn(registry);
  const dispatches = metric.counter(
    'fleetgate_dispatches_total',
    'Dispatches by agent, skill, effective radius and status they reached',
    ['agent', 'skill', 'radius', 'status'],
  );
  const decisions = metric.counter(
    'fleetgate_gate_decisions_total',
    'Policy gate decisions by mode (autonomous, notification, veto, gated, compound, deny)',
    ['mode'],
  );
  metric.gauge(
    'fleetgate_approvals_pending',
    'Approvals waiting for a decision, by radius',
    ['radius'],
    async (gauge) => {
      if (sources.gateway === undefined) return;
      const pending = await sources.gateway.approvals.list({
        status: 'pending',
        includeSnoozed: true,
      });
      gauge.reset();
      for (const r of RADII) gauge.set({ radius: r }, 0);
      for (const a of pending) gauge.inc({ radius: a.radius ?? 'unknown' });
    },
  );
  const timeToDecision = metric.histogram(
    'fleetgate_approval_decision_seconds',
    'Time from an approval request to its decision, by radius and outcome',
    ['radius', 'outcome'],
    [1, 5, 15, 30, 60, 300, 900, 1800, 3600, 14_400, 86_400],
  );
  const deltas = metric.counter(
    'fleetgate_deltas_published_total',
    'World-state delta entries published, by reporting agent',
    ['agent'],
  );
  const rejected = metric.counter(
    'fleetgate_deltas_rejected_total',
    'World-state delta entries rejected, by reporting agent',
    ['agent'],
  );
  const refreshes = metric.counter(
    'fleetgate_card_refreshes_total',
    'Card refresh outcomes by agent (refreshed, failed, stale)',
    ['agent', 'outcome'],
  );
  metric.gauge(
    'fleetgate_card_age_seconds',
    'Seconds since each agent card was last fetched successfully (-1: never)',
    ['agent', 'status'],
    (gauge) => {
      if (sources.gateway === undefined) return;
      gauge.reset();
      const now = Date.now();
      for (const s of sources.gateway.agents.states()) {
        gauge.set(
          { agent: s.name, status: s.status },
          s.lastFetchedAt === undefined ? -1 : (now - s.lastFetchedAt) / 1000,
        );
      }
    },
  );
  metric.gauge(
    'fleetgate_card_refresh_lease_held',
    '1 when this replica holds the card-refresh lease (fetches the cards), else 0',
    [],
    (gauge) => {
      if (sources.ports !== undefined) gauge.set(sources.ports.leaseHeld() ? 1 : 0);
    },
  );
  metric.gauge(
    'fleetgate_tracker_tasks',
    'Tasks the task tracker follows in this process',
    [],
    (gauge) => {
      if (sources.ports !== undefined) gauge.set(sources.ports.trackedTasks());
    },
  );
  const alerts = metric.counter(
    'fleetgate_alerts_total',
    'Ops alerts raised (ops.alert.*), by kind and severity',
    ['kind', 'severity'],
  );
  return { dispatches, decisions, timeToDecision, deltas, rejected, refreshes, alerts };
}

/** The outbox, bus handler errors, live-event clients and HTTP requests. */
function serviceInstruments(registry: Registry, sources: MetricsSources) {
  const metric = instrumentsOn(registry);
  // One read of the outbox per scrape, shared by its two gauges (collected side by side): each
  // set from its own collect, so neither shows the previous scrape's value.
  let reading: Promise<{ unsent: number; oldest: number | undefined }> | undefined;
  const readOutbox = (): Promise<{ unsent: number; oldest: number | undefined } | undefined> => {
    const store = sources.ports?.store;
    if (store === undefined) return Promise.resolve(undefined);
    reading ??= store.db
      .selectFrom('fleetgate_outbox')
      .select([
        sql<number | string>`count(*)`.as('unsent'),
        sql<number | string | null>`min(created_at)`.as('oldest'),
      ])
      .where('sent_at', 'is', null)
      .executeTakeFirst()
      .then((row) => ({
        unsent: Number(row?.unsent ?? 0),
        oldest: row?.oldest === null || row?.oldest === undefined ? undefined : Number(row.oldest),
      }))
      .finally(() => (reading = undefined));
    return reading;
  };
  metric.gauge(
    'fleetgate_outbox_unsent',
    'Outbox events committed but not yet published',
    [],
    async (gauge) => {
      const outbox = await readOutbox();
      if (outbox !== undefined) gauge.set(outbox.unsent);
    },
  );
  metric.gauge(
    'fleetgate_outbox_lag_seconds',
    'Age of the oldest unpublished outbox event (0 when none)',
    [],
    async (gauge) => {
      const outbox = await readOutbox();
      if (outbox === undefined) return;
      gauge.set(outbox.oldest === undefined ? 0 : Math.max(0, (Date.now() - outbox.oldest) / 1000));
    },
  );
  const handlerErrors = metric.counter(
    'fleetgate_bus_handler_errors_total',
    'Failures reported on system.error, by error code',
    ['code'],
  );
  // The live-event hub's figures, read when scraped.
  const hubGauge = (name: string, help: string, read: (stats: EventHubStats) => number) =>
    metric.gauge(name, help, [], (gauge) => {
      if (sources.hubStats !== undefined) gauge.set(read(sources.hubStats()));
    });
  hubGauge(
    'fleetgate_events_clients',
    'Live-event (SSE) clients connected to this process',
    (s) => s.clients,
  );
  hubGauge(
    'fleetgate_events_clients_cut',
    'Live-event clients cut for falling behind since start',
    (s) => s.cut,
  );
  hubGauge(
    'fleetgate_events_retained_bytes',
    'Bytes of live events this process keeps for Last-Event-ID resume (events.retainBytes)',
    (s) => s.retainedBytes,
  );
  hubGauge(
    'fleetgate_events_queued_bytes',
    'Bytes of live events waiting for clients that are behind (events.bufferBytes)',
    (s) => s.queuedBytes,
  );
  const requests = metric.histogram(
    'fleetgate_http_request_seconds',
    'HTTP API requests by route, method and status',
    ['route', 'method', 'status'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
  );
  return { handlerErrors, requests };
}
