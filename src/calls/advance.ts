/**
 * The life of one call as a pure transition: `advance(call, event) → { call, effects }`. No I/O
 * and no clock: time comes with the event. Whatever saw something happen to a call — the gate,
 * an approval, the agent's reply, a stream's end, the tracker's poll, a push, recovery after a
 * crash — says so as an event; the dispatcher performs the effects (write the record
 * and its announcement in one unit, send, follow, ask a question, schedule a release).
 *
 * The rules every source relies on (property-tested in advance.test.ts):
 * - nothing leaves an ended call (`completed`, `failed`, `rejected`, `canceled`): a late or
 *   repeated event is a no-op with no effects;
 * - a call ends once, announced once (`skill.dispatch.completed` or `.failed` or `.rejected`);
 * - the same task end seen by several paths, in any order, gives the same end.
 */
import type { DispatchResult, DispatchStatus, TaskStateName } from '../protocol/index.js';
import { isInterruptedState, isTerminalState } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';

/** Where a call stands: the HTTP API's `status`, the events' and the proxy's one vocabulary. */
export type CallStatus = DispatchStatus;

/** The statuses a call never leaves. */
export const ENDED_STATUSES: ReadonlySet<CallStatus> = new Set([
  'completed',
  'failed',
  'rejected',
  'canceled',
]);

/** The agent's text answer is kept up to this many characters. */
export const RESULT_TEXT_LIMIT = 2000;

/** What of a call the transition reads and writes. */
export interface CallState {
  readonly status: CallStatus;
  readonly taskId: string | null;
  readonly result: DispatchResult | null;
  /** Whether the gate has decided on the call (a call is gated once, before anything else). */
  readonly decided: boolean;
  /** Committed before the first byte left for the agent; null until the call was sent. */
  readonly sent: { readonly messageId: string; readonly contextId: string } | null;
  /** Epoch milliseconds of the last move. */
  readonly updatedAt: number;
}

/** A coded error as it is kept in a call's result. */
export interface CallError {
  readonly code: string;
  readonly message: string;
}

/** Something that happened to a call. Every event carries its time. */
export type CallEvent =
  /** The gate held the call for a human (`hold`) or refused it (`deny`). */
  | {
      readonly type: 'gated';
      readonly at: number;
      readonly action: 'hold' | 'deny';
      readonly reason: string;
      readonly code?: string;
      /** A veto window: the call goes at this time unless vetoed. */
      readonly goAt?: number;
    }
  /** A held call's approval was consumed (or its veto window ended): it goes now. */
  | { readonly type: 'released'; readonly at: number }
  /** The ids of what is about to be sent are committed; `announce` on a call let go at once. */
  | {
      readonly type: 'sending';
      readonly at: number;
      readonly messageId: string;
      readonly contextId: string;
      readonly announce: boolean;
    }
  /**
   * The agent named the call's task before its answer ended (the first event of its stream),
   * and the answer is slow to come: kept, so a gateway that dies before the end finds the task
   * by its id.
   */
  | { readonly type: 'task-named'; readonly at: number; readonly taskId: string }
  /** The send failed before any answer (transport, timeout, refusal). */
  | { readonly type: 'send-failed'; readonly at: number; readonly error: CallError }
  /**
   * The agent answered the send: a message (`state: 'message'`), an ended task, or a task that
   * goes on (`taskId`); `continued` when the send answered a question on a followed task.
   */
  | {
      readonly type: 'answered';
      readonly at: number;
      readonly state: TaskStateName | 'message';
      readonly taskId?: string;
      readonly text?: string;
      readonly continued?: boolean;
      /** A stream dropped before the end: follow by resubscribing. */
      readonly resubscribe?: boolean;
    }
  /** A followed task changed state without ending (poll, push, resubscribe). */
  | { readonly type: 'task-state'; readonly at: number; readonly state: TaskStateName }
  /**
   * The task ended, on whichever path won its claim; `timedOut` when tracking gave up on it;
   * `forgottenBy` (the agent) when the agent no longer knows the task, so that whether the call
   * ran is unknown.
   */
  | {
      readonly type: 'settled';
      readonly at: number;
      readonly taskId: string;
      readonly state: TaskStateName;
      readonly text?: string;
      readonly timedOut?: boolean;
      readonly forgottenBy?: string;
    }
  /** The caller answered the task's question: the answer goes to the agent on the same task. */
  | { readonly type: 'question-answered'; readonly at: number }
  /**
   * Someone asked to cancel the call while it is at the agent (`by`, with `reason`): the cancel
   * is on its way to the agent, and the call ends when the agent says its task ended. A call that
   * then ends canceled keeps who asked and why as its error.
   */
  | {
      readonly type: 'cancel-requested';
      readonly at: number;
      /** Who asked (a token's or caller's name); absent when nobody was named. */
      readonly by?: string;
      readonly reason?: string;
    }
  /** An approval or a question was rejected, expired or voided. */
  | { readonly type: 'denied'; readonly at: number; readonly reason: string; readonly code: string }
  /**
   * What was let go (a held call, an answer, a follow-up) cannot be sent from any gateway that
   * runs: none knows the call's agent. The call ends failed, nothing sent.
   */
  | { readonly type: 'unroutable'; readonly at: number; readonly error: CallError }
  /**
   * Recovery of a call whose holder died: what the agent said of it. `never-sent`: nothing left;
   * `not-found`: sent but the agent has no such task (or cannot say); `found`: the task.
   */
  | {
      readonly type: 'recovered';
      readonly at: number;
      readonly found:
        | { readonly kind: 'never-sent'; readonly message: string }
        | { readonly kind: 'not-found'; readonly message: string }
        | { readonly kind: 'found'; readonly taskId: string; readonly state: TaskStateName };
    };

