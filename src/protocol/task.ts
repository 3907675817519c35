import { FleetgateError } from './errors.js';
import { isRecord } from './json-path.js';
import { LIMITS } from './limits.js';
import type { NormalizedPart } from './parts.js';
import { decodePart } from './part-decode.js';

/** Task states in one union, whichever wire or SDK shape they came from. */
export const TASK_STATES = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'failed',
  'canceled',
  'rejected',
  'unknown',
] as const;

/** One of {@link TASK_STATES}. */
export type TaskStateName = (typeof TASK_STATES)[number];

const TERMINAL: ReadonlySet<TaskStateName> = new Set([
  'completed',
  'failed',
  'canceled',
  'rejected',
]);
const INTERRUPTED: ReadonlySet<TaskStateName> = new Set(['input-required', 'auth-required']);

/** True for a state the task never leaves: completed, failed, canceled, rejected. */
export function isTerminalState(state: TaskStateName): boolean {
  return TERMINAL.has(state);
}

/** True for a state that waits on the caller: input-required, auth-required. */
export function isInterruptedState(state: TaskStateName): boolean {
  return INTERRUPTED.has(state);
}

/**
 * The SDK's `TaskState` enum (the A2A proto's numbers), written out: reading a state must not load
 * the SDK (the CLI's errors and the package's root import read this module). A test checks every
 * member of the SDK's enum against this table.
 */
const FROM_SDK_ENUM: Readonly<Record<number, TaskStateName>> = {
  1: 'submitted', // TASK_STATE_SUBMITTED
  2: 'working', // TASK_STATE_WORKING
  3: 'completed', // TASK_STATE_COMPLETED
  4: 'failed', // TASK_STATE_FAILED
  5: 'canceled', // TASK_STATE_CANCELED
  6: 'input-required', // TASK_STATE_INPUT_REQUIRED
  7: 'rejected', // TASK_STATE_REJECTED
  8: 'auth-required', // TASK_STATE_AUTH_REQUIRED
};

/**
 * Normalises a task state from the SDK enum (a number), v1.0 wire (`TASK_STATE_INPUT_REQUIRED`) or
 * v0.3 wire (`input-required`). Anything else is `unknown`.
 */
export function normalizeTaskState(state: unknown): TaskStateName {
  if (typeof state === 'number') return FROM_SDK_ENUM[state] ?? 'unknown';
  if (typeof state !== 'string') return 'unknown';
  const name = state
    .replace(/^TASK_STATE_/i, '')
    .toLowerCase()
    .replace(/_/g, '-');
  if (name === 'cancelled') return 'canceled';
  return (TASK_STATES as readonly string[]).includes(name) ? (name as TaskStateName) : 'unknown';
}

/** An artifact with its parts decoded; parts that could not be decoded are listed in `problems`. */
export interface NormalizedArtifact {
  artifactId: string;
  name?: string;
  parts: NormalizedPart[];
  metadata: Record<string, unknown>;
  /** Undecodable parts, each with its index and reason. */
  problems: { partIndex: number; reason: string }[];
}

/** A task in one shape, whatever shape it arrived in. */
export interface NormalizedTask {
  id: string;
  contextId: string;
  state: TaskStateName;
  /** Text of the status message, when there is one. */
  statusText?: string;
  artifacts: NormalizedArtifact[];
  metadata: Record<string, unknown>;
}

/** Reads an artifact from any shape; never throws. */
export function readArtifact(value: unknown): NormalizedArtifact | undefined {
  if (!isRecord(value)) return undefined;
  const problems: NormalizedArtifact['problems'] = [];
  const rawParts: unknown[] = Array.isArray(value.parts) ? value.parts : [];
  const read = Math.min(rawParts.length, LIMITS.partsPerArtifact);
  // Sized for every part to decode, as nearly every part does; cut back only when one does not.
  let parts: NormalizedPart[] = new Array<NormalizedPart>(read);
  let count = 0;
  for (let partIndex = 0; partIndex < read; partIndex += 1) {
    // A hole of a sparse array is skipped (JSON arrays have none).
    if (!(partIndex in rawParts)) continue;
    const decoded = decodePart(rawParts[partIndex]);
    if (typeof decoded !== 'string') parts[count++] = decoded;
    else problems.push({ partIndex, reason: decoded });
  }
  if (count < read) parts = parts.slice(0, count);
  if (rawParts.length > LIMITS.partsPerArtifact) {
    problems.push({
      partIndex: LIMITS.partsPerArtifact,
      reason: `artifact has ${rawParts.length} parts; only the first ${LIMITS.partsPerArtifact} are read`,
    });
  }
  const artifact: NormalizedArtifact = {
    artifactId: typeof value.artifactId === 'string' ? value.artifactId : '',
    parts,
    metadata: isRecord(value.metadata) ? value.metadata : {},
    problems,
  };
  if (typeof value.name === 'string' && value.name !== '') artifact.name = value.name;
  return artifact;
}

