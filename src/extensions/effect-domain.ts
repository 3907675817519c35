import {
  deterministicEventId,
  EFFECT_DOMAIN_V1_URI,
  LIMITS,
  STAMPS,
  extractWorldStateDeltas,
  partEventId,
  splitBySize,
  type WorldStateDeltaEntry,
} from '../protocol/index.js';
import { TaskEventIds } from './task-event-ids.js';
import { normalizedTask } from './task-view.js';
import type { Extension, ExtensionEventBus, SkillCallContext } from './types.js';
import { defined } from '../protocol/fields/index.js';

/** Topic of the validated deltas of one terminal task. */
export const WORLD_STATE_DELTA_TOPIC = 'world.state.delta';
/** Topic of the entries of one task that were not accepted. */
export const WORLD_STATE_DELTA_REJECTED_TOPIC = 'world.state.delta.rejected';

/**
 * The deterministic id of the `topic` event of one agent's task: `deterministicEventId(topic,
 * agent, taskId)`, so every path, process and replica gives the same id and the bus drops
 * re-sends. (The hot path of `world.state.delta` ids is {@link TaskEventIds}: the same ids.)
 */
export function taskEventId(topic: string, agent: string, taskId: string): string {
  return deterministicEventId(topic, agent, taskId);
}

/** Dependencies of {@link createEffectDomainExtension}. */
export interface EffectDomainExtensionOptions {
  bus: ExtensionEventBus;
  /**
   * Largest payload of one event, as JSON bytes (default `LIMITS.eventBytes`, 512 KiB): deltas or
   * rejections that need more are published in parts under it (see `WorldStateDeltaEvent.part`).
   */
  maxEventBytes?: number;
}

/** Room left for the envelope (id, time, correlation id, topic) around a payload. */
const ENVELOPE_BYTES = 512;
/** The most bytes a validated delta entry can take as JSON (value, escaped path and domain, keys). */
const DELTA_ENTRY_BOUND = LIMITS.deltaValueBytes + 6 * (LIMITS.pathLength + LIMITS.nameLength) + 64;

/** The fixed part of a payload: everything but its list, as JSON bytes, plus the envelope. */
function baseBytes(payload: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(payload)) + ENVELOPE_BYTES;
}

/** The most JSON bytes one UTF-16 unit of a string can take (`\u001f`). */
const MAX_BYTES_PER_UNIT = 6;

/** {@link baseBytes} of a `world.state.delta` payload whose five strings are all empty. */
const DELTA_BASE_BYTES = baseBytes({
  source: '',
  skill: '',
  deltas: [],
  taskId: '',
  correlationId: '',
  state: '',
  part: { index: 0, count: 0 },
});

/**
 * effect-domain-v1. `before` stamps `x-effect-domain-skill` with the skill name. `after` reads
 * every worldstate-delta part of the task and publishes one `world.state.delta`
 * `{ source, skill, deltas, taskId, correlationId, state }` with an id derived from agent + taskId,
 * and one `world.state.delta.rejected` listing the invalid entries with reasons. Nothing is
 * published for a task without delta parts. Deltas of a failed or canceled task are published too:
 * they are facts the agent reported; `state` says how the task ended. When the deltas (or the
 * rejections) are more bytes than one event may carry, they go out in parts, in order, each with
 * `part: { index, count }` and the id `<task event id>.part<index>` (the first keeps the task's
 * id) — nothing is dropped, and no event is too large for the bus.
 */
