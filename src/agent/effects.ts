/**
 * `withEffects(executor)`: an SDK `AgentExecutor` decorator through which an agent reports the
 * world-state changes (effect-domain-v1) and the cost (cost-v1) of a task. What is reported is
 * validated at once, kept per task, and sent once, when the task ends, on one artifact.
 */
import { TaskState } from '@a2a-js/sdk';
import type { AgentExecutor } from '@a2a-js/sdk/server';
import { AgentEvent } from '@a2a-js/sdk/server';
import type { Declarations } from '../protocol/index.js';
import { COST_V1_URI, EFFECT_DOMAIN_V1_URI, readDeclarations } from '../protocol/index.js';
import { effectsArtifact, effectsBus } from './effects-bus.js';
import { effectsOf } from './effects-report.js';
import type { EffectsScope, TaskRecord } from './effects-records.js';
import { newTaskRecord, recordFor, seal, warnOnce } from './effects-records.js';
import type { EffectsAgentExecutor, EffectsWarning, WithEffectsOptions } from './effects-types.js';
import { declaredExtensionUris } from './stamps.js';

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
  const scope: EffectsScope = {
    declarations,
    declared,
    effectDomainDeclared,
    costDeclared,
    onlySkill,
    warn,
    tasks,
  };

  return {
    async execute(requestContext, eventBus) {
      const record = recordFor(scope, requestContext);
      const bus = effectsBus(scope, record, eventBus);
      try {
        await executor.execute(requestContext, bus, effectsOf(scope, record));
      } catch (error) {
        // The SDK ends the task failed; what was reported still goes out when there is a task to
        // carry it.
        if (!record.sealed) {
          const artifact = effectsArtifact(scope, record);
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
            warnOnce(scope, record, 'dropped', {
              kind: 'effects-dropped',
              message: `task ${record.taskId}: the executor threw before publishing the task; its reported effects were not sent`,
            });
          }
          seal(scope, record);
        }
        throw error;
      }
    },
    async cancelTask(taskId, eventBus) {
      const record: TaskRecord =
        tasks.get(taskId) ?? newTaskRecord(taskId, '', undefined, {}, true);
      const bus = effectsBus(scope, record, eventBus);
      if (executor.cancelTask !== undefined) {
        await executor.cancelTask(taskId, bus, effectsOf(scope, record));
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