function messageText(message: unknown): string | undefined {
  if (!isRecord(message) || !Array.isArray(message.parts)) return undefined;
  const texts: string[] = [];
  for (const raw of message.parts) {
    const part = decodePart(raw);
    if (typeof part !== 'string' && part.type === 'text') texts.push(part.text);
  }
  return texts.length > 0 ? texts.join('\n') : undefined;
}

/** Unwraps `{ task }` (v1.0 StreamResponse) and `{ payload: { $case: 'task' } }` (SDK). */
function unwrapTask(value: Record<string, unknown>): Record<string, unknown> {
  if (isRecord(value.task)) return value.task;
  if (isRecord(value.payload) && value.payload.$case === 'task' && isRecord(value.payload.value)) {
    return value.payload.value;
  }
  return value;
}

/**
 * Checks a task id an agent or a push gave: a non-empty string of at most `LIMITS.taskIdLength`
 * characters without NUL (PostgreSQL cannot store NUL in text, and no agent needs it). Checked
 * where a task id enters, before it reaches the store; the error names where it came from.
 *
 * @throws FleetgateError `FLEETGATE_TASK_ID_INVALID`
 */
export function checkTaskId(id: unknown, where: string): string {
  let problem: string | undefined;
  if (typeof id !== 'string' || id.length === 0) problem = 'must be a non-empty string';
  else if (id.length > LIMITS.taskIdLength) {
    problem = `is ${id.length} characters, more than the limit of ${LIMITS.taskIdLength}`;
  } else if (id.includes('\0')) problem = 'must not contain a NUL character';
  if (problem === undefined) return id as string;
  const shown = typeof id === 'string' ? JSON.stringify(id.slice(0, 64)) : typeof id;
  throw new FleetgateError(
    'FLEETGATE_TASK_ID_INVALID',
    `Task id ${shown} from ${where} ${problem}.`,
    {
      // Shown as JSON text: escaped, so the error itself can be stored and published anywhere.
      details: { where, taskId: shown },
    },
  );
}

/**
 * Decodes a task from an SDK object, v1.0 wire JSON (also wrapped as `{ task }`) or v0.3 wire JSON.
 *
 * @throws FleetgateError `FLEETGATE_TASK_INVALID` when it has no string `id` or no status.
 */
export function readTask(value: unknown): NormalizedTask {
  if (!isRecord(value)) {
    throw new FleetgateError('FLEETGATE_TASK_INVALID', 'task must be a JSON object');
  }
  const raw = unwrapTask(value);
  if (typeof raw.id !== 'string' || raw.id === '') {
    throw new FleetgateError('FLEETGATE_TASK_INVALID', 'task.id must be a non-empty string');
  }
  if (!isRecord(raw.status)) {
    throw new FleetgateError('FLEETGATE_TASK_INVALID', `task ${raw.id}: status must be an object`);
  }
  const rawArtifacts: unknown[] = Array.isArray(raw.artifacts) ? raw.artifacts : [];
  const read = Math.min(rawArtifacts.length, LIMITS.taskArtifacts);
  // Sized for every artifact to read (the usual case), cut back only when one is not an object.
  let artifacts: NormalizedArtifact[] = new Array<NormalizedArtifact>(read);
  let count = 0;
  for (let i = 0; i < read; i += 1) {
    const artifact = readArtifact(rawArtifacts[i]);
    if (artifact !== undefined) artifacts[count++] = artifact;
  }
  if (count < read) artifacts = artifacts.slice(0, count);
  const task: NormalizedTask = {
    id: raw.id,
    contextId: typeof raw.contextId === 'string' ? raw.contextId : '',
    state: normalizeTaskState(raw.status.state),
    artifacts,
    metadata: isRecord(raw.metadata) ? raw.metadata : {},
  };
  const text = messageText(raw.status.message);
  if (text !== undefined) task.statusText = text;
  return task;
}

