/**
 * `withEffects(executor)`: an SDK `AgentExecutor` decorator through which an agent reports the
 * world-state changes (effect-domain-v1) and the cost (cost-v1) of a task. What is reported is
 * validated at once, kept per task, and sent once, when the task ends, on one artifact.
 */
import type { Artifact, Part } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import type {
  AgentExecutionEvent,
  AgentExecutor,
  ExecutionEventBus,
  RequestContext,
} from '@a2a-js/sdk/server';
import { AgentEvent } from '@a2a-js/sdk/server';
import type { CostPayload, Declarations, WorldStateDeltaEntry } from '../protocol/index.js';
import {
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  FleetgateError,
  LIMITS,
  createCostPart,
  createWorldStateDeltaPart,
  isTerminalState,
  normalizeTaskState,
  parseCostPayload,
  parseDeltaEntry,
  readDeclarations,
} from '../protocol/index.js';
import { InterceptingBus, addCost, failingField, hasDeltaPart } from './effects-support.js';
import type {
  EffectsAgentExecutor,
  EffectsWarning,
  TaskEffects,
  WithEffectsOptions,
} from './effects-types.js';
import { EFFECTS_ARTIFACT_ID } from './effects-types.js';
import type { CallerStamps } from './stamps.js';
import { declaredExtensionUris, readCallerStamps } from './stamps.js';

interface TaskRecord {
  taskId: string;
  contextId: string;
  skill: string | undefined;
  stamps: CallerStamps;
  deltas: WorldStateDeltaEntry[];
  reported: boolean;
  cost: CostPayload | undefined;
  /** A task (not a message) was published: there is something to attach the effects to. */
  started: boolean;
  sealed: boolean;
  warned: Set<string>;
}
function defaultWarning(warning: EffectsWarning): void {
  process.emitWarning(warning.message, { type: 'FleetgateAgentWarning', code: warning.kind });
}

/**
 * Decorates an executor so it can report effects. The decorated executor:
 * - hands `execute` the task's {@link TaskEffects} (`report`, `reportCost`, the typed stamps);
 * - when the task ends — completed, failed, canceled or rejected — publishes one artifact
 *   ({@link EFFECTS_ARTIFACT_ID}) with one worldstate-delta part (`{ deltas }`, MIME in
 *   `metadata.mimeType`) and the cost-v1 part, `artifact.extensions` listing the URIs, right
 *   before the terminal status (or inside a terminal task event): never on an intermediate event;
 * - keeps what a task reported across turns (`input-required`) until it ends, also when it is
 *   canceled or the executor throws after starting the task;
 * - activates the requested extensions the card declares (use {@link activateExtensions} as the
 *   transports' `contextBuilder` too: JSON-RPC streaming echoes only what that activates);
 * - warns when a report names a domain the skill did not declare, or an extension the card lacks.
 *
 * @example
 * ```ts
 * const executor = withEffects({
 *   async execute(ctx, bus, effects) {
 *     // … publish the task, do the work …
 *     effects.report({ domain: 'board', path: 'data.untriaged', op: 'inc', value: -1 });
 *     // … publish the final status: the deltas go out with it
 *   },
 * }, { card });
 * ```
 */
