/**
 * `/metrics` (Prometheus text, prom-client): dispatches, gate decisions, approvals, deltas, card
 * refreshes, tracker size, outbox lag, bus handler errors, live-event clients and HTTP requests.
 *
 * Counters that come from bus events are fed by one durable subscription shared by every replica
 * (`fleetgate_metrics`): on NATS each event is counted by exactly one replica, so summing a
 * counter over replicas gives the fleet's total. Gauges are read from the store and the process
 * when scraped.
 */
import { sql } from 'kysely';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Subscription } from '../../bus/index.js';
import type { GateVerdict, GateCall } from '../../dispatch/index.js';
import type { EventEnvelope } from '../../protocol/index.js';
import { BLAST_RADII } from '../../protocol/index.js';
import type { Gateway, GatewayPorts } from '../gateway-types.js';
import type { EventHubStats } from './event-hub.js';

/** The metrics of one gateway process. */
export interface GatewayMetrics {
  readonly registry: Registry;
  /** Counts one gate decision (wired to the gateway's `onGateDecision`). */
  observeDecision(request: GateCall, decision: GateVerdict): void;
  /** Counts one answered HTTP request. */
  observeRequest(route: string, method: string, status: number, seconds: number): void;
  /** Starts counting bus events and reading gauges from `gateway`. */
  start(gateway: Gateway, ports: GatewayPorts, hub: () => EventHubStats): Promise<void>;
  /** Prometheus text. */
  scrape(): Promise<string>;
  stop(): Promise<void>;
}

const RADII = [...BLAST_RADII, 'unknown'] as const;

function field(payload: unknown, key: string): unknown {
  return typeof payload === 'object' && payload !== null
    ? (payload as Record<string, unknown>)[key]
    : undefined;
}

function text(value: unknown, fallback = 'unknown'): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

/** The mode a gate decision stands for: the policy's mode, or `deny`. */
function modeOf(decision: GateVerdict): string {
  if (decision.action === 'deny') return 'deny';
  const mode = field(decision.decision, 'mode');
  if (typeof mode === 'string') return mode;
  return decision.action === 'allow' ? 'autonomous' : 'gated';
}

/** Builds the metrics of one process (its own registry: nothing global). */
export function createGatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'fleetgate_' });
  let gateway: Gateway | undefined;
  let ports: GatewayPorts | undefined;
  let hubStats: (() => EventHubStats) | undefined;
  let subscription: Subscription | undefined;

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
      if (gateway === undefined) return;
      const pending = await gateway.approvals.list({ status: 'pending', includeSnoozed: true });
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
      if (gateway === undefined) return;
      this.reset();
      const now = Date.now();
      for (const s of gateway.agents.states()) {
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
      if (ports !== undefined) this.set(ports.leaseHeld() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'fleetgate_tracker_tasks',
    help: 'Tasks the task tracker follows in this process',
    registers: [registry],
    collect() {
      if (ports !== undefined) this.set(ports.trackedTasks());
    },
  });
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
      if (ports === undefined) return;
      const row = await ports.store.db
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
      if (hubStats !== undefined) this.set(hubStats().clients);
    },
  });
  new Gauge({
    name: 'fleetgate_events_clients_cut',
    help: 'Live-event clients cut for falling behind since start',
    registers: [registry],
    collect() {
      if (hubStats !== undefined) this.set(hubStats().cut);
    },
  });
  new Gauge({
    name: 'fleetgate_events_retained_bytes',
    help: 'Bytes of live events this process keeps for Last-Event-ID resume (events.retainBytes)',
    registers: [registry],
    collect() {
      if (hubStats !== undefined) this.set(hubStats().retainedBytes);
    },
  });
  new Gauge({
    name: 'fleetgate_events_queued_bytes',
    help: 'Bytes of live events waiting for clients that are behind (events.bufferBytes)',
    registers: [registry],
    collect() {
      if (hubStats !== undefined) this.set(hubStats().queuedBytes);
    },
  });
  const requests = new Histogram({
    name: 'fleetgate_http_request_seconds',
    help: 'HTTP API requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [registry],
  });

  const radiusOf = (agent: string, skill: string): string =>
    gateway?.agents.effectiveRadius(agent, skill).radius ?? 'unknown';

  const onEvent = (event: EventEnvelope): void => {
    const p = event.payload;
    switch (event.topic) {
      case 'skill.dispatch.gated':
      case 'skill.dispatch.started':
      case 'skill.dispatch.completed':
      case 'skill.dispatch.failed':
      case 'skill.dispatch.rejected':
      case 'skill.dispatch.awaiting-input': {
        const agent = text(field(p, 'agent'));
        const skill = text(field(p, 'skill'));
        dispatches.inc({
          agent,
          skill,
          radius: radiusOf(agent, skill),
          status: event.topic.slice('skill.dispatch.'.length),
        });
        return;
      }
      case 'hitl.approval.decided': {
        const created = field(p, 'createdAt');
        const decided = field(p, 'decidedAt');
        if (typeof created === 'number' && typeof decided === 'number') {
          timeToDecision.observe(
            {
              radius: text(field(p, 'radius')),
              outcome: text(field(p, 'outcome'), text(field(p, 'status'))),
            },
            Math.max(0, (decided - created) / 1000),
          );
        }
        return;
      }
      case 'world.state.delta': {
        const list = field(p, 'deltas');
        deltas.inc({ agent: text(field(p, 'source')) }, Array.isArray(list) ? list.length : 0);
        return;
      }
      case 'world.state.delta.rejected': {
        const list = field(p, 'rejected');
        rejected.inc({ agent: text(field(p, 'source')) }, Array.isArray(list) ? list.length : 0);
        return;
      }
      case 'fleet.card.refreshed':
      case 'fleet.card.failed':
      case 'fleet.agent.stale':
        refreshes.inc({
          agent: text(field(p, 'agent')),
          outcome:
            event.topic === 'fleet.card.refreshed' ? 'refreshed' : event.topic.split('.')[2]!,
        });
        return;
      case 'system.error':
        handlerErrors.inc({ code: text(field(p, 'code'), 'uncoded') });
        return;
      default:
        return;
    }
  };

  return {
    registry,
    observeDecision(_request, decision) {
      decisions.inc({ mode: modeOf(decision) });
    },
    observeRequest(route, method, status, seconds) {
      requests.observe({ route, method, status: String(status) }, seconds);
    },
    async start(gw, given, hub) {
      gateway = gw;
      ports = given;
      hubStats = hub;
      subscription = await gw.events.subscribe('>', (event) => onEvent(event as EventEnvelope), {
        name: 'fleetgate_metrics',
        durable: true,
        overflow: 'drop-oldest',
      });
    },
    scrape: () => registry.metrics(),
    async stop() {
      await subscription?.unsubscribe();
      subscription = undefined;
    },
  };
}