/** One event of a task stream or push notification, in one shape. */
export type NormalizedStreamEvent =
  | { type: 'task'; task: NormalizedTask }
  | { type: 'message'; message: Record<string, unknown> }
  | {
      type: 'statusUpdate';
      taskId: string;
      contextId: string;
      state: TaskStateName;
      statusText?: string;
      metadata: Record<string, unknown>;
    }
  | {
      type: 'artifactUpdate';
      taskId: string;
      contextId: string;
      artifact: NormalizedArtifact;
      append: boolean;
      lastChunk: boolean;
    };

function statusUpdate(value: Record<string, unknown>): NormalizedStreamEvent {
  if (typeof value.taskId !== 'string' || !isRecord(value.status)) {
    throw new FleetgateError(
      'FLEETGATE_TASK_INVALID',
      'status update needs a string taskId and a status object',
    );
  }
  const event: NormalizedStreamEvent = {
    type: 'statusUpdate',
    taskId: value.taskId,
    contextId: typeof value.contextId === 'string' ? value.contextId : '',
    state: normalizeTaskState(value.status.state),
    metadata: isRecord(value.metadata) ? value.metadata : {},
  };
  const text = messageText(value.status.message);
  if (text !== undefined) event.statusText = text;
  return event;
}

function artifactUpdate(value: Record<string, unknown>): NormalizedStreamEvent {
  const artifact = readArtifact(value.artifact);
  if (typeof value.taskId !== 'string' || artifact === undefined) {
    throw new FleetgateError(
      'FLEETGATE_TASK_INVALID',
      'artifact update needs a string taskId and an artifact object',
    );
  }
  return {
    type: 'artifactUpdate',
    taskId: value.taskId,
    contextId: typeof value.contextId === 'string' ? value.contextId : '',
    artifact,
    append: value.append === true,
    lastChunk: value.lastChunk === true,
  };
}

/**
 * Decodes one stream event or push body: v1.0 `StreamResponse` JSON (`{task}`, `{message}`,
 * `{statusUpdate}`, `{artifactUpdate}`), the SDK object (`payload.$case`), v0.3 events (`kind:
 * task | message | status-update | artifact-update`), or a bare task.
 *
 * @throws FleetgateError `FLEETGATE_TASK_INVALID` naming what is missing.
 */
export function readStreamEvent(value: unknown): NormalizedStreamEvent {
  if (!isRecord(value)) {
    throw new FleetgateError('FLEETGATE_TASK_INVALID', 'stream event must be a JSON object');
  }
  let body: Record<string, unknown> = value;
  let kind: string | undefined;
  if (isRecord(value.payload) && typeof value.payload.$case === 'string') {
    kind = value.payload.$case;
    body = isRecord(value.payload.value) ? value.payload.value : {};
  } else if (typeof value.kind === 'string') {
    kind =
      { 'status-update': 'statusUpdate', 'artifact-update': 'artifactUpdate' }[value.kind] ??
      value.kind;
  } else {
    for (const key of ['task', 'message', 'statusUpdate', 'artifactUpdate'] as const) {
      if (isRecord(value[key])) {
        kind = key;
        body = value[key];
        break;
      }
    }
    if (kind === undefined && 'status' in value && 'id' in value) kind = 'task';
  }
  switch (kind) {
    case 'task':
      return { type: 'task', task: readTask(body) };
    case 'message':
      return { type: 'message', message: body };
    case 'statusUpdate':
      return statusUpdate(body);
    case 'artifactUpdate':
      return artifactUpdate(body);
    default:
      throw new FleetgateError(
        'FLEETGATE_TASK_INVALID',
        kind === undefined
          ? 'stream event has none of task, message, statusUpdate, artifactUpdate'
          : `unknown stream event kind ${JSON.stringify(kind)}`,
      );
  }
}
