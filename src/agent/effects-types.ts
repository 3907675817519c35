/** The shapes of `withEffects`: what an executor is handed, what it may be told, its options. */
import type { ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import type { CostPayload, WorldStateDeltaEntry } from '../protocol/index.js';
import type { CardLike } from './card.js';
import type { CallerStamps } from './stamps.js';

/** The id of the artifact that carries a task's effects. */
export const EFFECTS_ARTIFACT_ID = 'fleetgate-effects';

/** What a task of a {@link withEffects} executor can report, and what the caller stamped. */
export interface TaskEffects {
  readonly taskId: string;
  readonly contextId: string;
  /**
   * The skill this call runs: the `x-effect-domain-skill` stamp, else `x-cost-skill`, else the
   * user message's `metadata.skill`, else the card's only skill.
   */
  readonly skill: string | undefined;
  /** The caller's stamps (`x-effect-domain-skill`, `x-blast-radius`, `x-hitl-mode`, …), typed. */
  readonly stamps: CallerStamps;
  /**
   * Records world-state changes this task made. Each entry is validated now, by the rule the
   * gateway applies: a bad entry throws `FLEETGATE_DELTA_INVALID` naming its index and field, and
   * nothing of that call is recorded. Everything recorded is sent once, when the task ends.
   */
  report(deltas: WorldStateDeltaEntry | readonly WorldStateDeltaEntry[]): void;
  /**
   * Records usage and cost. Several samples add up (counters, `durationMs`, `costUsd`); the last
   * `success` given wins. An invalid sample throws `FLEETGATE_COST_INVALID`.
   */
  reportCost(sample: CostPayload): void;
  /** What was reported so far. */
  readonly deltas: readonly WorldStateDeltaEntry[];
}

/** Something the agent did that a Fleetgate gateway will not read the way the author meant. */
export interface EffectsWarning {
  kind:
    | 'undeclared-domain'
    | 'extension-not-declared'
    | 'unknown-skill'
    | 'effects-dropped'
    | 'delta-part-published'
    | 'effects-too-large';
  message: string;
  taskId: string;
  skill?: string;
  domain?: string;
  /** `effects-too-large`: the bytes of the task's deltas as JSON. */
  bytes?: number;
}

/** An `AgentExecutor` that is handed the task's {@link TaskEffects}. */
export interface EffectsAgentExecutor {
  execute(
    requestContext: RequestContext,
    eventBus: ExecutionEventBus,
    effects: TaskEffects,
  ): Promise<void>;
  /**
   * Stops a running task; must publish a final `canceled` status. Default: publishes it and
   * finishes the bus. What the task reported before is sent with the canceled status.
   */
  cancelTask?(taskId: string, eventBus: ExecutionEventBus, effects: TaskEffects): Promise<void>;
}

/** Options of {@link withEffects}. */
export interface WithEffectsOptions {
  /** The card the agent serves: its declarations decide the warnings (domains, extensions). */
  card: CardLike;
  /** Receives every warning (default: `process.emitWarning`). */
  onWarning?: (warning: EffectsWarning) => void;
}