/** The `skill.dispatch.*` topics a move is announced on. */
export type CallTopic =
  | 'skill.dispatch.gated'
  | 'skill.dispatch.started'
  | 'skill.dispatch.completed'
  | 'skill.dispatch.failed'
  | 'skill.dispatch.rejected'
  | 'skill.dispatch.awaiting-input'
  | 'skill.dispatch.resumed'
  | 'skill.dispatch.cancel-requested';

/** What the runner does after a transition. */
export type CallEffect =
  /** Write the move with this event in the same unit (the outbox). */
  | {
      readonly type: 'announce';
      readonly topic: CallTopic;
      readonly reason?: string;
      readonly state?: string;
    }
  /** Send the call (or the answer to its question) to the agent. */
  | { readonly type: 'send' }
  /** Follow the task until it ends (the tracker). */
  | {
      readonly type: 'follow';
      readonly taskId: string;
      readonly state: TaskStateName;
      readonly resubscribe?: boolean;
    }
  /** Ask the task's question of a human (the approvals inbox). */
  | { readonly type: 'checkpoint'; readonly taskId: string; readonly question: string }
  /** Release the held call at `at` unless vetoed (a veto window). */
  | { readonly type: 'release-at'; readonly at: number };

/** The result of {@link advance}. */
export interface Advanced<C extends CallState> {
  readonly call: C;
  readonly effects: readonly CallEffect[];
  /** Whether the call moved (its status, task id or result changed). */
  readonly moved: boolean;
}

/** The call's status for a task state. A state nobody can read is not an end. */
export function statusOfState(state: TaskStateName): CallStatus {
  switch (state) {
    case 'completed':
      return 'completed';
    case 'canceled':
      return 'canceled';
    case 'rejected':
      return 'rejected';
    case 'failed':
      return 'failed';
    case 'input-required':
    case 'auth-required':
      return 'awaiting-input';
    case 'submitted':
    case 'working':
    case 'unknown':
      return 'running';
  }
}

/** How a call that reached a task's end is summed up in its result. */
export function summaryOf(state: TaskStateName, text: string | undefined): DispatchResult {
  const result: DispatchResult = { state };
  if (text !== undefined && text !== '') result.text = text.slice(0, RESULT_TEXT_LIMIT);
  if (state !== 'completed' && !isInterruptedState(state)) {
    result.error = { code: 'FLEETGATE_TASK_FAILED', message: `The task ended ${state}.` };
  }
  return result;
}

/** The error a call keeps once someone asked to cancel it (see the `cancel-requested` event). */
export const CANCEL_REQUESTED_CODE = 'FLEETGATE_DISPATCH_CANCELED';

/**
 * The result of a call that reached a task's end: {@link summaryOf}, except that a task that
 * ended canceled after someone asked to cancel the call keeps who asked and why.
 */
function endResult(
  call: CallState,
  state: TaskStateName,
  text: string | undefined,
): DispatchResult {
  const result = summaryOf(state, text);
  const asked = call.result?.error;
  if (state === 'canceled' && asked?.code === CANCEL_REQUESTED_CODE) result.error = { ...asked };
  return result;
}

