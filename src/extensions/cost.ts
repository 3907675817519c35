import { COST_V1_URI, STAMPS, extractCost } from '../protocol/index.js';
import { createStateKey } from './state.js';
import { normalizedTask } from './task-view.js';
import type { Extension, ExtensionEventBus } from './types.js';

/** Topic of cost samples. */
export const COST_SAMPLE_TOPIC = 'cost.sample';

/** One cost sample (`cost.sample` payload). */
export interface CostSample {
  agent: string;
  skill: string;
  taskId?: string;
  /** Tokens in/out and cost: only when the agent sent a cost-v1 part. */
  tokensIn?: number;
  tokensOut?: number;
  costUsd?: number;
  /** Wall time from the first `before` hook to the outcome, always measured here. */
  wallMs: number;
  /** The agent's own `durationMs`, when it reported one. */
  agentDurationMs?: number;
  /** From the cost part when it says so, else from the task state / call outcome. */
  success: boolean;
  /** `agent` when the agent sent a cost-v1 part, `wall-clock` when only wall time is known. */
  measured: 'agent' | 'wall-clock';
}

/** Dependencies of {@link createCostExtension}. */
export interface CostExtensionOptions {
  bus: ExtensionEventBus;
  /** Also hands each sample to a recorder (e.g. the alerts issue's cost summaries). */
  record?: (sample: CostSample) => void | Promise<void>;
  /** Monotonic clock in milliseconds (default `performance.now`). */
  now?: () => number;
}

const STARTED = createStateKey<number>('cost-v1:started');

/**
 * Publishes one sample (a function of its own, so a call without a recorder makes no closure):
 * through the bus's `publishNow` when it has one, so there is nothing to await.
 */
function publishSample(
  bus: ExtensionEventBus,
  sample: CostSample,
  correlationId: string,
): Promise<unknown> | undefined {
  if (bus.publishNow === undefined)
    return bus.publish(COST_SAMPLE_TOPIC, sample, { correlationId });
  bus.publishNow(COST_SAMPLE_TOPIC, sample, { correlationId });
  return undefined;
}

/**
 * cost-v1. `before` stamps `x-cost-skill` and notes the start time. `after` records one sample:
 * tokens and cost only when the agent sent a cost-v1 part, wall time always, `success` from the
 * part or else the outcome; it publishes `cost.sample` (marked `measured: 'wall-clock'` when the
 * agent reported nothing).
 */
export function createCostExtension(options: CostExtensionOptions): Extension {
  const now = options.now ?? (() => performance.now());
  return {
    uri: COST_V1_URI,
    description: 'Stamps the skill and publishes a cost sample per call.',
    before(ctx) {
      ctx.stamp(STAMPS.costSkill, ctx.skill);
      ctx.state.set(STARTED, now());
    },
    after(ctx, outcome) {
      const started = ctx.state.get(STARTED);
      // A resumed call (restart, another replica) has no before-state: measure from its start.
      const wallMs = Math.max(
        0,
        started === undefined ? Date.now() - ctx.startedAt : now() - started,
      );
      const task = outcome.task;
      const view = task === undefined ? undefined : normalizedTask(task);
      const reported = view === undefined ? undefined : extractCost(view).payload;
      const stateOk = outcome.ok && (view === undefined || view.state === 'completed');
      const agent = ctx.agent;
      const skill = ctx.skill;
      const success = reported?.success ?? stateOk;
      const measured = reported === undefined ? 'wall-clock' : 'agent';
      // The task id in the literal when there is one: the three fields a cost part adds then fit
      // the object's first extra storage, with no second one grown.
      const sample: CostSample =
        task === undefined
          ? { agent, skill, wallMs, success, measured }
          : { agent, skill, wallMs, success, measured, taskId: task.id };
      if (reported?.usage?.input_tokens !== undefined)
        sample.tokensIn = reported.usage.input_tokens;
      if (reported?.usage?.output_tokens !== undefined)
        sample.tokensOut = reported.usage.output_tokens;
      if (reported?.costUsd !== undefined) sample.costUsd = reported.costUsd;
      if (reported?.durationMs !== undefined) sample.agentDurationMs = reported.durationMs;
      const record = options.record;
      // The record is a side effect beyond the bus: deferred to the winner of the terminal claim.
      const recorded =
        record === undefined
          ? undefined
          : options.bus.defer === undefined
            ? record(sample)
            : options.bus.defer(() => record(sample));
      if (recorded === undefined) return publishSample(options.bus, sample, ctx.correlationId);
      return recorded.then(() => publishSample(options.bus, sample, ctx.correlationId));
    },
  };
}
