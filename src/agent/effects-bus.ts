/**
 * How a task's effects go out: one artifact with the delta and cost parts, published with the
 * terminal event, once.
 */
import type { Artifact, Part } from '@a2a-js/sdk';
import type { AgentExecutionEvent, ExecutionEventBus } from '@a2a-js/sdk/server';
import { AgentEvent } from '@a2a-js/sdk/server';
import {
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  createCostPart,
  createWorldStateDeltaPart,
  isTerminalState,
  normalizeTaskState,
} from '../protocol/index.js';
import type { EffectsScope, TaskRecord } from './effects-records.js';
import { seal, warnOnce } from './effects-records.js';
import { InterceptingBus, hasDeltaPart } from './effects-support.js';
import { EFFECTS_ARTIFACT_ID } from './effects-types.js';

/** The artifact that carries what a task reported; undefined when it reported nothing. */
export function effectsArtifact(scope: EffectsScope, record: TaskRecord): Artifact | undefined {
  const parts: Part[] = [];
  const extensions: string[] = [];
  if (record.reported) {
    parts.push(createWorldStateDeltaPart(record.deltas));
    extensions.push(scope.declared.get(EFFECT_DOMAIN_V1_URI) ?? EFFECT_DOMAIN_V1_URI);
  }
  if (record.cost !== undefined) {
    parts.push(createCostPart(record.cost));
    extensions.push(COST_V1_URI);
  }
  if (parts.length === 0) return undefined;
  return {
    artifactId: EFFECTS_ARTIFACT_ID,
    name: 'effects',
    description: 'The world-state changes and the cost of this task, reported by the agent',
    parts,
    metadata: undefined,
    extensions,
  };
}

/**
 * Seals the record when `state` (an event's task state) ends the task, the first time only;
 * returns the artifact to send with that event, if the task reported anything.
 */
function sealAtEnd(scope: EffectsScope, record: TaskRecord, state: unknown): Artifact | undefined {
  const ended = isTerminalState(normalizeTaskState(state));
  if (record.sealed || !ended) return undefined;
  const artifact = effectsArtifact(scope, record);
  seal(scope, record);
  return artifact;
}

/** The bus the executor publishes on: effects go out with the terminal event, once. */
export function effectsBus(
  scope: EffectsScope,
  record: TaskRecord,
  inner: ExecutionEventBus,
): ExecutionEventBus {
  const publish = (event: AgentExecutionEvent): void => {
    switch (event.kind) {
      case 'task': {
        record.started = true;
        if (event.data.contextId !== '') record.contextId = event.data.contextId;
        const artifact = sealAtEnd(scope, record, event.data.status?.state);
        if (artifact !== undefined) {
          inner.publish(
            AgentEvent.task({ ...event.data, artifacts: [...event.data.artifacts, artifact] }),
          );
          return;
        }
        inner.publish(event);
        return;
      }
      case 'statusUpdate': {
        const artifact = sealAtEnd(scope, record, event.data.status?.state);
        if (artifact !== undefined) {
          inner.publish(
            AgentEvent.artifactUpdate({
              taskId: event.data.taskId,
              contextId: event.data.contextId || record.contextId,
              artifact,
              append: false,
              lastChunk: true,
              metadata: undefined,
            }),
          );
        }
        inner.publish(event);
        return;
      }
      case 'artifactUpdate':
        if (event.data.artifact !== undefined && hasDeltaPart(event.data.artifact.parts)) {
          warnOnce(scope, record, 'delta-part', {
            kind: 'delta-part-published',
            message: `task ${record.taskId} published a worldstate-delta part itself (artifact ${event.data.artifact.artifactId}); report deltas with effects.report() so they go out once, at the end`,
          });
        }
        inner.publish(event);
        return;
      case 'message':
        if (!record.started && !record.sealed) {
          if (effectsArtifact(scope, record) !== undefined) {
            warnOnce(scope, record, 'dropped', {
              kind: 'effects-dropped',
              message: `task ${record.taskId} answered with a message, which carries no artifacts: its reported effects were not sent (publish a task instead)`,
            });
          }
          seal(scope, record);
        }
        inner.publish(event);
        return;
    }
  };
  return new InterceptingBus(inner, publish);
}
