/**
 * `ops.alert.action_quality`: raised when a task fails (`skill.dispatch.failed`) or a cost sample
 * says `success: false`, with severity scaled by the skill's effective radius. A failure seen on
 * both topics for the same task raises one alert: the id is derived from agent + task. A call
 * whose outcome is unknown raises `ops.alert.outcome_unknown` instead, not this one.
 */
import type { Subscription } from '../bus/index.js';
import type { EventEnvelope } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { OpsAlert } from './alert.js';
import { alertEventId, alertSinkOf } from './alert.js';
import type { AlertRaiserOptions } from './reconciler.js';
import { ALERT_BASE_SEVERITY, scaleSeverity } from './severity.js';

/** Default subscription name prefix of the action-quality monitor. */
export const ACTION_QUALITY_SUBSCRIPTION = 'alerts-action-quality';

/** Watches for failed actions and raises `ops.alert.action_quality`. */
export interface ActionQualityMonitor {
  /** Subscribes to `cost.sample` and `skill.dispatch.failed` (durable). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Handles one event of either topic; resolves to the alert raised, if any. */
  handle(event: EventEnvelope): Promise<OpsAlert | undefined>;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/**
 * What a `success: false` cost sample says, naming whose sample it is: the agent's own (a cost-v1
 * part, `measured: 'agent'`), or the one the gateway made from the task's end when the agent sent
 * none (`measured: 'wall-clock'`): that agent reported nothing, its task failed.
 */
function costSampleMessage(who: string, taskId: string | undefined, measured: unknown): string {
  const task = taskId === undefined ? '' : `task ${taskId}`;
  // `measured` comes off the bus as written (another version, another replica): anything else is
  // a sample of no named source.
  switch (measured) {
    case 'agent':
      return `${who} reported success: false in its own cost sample${task && ` (${task})`}`;
    case 'wall-clock':
      return `${who} failed (${task && `${task}; `}the gateway's wall-clock sample: success false)`;
    default:
      return `${who}: a cost sample says success: false${task && ` (${task})`}`;
  }
}

/**
 * Creates the action-quality monitor.
 *
 * @example
 * ```ts
 * const monitor = createActionQualityMonitor({ bus, declarations: fleet.declarations });
 * await monitor.start();
 * ```
 */
export function createActionQualityMonitor(options: AlertRaiserOptions): ActionQualityMonitor {
  const { bus, declarations } = options;
  const sink = alertSinkOf(bus, options.sink);
  const base = options.baseSeverity?.action_quality ?? ALERT_BASE_SEVERITY.action_quality;
  const name = options.subscriptionName ?? ACTION_QUALITY_SUBSCRIPTION;
  const subscriptions: Subscription[] = [];

  async function handle(event: EventEnvelope): Promise<OpsAlert | undefined> {
    const payload = record(event.payload);
    const agent = text(payload.agent);
    const skill = text(payload.skill);
    if (agent === undefined || skill === undefined) return undefined;
    const taskId = text(payload.taskId);
    let message: string;
    if (event.topic === 'cost.sample') {
      if (payload.success !== false) return undefined;
      message = costSampleMessage(`${agent}/${skill}`, taskId, payload.measured);
    } else if (event.topic === 'skill.dispatch.failed') {
      // A dispatch record carries its end in `result` (`error.message`, else the task state).
      const result = record(payload.result);
      const error = record(result.error);
      // A call whose outcome is unknown is no failure of the agent's: it has its own alert
      // (`outcome_unknown`), which says what to check.
      if (error.code === 'FLEETGATE_CALL_OUTCOME_UNKNOWN') return undefined;
      const reason = text(payload.reason) ?? text(error.message) ?? text(result.state);
      // What the agent said when it failed the task (its final status text), when it said it.
      const said = text(result.text);
      message =
        `${agent}/${skill} failed${taskId === undefined ? '' : ` (task ${taskId})`}` +
        `${reason === undefined ? '' : `: ${reason}`}` +
        `${said === undefined || said === reason ? '' : ` The agent said: ${JSON.stringify(said)}`}`;
    } else {
      return undefined;
    }
    const { radius: effective, stale } = declarations.blast(agent, skill);
    const radius = stale || effective === undefined ? 'unknown' : effective;
    const alert: OpsAlert = {
      kind: 'action_quality',
      severity: scaleSeverity(base, radius, options.severity),
      agent,
      skill,
      radius,
      message,
      evidence: {
        source: event.topic,
        eventId: event.id,
        ...defined({ taskId }),
        stale,
        payload: event.payload,
      },
    };
    // One alert per failed task, whichever topic reported it first.
    const cause = taskId === undefined ? event.id : `task:${agent}:${taskId}`;
    await sink(alert, {
      id: alertEventId('action_quality', cause),
      correlationId: event.correlationId,
    });
    return alert;
  }

  return {
    async start() {
      if (subscriptions.length > 0) return;
      subscriptions.push(
        await bus.subscribe(
          'cost.sample',
          async (event) => {
            await handle(event);
          },
          { name: `${name}-cost`, durable: true },
        ),
        await bus.subscribe(
          'skill.dispatch.failed',
          async (event) => {
            await handle(event);
          },
          { name: `${name}-dispatch`, durable: true },
        ),
      );
    },
    async stop() {
      for (const sub of subscriptions.splice(0)) await sub.unsubscribe();
    },
    handle,
  };
}