export function createEffectDomainExtension(options: EffectDomainExtensionOptions): Extension {
  const { bus } = options;
  const maxBytes = options.maxEventBytes ?? LIMITS.eventBytes;

  // Every task with deltas needs its event id: derived without building a string per call.
  // Fast path: buys 12–15 % of chain-overhead `effect_domain_ns_per_call` (2,209–2,260 ns with
  // `taskEventId`, 1,933–2,015 ns with it, alternated runs in one session).
  const deltaIds = new TaskEventIds(WORLD_STATE_DELTA_TOPIC);

  /** Publishes `payload` with its list `key` split into parts under the limit. */
  function publishParts<K extends string>(
    topic: string,
    payload: Record<string, unknown> & Record<K, unknown[]>,
    key: K,
    id: string,
    correlationId: string,
    itemBound: number | undefined,
  ): Promise<unknown> {
    const items = payload[key];
    const { [key]: _list, ...rest } = payload;
    const runs = splitBySize(items, maxBytes, {
      baseBytes: baseBytes({ ...rest, [key]: [], part: { index: 0, count: 0 } }),
      ...defined({ itemBound }),
    });
    if (runs.length === 1) return bus.publish(topic, payload, { id, correlationId });
    const publishes = runs.map((run, index) =>
      bus.publish(
        topic,
        { ...rest, [key]: run, part: { index, count: runs.length } },
        { id: partEventId(id, index), correlationId },
      ),
    );
    return settleAll(publishes);
  }

  /**
   * Publishes the validated entries of one task: one event, or parts when they need more. `now`:
   * through the bus's `publishNow` when it has one (a refusal then throws here).
   */
  function publishDeltas(
    ctx: SkillCallContext,
    taskId: string,
    state: string,
    deltas: WorldStateDeltaEntry[],
    now: boolean,
  ): Promise<unknown> | undefined {
    const { agent, skill, correlationId } = ctx;
    const payload = { source: agent, skill, deltas, taskId, correlationId, state };
    const id = deltaIds.of(agent, taskId);
    // Nearly every task reports a handful of entries: bounded without serialising anything.
    const units = agent.length + skill.length + taskId.length + correlationId.length + state.length;
    const bound = DELTA_BASE_BYTES + units * MAX_BYTES_PER_UNIT;
    if (bound + deltas.length * (DELTA_ENTRY_BOUND + 1) <= maxBytes) {
      if (now && bus.publishNow !== undefined) {
        bus.publishNow(WORLD_STATE_DELTA_TOPIC, payload, { id, correlationId });
        return undefined;
      }
      return bus.publish(WORLD_STATE_DELTA_TOPIC, payload, { id, correlationId });
    }
    return publishParts(
      WORLD_STATE_DELTA_TOPIC,
      payload,
      'deltas',
      id,
      correlationId,
      DELTA_ENTRY_BOUND,
    );
  }

  return {
    uri: EFFECT_DOMAIN_V1_URI,
    description: 'Stamps the skill and publishes the world-state deltas the agent reported.',
    before(ctx) {
      ctx.stamp(STAMPS.effectDomainSkill, ctx.skill);
    },
    after(ctx, outcome) {
      const task = outcome.task;
      if (task === undefined) return undefined;
      const view = normalizedTask(task);
      const extraction = extractWorldStateDeltas(view);
      if (extraction.entries.length === 0 && extraction.rejected.length === 0) return undefined;
      const state = view.state;
      const entries = extraction.entries;
      // Without rejections there is one publish, and it may answer at once; with them, both
      // publishes are attempted even when one fails (see settleAll), so both go as promises.
      if (extraction.rejected.length === 0) {
        return publishDeltas(ctx, task.id, state, entries, true);
      }
      const delta =
        entries.length === 0 ? undefined : publishDeltas(ctx, task.id, state, entries, false);
      const rejected = publishParts(
        WORLD_STATE_DELTA_REJECTED_TOPIC,
        {
          source: ctx.agent,
          skill: ctx.skill,
          taskId: task.id,
          rejected: extraction.rejected,
          state,
        },
        'rejected',
        taskEventId(WORLD_STATE_DELTA_REJECTED_TOPIC, ctx.agent, task.id),
        ctx.correlationId,
        undefined,
      );
      if (delta === undefined) return rejected;
      return settleAll([delta, rejected]);
    },
  };
}

/** Every publish is attempted even when one fails; the first failure fails the hook. */
function settleAll(publishes: readonly Promise<unknown>[]): Promise<void> {
  return Promise.allSettled(publishes).then((results) => {
    for (const result of results) if (result.status === 'rejected') throw result.reason;
  });
}
