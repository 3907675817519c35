/**
 * What `checkAgent` makes of an answer, with the gateway's readers: the task a reply or a stream
 * comes to, the task followed to its end, and every reason a gateway would reject or flag it.
 */
import type {
  BlastRadius,
  Diagnostic,
  NormalizedArtifact,
  NormalizedStreamEvent,
  NormalizedTask,
} from '../protocol/index.js';
import {
  COST_V1_URI,
  EFFECT_DOMAIN_V1_URI,
  PART_MIME_METADATA_KEY,
  WORLDSTATE_DELTA_MIME,
  extractCost,
  extractWorldStateDeltas,
  isInterruptedState,
  isTerminalState,
  readStreamEvent,
  readTask,
} from '../protocol/index.js';
import type { AgentCheckCall } from './check-types.js';
import type { AgentEndpoint, WireExchange, WireOptions } from './check-wire.js';
import { getTask } from './check-wire.js';
import { DELTAS_WARNING_BYTES, deltasBytes, deltasTooLarge } from './effects-size.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function isDeltaLike(part: NormalizedArtifact['parts'][number]): boolean {
  return (
    part.type === 'data' &&
    typeof part.data === 'object' &&
    part.data !== null &&
    Array.isArray((part.data as { deltas?: unknown }).deltas)
  );
}

export type Add = (path: string, severity: Diagnostic['severity'], message: string) => void;

/** Runs a reader; when it throws, adds an error `what: reason` at `where` and gives undefined. */
function readOrFlag<T>(read: () => T, add: Add, where: string, what: string): T | undefined {
  try {
    return read();
  } catch (error) {
    add(where, 'error', `${what}: ${(error as Error).message}`);
    return undefined;
  }
}

/** A task known so far only from an update event: its ids, no state yet, no artifacts. */
function taskFromUpdate(event: { taskId: string; contextId: string }): NormalizedTask {
  return {
    id: event.taskId,
    contextId: event.contextId,
    state: 'unknown',
    artifacts: [],
    metadata: {},
  };
}

export function checkEcho(call: AgentCheckCall, add: Add): void {
  if (call.requestedExtensions.length === 0) return;
  const how = `activate the declared extensions in the transports' contextBuilder (activateExtensions(card))`;
  if (call.echoedExtensions === null) {
    add(
      call.mode,
      'warning',
      `no extensions were echoed on the ${call.mode} ${call.binding} response; ${how}`,
    );
    return;
  }
  const missing = call.requestedExtensions.filter((u) => !call.echoedExtensions!.includes(u));
  if (missing.length > 0) {
    add(
      call.mode,
      'warning',
      `the ${call.mode} ${call.binding} response does not echo ${missing.join(', ')}; ${how}`,
    );
  }
}

/** The task of a blocking reply; a message reply is checked for deltas nobody reads. */
export function replyTask(
  sent: WireExchange,
  call: AgentCheckCall,
  add: Add,
): NormalizedTask | undefined {
  const event = readOrFlag(
    () => readStreamEvent(sent.results[0]),
    add,
    call.mode,
    'the reply is neither a task nor a message',
  );
  if (event === undefined) return undefined;
  if (event.type === 'task') return event.task;
  if (event.type === 'message') {
    call.state = 'message';
    messageDeltas(event.message, call.mode, add);
    return undefined;
  }
  add(call.mode, 'error', `the reply is a ${event.type}, not a task or a message`);
  return undefined;
}

function messageDeltas(message: Record<string, unknown>, where: string, add: Add): void {
  try {
    const asTask = readTask({
      id: 'message',
      status: { state: 'completed' },
      artifacts: [message],
    });
    const found = extractWorldStateDeltas(asTask);
    if (found.parts > 0 || asTask.artifacts.some((a) => a.parts.some(isDeltaLike))) {
      add(
        where,
        'error',
        'the agent answered with a message carrying deltas: a gateway reads deltas only from a task; publish a task',
      );
    }
  } catch {
    // Not readable as parts: nothing to say about deltas.
  }
}

