/**
 * What a `withEffects` executor keeps: the card's declarations, read once, and a record of each
 * task that has not ended (what it reported, across turns).
 */
import type { RequestContext } from '@a2a-js/sdk/server';
import type { CostPayload, Declarations, WorldStateDeltaEntry } from '../protocol/index.js';
import type { DeltaBytes } from './effects-size.js';
import type { EffectsWarning } from './effects-types.js';
import type { CallerStamps } from './stamps.js';
import { readCallerStamps } from './stamps.js';

/** One task's effects so far and where it stands. */
export interface TaskRecord {
  taskId: string;
  contextId: string;
  skill: string | undefined;
  stamps: CallerStamps;
  deltas: WorldStateDeltaEntry[];
  /** What is known of the size of `deltas` as JSON. */
  deltaBytes: DeltaBytes;
  reported: boolean;
  cost: CostPayload | undefined;
  /** A task (not a message) was published: there is something to attach the effects to. */
  started: boolean;
  sealed: boolean;
  warned: Set<string>;
}

/** What one decorated executor knows of its card, and its open tasks (built once by `withEffects`). */
export interface EffectsScope {
  readonly declarations: Declarations;
  /** The extension URIs the card declares, by URI and canonical URI (`declaredExtensionUris`). */
  readonly declared: Map<string, string>;
  readonly effectDomainDeclared: boolean;
  readonly costDeclared: boolean;
  /** The card's skill when it has exactly one. */
  readonly onlySkill: string | undefined;
  readonly warn: (warning: EffectsWarning) => void;
  /** The tasks that have not ended, by task id. */
  readonly tasks: Map<string, TaskRecord>;
}

/** A task's record before it reported anything. */
export function newTaskRecord(
  taskId: string,
  contextId: string,
  skill: string | undefined,
  stamps: CallerStamps,
  started: boolean,
): TaskRecord {
  return {
    taskId,
    contextId,
    skill,
    stamps,
    deltas: [],
    deltaBytes: { measured: 0, exact: 0, pending: 0 },
    reported: false,
    cost: undefined,
    started,
    sealed: false,
    warned: new Set(),
  };
}

/** Hands a warning to `onWarning`, once per task and `key`. */
export function warnOnce(
  scope: EffectsScope,
  record: TaskRecord,
  key: string,
  warning: Omit<EffectsWarning, 'taskId'>,
): void {
  if (record.warned.has(key)) return;
  record.warned.add(key);
  scope.warn({ ...warning, taskId: record.taskId });
}

/** Ends a task's record: nothing more is reported or sent for it. */
export function seal(scope: EffectsScope, record: TaskRecord): void {
  record.sealed = true;
  scope.tasks.delete(record.taskId);
}

/**
 * The record of the task a request runs (a later turn of the same task finds its record, with the
 * newest stamps), with the requested extensions the card declares activated.
 */
export function recordFor(scope: EffectsScope, requestContext: RequestContext): TaskRecord {
  const { taskId, contextId, request, context } = requestContext;
  const stamps = readCallerStamps(request.metadata);
  const messageSkill: unknown = request.message?.metadata?.['skill'];
  const skill =
    stamps.skill ??
    stamps.costSkill ??
    (typeof messageSkill === 'string' && messageSkill !== '' ? messageSkill : scope.onlySkill);
  let record = scope.tasks.get(taskId);
  if (record === undefined) {
    record = newTaskRecord(taskId, contextId, skill, stamps, requestContext.task !== undefined);
    scope.tasks.set(taskId, record);
  } else {
    // A later turn of the same task (after input-required): the newest stamps apply.
    record.stamps = stamps;
    record.skill = skill ?? record.skill;
  }
  for (const uri of context.requestedExtensions ?? []) {
    if (scope.declared.has(uri)) context.addActivatedExtension(uri);
  }
  return record;
}