export function withEffects(
  executor: EffectsAgentExecutor,
  options: WithEffectsOptions,
): AgentExecutor {
  const declarations: Declarations = readDeclarations(options.card);
  const declared = declaredExtensionUris(options.card);
  const effectDomainDeclared = declarations.extensions.includes(EFFECT_DOMAIN_V1_URI);
  const costDeclared = declarations.extensions.includes(COST_V1_URI);
  const onlySkill = declarations.skills.length === 1 ? declarations.skills[0] : undefined;
  const warn = options.onWarning ?? defaultWarning;
  const tasks = new Map<string, TaskRecord>();

  function warnOnce(
    record: TaskRecord,
    key: string,
    warning: Omit<EffectsWarning, 'taskId'>,
  ): void {
    if (record.warned.has(key)) return;
    record.warned.add(key);
    warn({ ...warning, taskId: record.taskId });
  }

  function checkDomains(record: TaskRecord, entries: readonly WorldStateDeltaEntry[]): void {
    if (!effectDomainDeclared) {
      warnOnce(record, 'effect-domain', {
        kind: 'extension-not-declared',
        message: `task ${record.taskId} reported deltas, but the card does not declare effect-domain-v1: a Fleetgate gateway never reads them (declareEffectDomain)`,
      });
      return;
    }
    const skill = record.skill;
    if (skill === undefined) {
      warnOnce(record, 'skill', {
        kind: 'unknown-skill',
        message: `task ${record.taskId}: no x-effect-domain-skill stamp and more than one skill on the card; the reported domains cannot be checked`,
      });
      return;
    }
    const domains = declarations.effectDomain[skill]?.domains;
    for (const entry of entries) {
      if (domains?.includes(entry.domain) === true) continue;
      warnOnce(record, `domain:${entry.domain}`, {
        kind: 'undeclared-domain',
        skill,
        domain: entry.domain,
        message:
          domains === undefined
            ? `${skill} reported a change to domain "${entry.domain}" but declares no effect-domain-v1 domains: the gateway raises an undeclared_effect alert`
            : `${skill} reported a change to domain "${entry.domain}", outside its declared domains (${domains.join(', ') || 'none'}): the gateway raises an undeclared_effect alert`,
      });
    }
  }

  function effectsOf(record: TaskRecord): TaskEffects {
    return {
      taskId: record.taskId,
      get contextId() {
        return record.contextId;
      },
      skill: record.skill,
      stamps: record.stamps,
      get deltas() {
        return record.deltas;
      },
      report(deltas) {
        if (record.sealed) {
          throw new FleetgateError(
            'FLEETGATE_EFFECTS_CLOSED',
            `report(): task ${record.taskId} already ended and its effects were sent`,
            { details: { taskId: record.taskId } },
          );
        }
        const batch: readonly unknown[] = Array.isArray(deltas) ? deltas : [deltas];
        if (record.deltas.length + batch.length > LIMITS.deltasPerTask) {
          throw new FleetgateError(
            'FLEETGATE_LIMIT_EXCEEDED',
            `report(): a task may report at most ${LIMITS.deltasPerTask} deltas (task ${record.taskId} has ${record.deltas.length}, ${batch.length} more given)`,
            { details: { taskId: record.taskId, limit: LIMITS.deltasPerTask } },
          );
        }
        const accepted: WorldStateDeltaEntry[] = [];
        batch.forEach((candidate, index) => {
          const verdict = parseDeltaEntry(candidate);
          if (verdict.ok) {
            accepted.push(verdict.entry);
            return;
          }
          const field = failingField(candidate);
          throw new FleetgateError(
            'FLEETGATE_DELTA_INVALID',
            `report(): deltas[${index}].${field} is invalid: ${verdict.reason}`,
            { details: { taskId: record.taskId, index, field, reason: verdict.reason } },
          );
        });
        checkDomains(record, accepted);
        for (const entry of accepted) record.deltas.push(entry);
        record.reported = true;
      },
      reportCost(sample) {
        if (record.sealed) {
          throw new FleetgateError(
            'FLEETGATE_EFFECTS_CLOSED',
            `reportCost(): task ${record.taskId} already ended and its effects were sent`,
            { details: { taskId: record.taskId } },
          );
        }
        const verdict = parseCostPayload(sample);
        if (!verdict.ok) {
          const field = /^[\w.]+(?= )/.exec(verdict.reason)?.[0] ?? 'sample';
          throw new FleetgateError(
            'FLEETGATE_COST_INVALID',
            `reportCost(): ${field} is invalid: ${verdict.reason}`,
            { details: { taskId: record.taskId, field, reason: verdict.reason } },
          );
        }
        if (!costDeclared) {
          warnOnce(record, 'cost', {
            kind: 'extension-not-declared',
            message: `task ${record.taskId} reported a cost, but the card does not declare cost-v1: a Fleetgate gateway never reads it (declareCost)`,
          });
        }
        record.cost = addCost(record.cost, verdict.payload);
      },
    };
  }

  function effectsArtifact(record: TaskRecord): Artifact | undefined {
    const parts: Part[] = [];
    const extensions: string[] = [];
    if (record.reported) {
      parts.push(createWorldStateDeltaPart(record.deltas));
      extensions.push(declared.get(EFFECT_DOMAIN_V1_URI) ?? EFFECT_DOMAIN_V1_URI);
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

  function seal(record: TaskRecord): void {
    record.sealed = true;
    tasks.delete(record.taskId);
  }

  /** The bus the executor publishes on: effects go out with the terminal event, once. */
  function effectsBus(record: TaskRecord, inner: ExecutionEventBus): ExecutionEventBus {
    const publish = (event: AgentExecutionEvent): void => {
      switch (event.kind) {
        case 'task': {
          record.started = true;
          if (event.data.contextId !== '') record.contextId = event.data.contextId;
          const state = normalizeTaskState(event.data.status?.state);
          if (!record.sealed && isTerminalState(state)) {
            const artifact = effectsArtifact(record);
            seal(record);
            if (artifact !== undefined) {
              inner.publish(
                AgentEvent.task({ ...event.data, artifacts: [...event.data.artifacts, artifact] }),
              );
              return;
            }
          }
          inner.publish(event);
          return;
        }
        case 'statusUpdate': {
          const state = normalizeTaskState(event.data.status?.state);
          if (!record.sealed && isTerminalState(state)) {
            const artifact = effectsArtifact(record);
            seal(record);
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
          }
          inner.publish(event);
          return;
        }
        case 'artifactUpdate':
          if (event.data.artifact !== undefined && hasDeltaPart(event.data.artifact.parts)) {
            warnOnce(record, 'delta-part', {
              kind: 'delta-part-published',
              message: `task ${record.taskId} published a worldstate-delta part itself (artifact ${event.data.artifact.artifactId}); report deltas with effects.report() so they go out once, at the end`,
            });
          }
          inner.publish(event);
          return;
        case 'message':
          if (!record.started && !record.sealed) {
            if (effectsArtifact(record) !== undefined) {
              warnOnce(record, 'dropped', {
                kind: 'effects-dropped',
                message: `task ${record.taskId} answered with a message, which carries no artifacts: its reported effects were not sent (publish a task instead)`,
              });
            }
            seal(record);
          }
          inner.publish(event);
          return;
      }
    };
    return new InterceptingBus(inner, publish);
  }

  function recordFor(requestContext: RequestContext): TaskRecord {
    const { taskId, contextId, request, context } = requestContext;
    const stamps = readCallerStamps(request.metadata);
    const messageSkill: unknown = request.message?.metadata?.['skill'];
    const skill =
      stamps.skill ??
      stamps.costSkill ??
      (typeof messageSkill === 'string' && messageSkill !== '' ? messageSkill : onlySkill);
    let record = tasks.get(taskId);
    if (record === undefined) {
      record = {
        taskId,
        contextId,
        skill,
        stamps,
        deltas: [],
        reported: false,
        cost: undefined,
        started: requestContext.task !== undefined,
        sealed: false,
        warned: new Set(),
      };
      tasks.set(taskId, record);
    } else {
      // A later turn of the same task (after input-required): the newest stamps apply.
      record.stamps = stamps;
      record.skill = skill ?? record.skill;
    }
    for (const uri of context.requestedExtensions ?? []) {
      if (declared.has(uri)) context.addActivatedExtension(uri);
    }
    return record;
  }

  return {
    async execute(requestContext, eventBus) {
      const record = recordFor(requestContext);
      const bus = effectsBus(record, eventBus);
      try {
        await executor.execute(requestContext, bus, effectsOf(record));
      } catch (error) {
        // The SDK ends the task failed; what was reported still goes out when there is a task to
        // carry it.
        if (!record.sealed) {
          const artifact = effectsArtifact(record);
          if (artifact !== undefined && record.started) {
            eventBus.publish(
              AgentEvent.artifactUpdate({
                taskId: record.taskId,
                contextId: record.contextId,
                artifact,
                append: false,
                lastChunk: true,
                metadata: undefined,
              }),
            );
          } else if (artifact !== undefined) {
            warnOnce(record, 'dropped', {
              kind: 'effects-dropped',
              message: `task ${record.taskId}: the executor threw before publishing the task; its reported effects were not sent`,
            });
          }
          seal(record);
        }
        throw error;
      }
    },
    async cancelTask(taskId, eventBus) {
      const record: TaskRecord = tasks.get(taskId) ?? {
        taskId,
        contextId: '',
        skill: undefined,
        stamps: {},
        deltas: [],
        reported: false,
        cost: undefined,
        started: true,
        sealed: false,
        warned: new Set(),
      };
      const bus = effectsBus(record, eventBus);
      if (executor.cancelTask !== undefined) {
        await executor.cancelTask(taskId, bus, effectsOf(record));
        return;
      }
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: record.contextId,
          status: {
            state: TaskState.TASK_STATE_CANCELED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
  };
}