/** Folds the stream into the task a gateway would settle, flagging deltas on intermediate events. */
export function foldStream(
  sent: WireExchange,
  call: AgentCheckCall,
  add: Add,
): NormalizedTask | undefined {
  const events: NormalizedStreamEvent[] = [];
  call.events = [];
  sent.results.forEach((raw, i) => {
    const where = `streaming.events[${i}]`;
    const event = readOrFlag(() => readStreamEvent(raw), add, where, 'unreadable stream event');
    if (event === undefined) return;
    events.push(event);
    call.events!.push(event.type);
  });
  let task: NormalizedTask | undefined;
  events.forEach((event, i) => {
    switch (event.type) {
      case 'task':
        task = { ...event.task, artifacts: [...event.task.artifacts] };
        return;
      case 'message':
        call.state = 'message';
        messageDeltas(event.message, `streaming.events[${i}]`, add);
        return;
      case 'statusUpdate':
        task ??= taskFromUpdate(event);
        task.state = event.state;
        // Each status replaces the last, its message included: a status without one clears it.
        if (event.statusText === undefined) delete task.statusText;
        else task.statusText = event.statusText;
        return;
      case 'artifactUpdate': {
        task ??= taskFromUpdate(event);
        const next = events[i + 1];
        const closing = next?.type === 'statusUpdate' && isTerminalState(next.state);
        if (
          !closing &&
          extractWorldStateDeltas({ ...task, artifacts: [event.artifact] }).parts > 0
        ) {
          add(
            `streaming.events[${i}]`,
            'warning',
            `a worldstate-delta part on an intermediate event (artifact ${event.artifact.artifactId}): report deltas once, on the artifact sent as the task ends`,
          );
        }
        const at = task.artifacts.findIndex((a) => a.artifactId === event.artifact.artifactId);
        if (at === -1) task.artifacts.push(event.artifact);
        else if (event.append) {
          const before = task.artifacts[at]!;
          task.artifacts[at] = { ...before, parts: [...before.parts, ...event.artifact.parts] };
        } else task.artifacts[at] = event.artifact;
        return;
      }
    }
  });
  return task;
}

/**
 * Polls a task that is neither ended nor waiting on the caller, as a gateway's tracker would, up
 * to the timeout. `lost` when a `GetTask` failed (the error is added): the task's end is unknown,
 * not late.
 */
export async function followToEnd(
  task: NormalizedTask,
  endpoint: AgentEndpoint,
  wire: WireOptions,
  call: AgentCheckCall,
  add: Add,
): Promise<{ task: NormalizedTask; lost: boolean }> {
  const deadline = Date.now() + wire.timeoutMs;
  let current = task;
  while (!isTerminalState(current.state) && !isInterruptedState(current.state)) {
    if (Date.now() > deadline) return { task: current, lost: false };
    await sleep(100);
    const got = await getTask(endpoint, current.id, wire);
    if (got.error !== undefined) {
      add(call.mode, 'error', `GetTask ${current.id} failed: ${got.error}`);
      return { task: current, lost: true };
    }
    const next = readOrFlag(
      () => readTask(got.results[0]),
      add,
      call.mode,
      `GetTask ${current.id} answered no task`,
    );
    if (next === undefined) return { task: current, lost: true };
    current = next;
  }
  return { task: current, lost: false };
}

/**
 * Judges how the task came out: a task that did not end (waiting on the caller, or still running
 * when the timeout came) is a warning, as a gateway reads deltas only from a task that ended; a
 * task that ended `failed` is an error, with its status text (the agent's own error, often), as
 * the skill did not do its job on the call — a clean report must not hide that; `rejected` or
 * `canceled` is a warning, as the skill may have refused the check's input. Returns whether the
 * task ended, so its deltas and cost can be read.
 */