const endTopic = (status: CallStatus): CallTopic =>
  status === 'completed'
    ? 'skill.dispatch.completed'
    : status === 'rejected'
      ? 'skill.dispatch.rejected'
      : 'skill.dispatch.failed';

/**
 * Moves `call` on by `event`. Pure: the same call and event give the same answer; the caller
 * persists the returned call (compare-and-set on the status it read) and runs the effects only
 * when its write moved the call.
 */
export function advance<C extends CallState>(call: C, event: CallEvent): Advanced<C> {
  if (ENDED_STATUSES.has(call.status)) return { call, effects: [], moved: false };
  const step = transition(call, event);
  if (step === undefined) return { call, effects: [], moved: false };
  const next = { ...call, decided: true, ...step.change, updatedAt: event.at };
  const moved =
    next.decided !== call.decided ||
    next.status !== call.status ||
    next.taskId !== call.taskId ||
    next.result !== call.result ||
    next.sent !== call.sent;
  return { call: next, effects: step.effects, moved };
}

interface Step {
  change: Partial<CallState>;
  effects: CallEffect[];
}

/** An end: status and result, announced once (a call is not ended twice: see {@link advance}). */
function end(status: CallStatus, result: DispatchResult, taskId?: string): Step {
  return {
    change: { status, result, ...defined({ taskId }) },
    effects: [{ type: 'announce', topic: endTopic(status) }],
  };
}

const failed = (error: CallError): Step =>
  end('failed', { error: { code: error.code, message: error.message } });

function transition(call: CallState, event: CallEvent): Step | undefined {
  switch (event.type) {
    case 'gated':
      return gated(call, event);
    case 'released':
      if (call.status !== 'awaiting-approval') return undefined;
      return {
        change: { status: 'running', result: null },
        effects: [{ type: 'announce', topic: 'skill.dispatch.started' }, { type: 'send' }],
      };
    case 'sending':
      if (call.status !== 'running' || call.sent !== null) return undefined;
      return {
        change: { sent: { messageId: event.messageId, contextId: event.contextId } },
        effects: event.announce ? [{ type: 'announce', topic: 'skill.dispatch.started' }] : [],
      };
    case 'task-named':
      // Only a call on its way to its first answer; a task named already keeps its id.
      if (call.status !== 'running' || call.taskId !== null) return undefined;
      return { change: { taskId: event.taskId }, effects: [] };
    case 'send-failed':
      return call.status === 'awaiting-approval' ? undefined : failed(event.error);
    case 'answered':
      return answered(call, event);
    case 'task-state':
      return taskState(call, event.state);
    case 'settled':
      if (call.status === 'awaiting-approval') return undefined;
      if (event.forgottenBy !== undefined) {
        return end(
          'failed',
          {
            error: {
              code: 'FLEETGATE_CALL_OUTCOME_UNKNOWN',
              message: `Agent ${event.forgottenBy} no longer knows task ${event.taskId} (it answered "task not found" again and again): whether the call ran is unknown. Check at the agent before sending it again.`,
            },
          },
          event.taskId,
        );
      }
      if (event.timedOut === true) {
        return end(
          'failed',
          {
            state: event.state,
            error: {
              code: 'FLEETGATE_TASK_TIMEOUT',
              message: `Task ${event.taskId} did not finish within the tracking time; it was canceled at the agent.`,
            },
          },
          event.taskId,
        );
      }
      return end(
        statusOfState(event.state),
        endResult(call, event.state, event.text),
        event.taskId,
      );
    case 'cancel-requested':
      return cancelRequested(call, event);
    case 'question-answered':
      if (call.status !== 'running' && call.status !== 'awaiting-input') return undefined;
      return { change: { status: 'running' }, effects: [{ type: 'send' }] };
    case 'denied':
      return {
        change: {
          status: 'rejected',
          result: { error: { code: event.code, message: event.reason } },
        },
        effects: [{ type: 'announce', topic: 'skill.dispatch.rejected', reason: event.reason }],
      };
    case 'unroutable':
      return call.status === 'awaiting-approval' ||
        call.status === 'running' ||
        call.status === 'awaiting-input'
        ? failed(event.error)
        : undefined;
    case 'recovered':
      return recovered(call, event.found);
  }
}

