/**
 * `/metrics` (Prometheus text, prom-client): dispatches, gate decisions, approvals, deltas, card
 * refreshes, tracker size, outbox lag, bus handler errors, live-event clients and HTTP requests.
 *
 * Counters that come from bus events are fed by one durable subscription shared by every replica
 * (`fleetgate_metrics`): on NATS each event is counted by exactly one replica, so summing a
 * counter over replicas gives the fleet's total. Gauges are read from the store and the process
 * when scraped.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { ALERT_KINDS, ALERT_SEVERITIES } from '../../alerts/index.js';
import type { Subscription } from '../../bus/index.js';
import type { GateVerdict, GateCall } from '../../dispatch/index.js';
import type { EventEnvelope } from '../../protocol/index.js';
import type { FleetRuntime } from '../fleet-runtime.js';
import type { Gateway, GatewayConsumer, GatewayPorts } from '../gateway-types.js';
import type { EventHubStats } from './event-hub.js';
import type { GatewayInstruments, MetricsSources } from './metrics-instruments.js';
import { registerInstruments } from './metrics-instruments.js';

/** The metrics of one gateway process. */
export interface GatewayMetrics {
  readonly registry: Registry;
  /** Counts one gate decision (wired to the gateway's `onGateDecision`). */
  observeDecision(request: GateCall, decision: GateVerdict): void;
  /** Counts one answered HTTP request. */
  observeRequest(route: string, method: string, status: number, seconds: number): void;
  /**
   * Counts the gateway's bus events: handed to `createGateway` (`deps.consumers`), so the events
   * of its start (the first card refresh, recovered calls and their alerts) are counted too.
   */
  readonly consumer: GatewayConsumer;
  /** Reads the gauges from `gateway` from now on. */
  start(gateway: Gateway, ports: GatewayPorts, hub: () => EventHubStats): void;
  /** Prometheus text. */
  scrape(): Promise<string>;
  stop(): Promise<void>;
}

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
  const sources: MetricsSources = {};
  let subscription: Subscription | undefined;
  const instruments = registerInstruments(registry, sources);
  const { decisions, requests } = instruments;

  let agents: FleetRuntime['broker'] | undefined;
  const radiusOf = (agent: string, skill: string): string =>
    agents?.effectiveRadius(agent, skill).radius ?? 'unknown';

  const consumer: GatewayConsumer = {
    async start(events, fleet) {
      agents = fleet;
      subscription = await events.subscribe(
        '>',
        (event) => countEvent(instruments, event as EventEnvelope, radiusOf),
        { name: 'fleetgate_metrics', durable: true, overflow: 'drop-oldest' },
      );
    },
    async stop() {
      const stopping = subscription;
      subscription = undefined;
      await stopping?.unsubscribe();
    },
  };

  return {
    registry,
    consumer,
    observeDecision(_request, decision) {
      decisions.inc({ mode: modeOf(decision) });
    },
    observeRequest(route, method, status, seconds) {
      requests.observe({ route, method, status: String(status) }, seconds);
    },
    start(gw, given, hub) {
      sources.gateway = gw;
      sources.ports = given;
      sources.hubStats = hub;
    },
    scrape: () => registry.metrics(),
    stop: () => consumer.stop(),
  };
}

/**
 * The alert kinds and severities counted by name; anything else (a topic any bus publisher could
 * make up) counts as `other` / `unknown`, so the series stay few.
 */
const ALERT_LABELS = {
  kind: new Set<string>([...ALERT_KINDS, 'world_domain_full', 'outbox_parked']),
  severity: new Set<string>(ALERT_SEVERITIES),
};

/** Counts one bus event into the instruments it feeds (most events feed none). */
function countEvent(
  instruments: GatewayInstruments,
  event: EventEnvelope,
  radiusOf: (agent: string, skill: string) => string,
): void {
  const { dispatches, timeToDecision, deltas, rejected, refreshes, handlerErrors, alerts } =
    instruments;
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
        outcome: event.topic === 'fleet.card.refreshed' ? 'refreshed' : event.topic.split('.')[2]!,
      });
      return;
    case 'system.error':
      handlerErrors.inc({ code: text(field(p, 'code'), 'uncoded') });
      return;
    default:
      if (event.topic.startsWith('ops.alert.')) {
        const kind = event.topic.slice('ops.alert.'.length);
        const severity = field(p, 'severity');
        alerts.inc({
          kind: ALERT_LABELS.kind.has(kind) ? kind : 'other',
          severity:
            typeof severity === 'string' && ALERT_LABELS.severity.has(severity)
              ? severity
              : 'unknown',
        });
      }
      return;
  }
}