export function judgeEnd(
  task: NormalizedTask,
  call: AgentCheckCall,
  timeoutMs: number,
  add: Add,
): boolean {
  const status =
    task.statusText === undefined || task.statusText === ''
      ? 'no status message'
      : JSON.stringify(task.statusText);
  if (!isTerminalState(task.state)) {
    add(
      call.mode,
      'warning',
      isInterruptedState(task.state)
        ? `the task did not end (state ${task.state}, ${status}); a gateway reads deltas only from a task that ended`
        : `the task did not end within the timeout of ${timeoutMs} ms (state ${task.state}); a gateway reads deltas only from a task that ended`,
    );
    return false;
  }
  const retry = 'if the input is the reason, pass one the skill accepts with --input';
  if (task.state === 'failed') {
    add(
      call.mode,
      'error',
      `the task failed: ${status}; the skill did not do its job on this call; ${retry}`,
    );
  } else if (task.state === 'rejected' || task.state === 'canceled') {
    add(
      call.mode,
      'warning',
      `the task ended ${task.state}: ${status}; the skill did not do its job, so what it reports went unchecked; ${retry}`,
    );
  }
  return true;
}

/** What a gateway's effect-domain and cost hooks, and its reconciliation, would make of the task. */
export function inspectTask(
  task: NormalizedTask,
  call: AgentCheckCall,
  facts: {
    skill: string;
    domains: string[] | undefined;
    radius: BlastRadius | undefined;
    active: readonly string[];
  },
  add: Add,
): void {
  const where = call.mode;
  const found = extractWorldStateDeltas(task);
  call.deltas = found.entries;
  call.rejected = found.rejected;
  for (const r of found.rejected) {
    add(`${where}.${r.location ?? 'deltas'}`, 'error', `entry ${r.index} is rejected: ${r.reason}`);
  }
  for (const w of found.warnings) add(where, 'warning', w);
  const bytes = deltasBytes(found.entries);
  if (bytes > DELTAS_WARNING_BYTES)
    add(where, 'warning', `the task carries ${deltasTooLarge(bytes)}`);
  task.artifacts.forEach((artifact, a) => {
    artifact.parts.forEach((part, p) => {
      if (part.type !== 'data') return;
      const mime = part.metadata[PART_MIME_METADATA_KEY] ?? part.mediaType;
      const path = `${where}.artifacts[${a}].parts[${p}]`;
      if (
        typeof mime === 'string' &&
        /worldstate-delta/i.test(mime) &&
        mime !== WORLDSTATE_DELTA_MIME
      ) {
        add(
          path,
          'error',
          `MIME ${JSON.stringify(mime)} is not ${WORLDSTATE_DELTA_MIME}: a gateway never reads these deltas`,
        );
      } else if (mime === undefined && isDeltaLike(part)) {
        add(
          path,
          'warning',
          `a data part with "deltas" but no metadata.mimeType: a gateway never reads it as deltas (MIME ${WORLDSTATE_DELTA_MIME})`,
        );
      }
    });
  });
  if (found.parts > 0 && !facts.active.includes(EFFECT_DOMAIN_V1_URI)) {
    add(
      where,
      'error',
      'the task carries worldstate-delta parts, but the card does not declare effect-domain-v1: a gateway never reads them',
    );
  }
  if (found.entries.length > 0 && facts.active.includes(EFFECT_DOMAIN_V1_URI)) {
    const touched = [...new Set(found.entries.map((e) => e.domain))];
    const undeclared =
      facts.domains === undefined ? touched : touched.filter((x) => !facts.domains!.includes(x));
    if (undeclared.length > 0) {
      add(
        where,
        'warning',
        facts.domains === undefined
          ? `${facts.skill} changed ${undeclared.join(', ')} but declares no effect-domain-v1 domains: a gateway raises undeclared_effect`
          : `${facts.skill} changed ${undeclared.join(', ')}, outside its declared domains (${facts.domains.join(', ') || 'none'}): a gateway raises undeclared_effect`,
      );
    }
    if (facts.radius === 'self') {
      add(
        where,
        'warning',
        `${facts.skill} declares radius self but changed shared world state: a gateway raises blast_violation`,
      );
    }
  }
  const cost = extractCost(task);
  if (cost.payload !== undefined) call.cost = cost.payload;
  for (const problem of cost.problems) add(`${where}.${problem.split(':')[0]}`, 'error', problem);
  if (cost.payload !== undefined && !facts.active.includes(COST_V1_URI)) {
    add(
      where,
      'warning',
      'the task carries a cost-v1 part, but the card does not declare cost-v1: a gateway never reads it',
    );
  }
}