function gated(call: CallState, event: Extract<CallEvent, { type: 'gated' }>): Step | undefined {
  // A call is gated once, before anything else; a repeated or late decision changes nothing.
  if (call.decided) return undefined;
  const deny = event.action === 'deny';
  const result: DispatchResult = {
    error: {
      code: (deny ? event.code : undefined) ?? 'FLEETGATE_DISPATCH_DENIED',
      message: event.reason,
    },
  };
  if (deny) {
    return {
      change: { status: 'rejected', result },
      effects: [{ type: 'announce', topic: 'skill.dispatch.rejected', reason: event.reason }],
    };
  }
  return {
    change: { status: 'awaiting-approval', result },
    effects: [
      { type: 'announce', topic: 'skill.dispatch.gated', reason: event.reason },
      ...(event.goAt === undefined ? [] : [{ type: 'release-at' as const, at: event.goAt }]),
    ],
  };
}

function answered(
  call: CallState,
  event: Extract<CallEvent, { type: 'answered' }>,
): Step | undefined {
  if (call.status === 'awaiting-approval') return undefined;
  const { taskId } = event;
  if (event.state === 'message') return end('completed', summaryOf('completed', event.text));
  if (isTerminalState(event.state) || taskId === undefined) {
    // A task that goes on without an id cannot be followed: it ends failed.
    const status = statusOfState(event.state);
    return end(
      ENDED_STATUSES.has(status) ? status : 'failed',
      endResult(call, event.state, event.text),
      taskId,
    );
  }
  const status = statusOfState(event.state);
  const effects: CallEffect[] = [];
  if (status === 'awaiting-input' && call.status !== 'awaiting-input') {
    effects.push({ type: 'announce', topic: 'skill.dispatch.awaiting-input', state: event.state });
  }
  // A continued task is already followed.
  if (event.continued !== true) {
    effects.push({
      type: 'follow',
      taskId,
      state: event.state,
      ...(event.resubscribe === true ? { resubscribe: true } : {}),
    });
  }
  if (event.state === 'input-required') {
    effects.push({ type: 'checkpoint', taskId, question: event.text ?? '' });
  }
  return { change: { status, taskId }, effects };
}

function cancelRequested(
  call: CallState,
  event: Extract<CallEvent, { type: 'cancel-requested' }>,
): Step | undefined {
  // Only a call at the agent is canceled there (a held one is rejected instead); asked once.
  if (call.status !== 'running' && call.status !== 'awaiting-input') return undefined;
  if (call.result?.error?.code === CANCEL_REQUESTED_CODE) return undefined;
  const who = `Canceled by ${event.by ?? 'its caller'}`;
  const message = event.reason === undefined ? `${who}.` : `${who}: ${event.reason}`;
  return {
    change: { result: { error: { code: CANCEL_REQUESTED_CODE, message } } },
    effects: [
      {
        type: 'announce',
        topic: 'skill.dispatch.cancel-requested',
        ...defined({ reason: event.reason }),
      },
    ],
  };
}

function taskState(call: CallState, state: TaskStateName): Step | undefined {
  // A state nobody can read says nothing about where the task stands.
  if (state === 'unknown') return undefined;
  const status = statusOfState(state);
  // Ends come through `settled`; only a call at the agent moves between working and asking.
  if (isTerminalState(state) || (status !== 'running' && status !== 'awaiting-input')) {
    return undefined;
  }
  if ((call.status !== 'running' && call.status !== 'awaiting-input') || call.status === status) {
    return undefined;
  }
  return {
    change: { status },
    effects: [
      {
        type: 'announce',
        topic:
          status === 'awaiting-input' ? 'skill.dispatch.awaiting-input' : 'skill.dispatch.resumed',
        state,
      },
    ],
  };
}

function recovered(
  call: CallState,
  found: Extract<CallEvent, { type: 'recovered' }>['found'],
): Step | undefined {
  if (call.status !== 'running' && call.status !== 'awaiting-input') return undefined;
  switch (found.kind) {
    case 'never-sent':
      return failed({ code: 'FLEETGATE_CALL_INTERRUPTED', message: found.message });
    case 'not-found':
      return failed({ code: 'FLEETGATE_CALL_OUTCOME_UNKNOWN', message: found.message });
    case 'found': {
      const terminal = isTerminalState(found.state);
      // An ended task is followed too: the tracker's claim applies its deltas once, and its end
      // comes back as `settled`.
      return {
        change: { status: terminal ? 'running' : statusOfState(found.state), taskId: found.taskId },
        effects: [{ type: 'follow', taskId: found.taskId, state: found.state }],
      };
    }
  }
}
