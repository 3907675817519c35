import { randomUUID } from 'node:crypto';
import type { Task } from '@a2a-js/sdk';
import { FleetgateError, isFleetgateError, LIMITS } from '../protocol/index.js';
import { tooDeepAt } from '../protocol/values/index.js';
import { newRecordId } from '../protocol/ids/index.js';
import { defined } from '../protocol/fields/index.js';
import type { CallDoor, ErrorCode, HeldInput, TaskStateName } from '../protocol/index.js';
import { isTerminalState, normalizeTaskState } from '../protocol/index.js';
import type { CallEffect, CallEvent } from '../calls/index.js';
import { advance, ENDED_STATUSES } from '../calls/index.js';
import type {
  DispatchAnnouncement,
  DispatchEventExtra,
  DispatchRecord,
  DispatchRecordStore,
  DispatchSend,
  DispatchStatus,
  HeldDispatch,
} from './dispatch-records.js';
import { moveDispatch } from './dispatch-records.js';
import type { CallInput, CallMode, CallOptions, CallResult, TaskFollower } from './call-types.js';
import type { DispatchObserver } from './handle.js';
import type { GateCall, GateVerdict, PolicyGate } from './policy-gate.js';
import { ALLOW_ALL } from './policy-gate.js';
import type { FleetClient } from './fleet-client.js';
import { heldCall } from './request.js';
import { readReply } from './task-accumulator.js';
import type { SettledTask } from './terminal-types.js';

/** A call's input and options as sent, with the ids and holder committed before it leaves. */
interface PreparedSend {
  input: CallInput;
  options: CallOptions;
  send: DispatchSend;
}

/** What to dispatch. */
export interface DispatchRequest {
  /**
   * The dispatch's id (default: a fresh time-ordered UUID); the A2A proxy's task id is its
   * dispatch's id.
   */
  id?: string;
  agent: string;
  skill: string;
  text?: string;
  data?: unknown;
  /**
   * A client's whole A2A message (v1.0 wire JSON), forwarded as given — parts, metadata, context,
   * references, extensions, id — and kept with a held call so any replica sends it once approved.
   */
  message?: Record<string, unknown>;
  /** The client's `SendMessageRequest.metadata` (the stamps win over its keys). */
  metadata?: Record<string, unknown>;
  /** Extension URIs the client asked for; merged into `A2A-Extensions`, never replaced. */
  extensions?: string[];
  correlationId?: string;
  /** Who asks for the call (an approver can never approve their own call). */
  requestedBy?: string;
  /**
   * The door the call came through, kept on its record (default `library`: a program that embeds
   * the gateway). The gateway's HTTP API and A2A proxy name themselves.
   */
  door?: CallDoor;
  /**
   * How this call is sent when the gate lets it go at once (default: the dispatcher's `mode`).
   * `return-immediately` hands a task that is not finished to the tracker at once; a call
   * released later by an approval is sent the dispatcher's way.
   */
  mode?: CallMode;
  /** Extra headers of the A2A call (a W3C `traceparent`, for instance). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * What let a held call, a task's answer or a follow-up go, as the approvals door saw it (it read
 * the approval): {@link Dispatcher.release}, `resume` and `continueFollowUp` take it.
 */
export interface LetGo {
  /** When it was let go (epoch ms): its approval or answer given, or its veto window ended. */
  at: number;
  /**
   * Told when this gateway left the call to a replica that knows its agent: the approval stays
   * decided and unused, for that replica.
   */
  left?: () => void;
}

/** Which step let a call go: release, resume or follow-up, as the notes of an unknown agent say. */
type LetGoStep = 'release' | 'resume' | 'follow-up';

/** What each step lets go, as said when it is left to a replica. */
const LET_GO_WHAT: Readonly<Record<LetGoStep, string>> = {
  release: 'its held call',
  resume: 'the answer to its question',
  'follow-up': 'its held follow-up',
};

/** A failure as a call's record keeps it: its code, or `FLEETGATE_CALL_FAILED`, and its message. */
function callError(error: unknown): { code: string; message: string } {
  return isFleetgateError(error)
    ? { code: error.code, message: error.message }
    : {
        code: 'FLEETGATE_CALL_FAILED',
        message: error instanceof Error ? error.message : String(error),
      };
}

/**
 * Refuses a call whose data, metadata or message nests deeper than `LIMITS.inputDepth`, before it
 * is recorded: fingerprinting and encoding such input would exhaust the stack mid-call.
 */
function checkInputDepth(request: DispatchRequest): void {
  const parts = { data: request.data, metadata: request.metadata, message: request.message };
  for (const [name, value] of Object.entries(parts)) {
    const at = tooDeepAt(value, LIMITS.inputDepth);
    if (at === undefined) continue;
    throw new FleetgateError(
      'FLEETGATE_LIMIT_EXCEEDED',
      `The ${name} of a call of ${request.skill} on ${request.agent} nests deeper than ${LIMITS.inputDepth} levels (at ${name}${at}).`,
      {
        details: {
          agent: request.agent,
          skill: request.skill,
          at: `${name}${at}`,
          limit: LIMITS.inputDepth,
        },
      },
    );
  }
}

/** Dispatches the recovery sweep reads at once. */
const SWEEP_PAGE = 500;

/** How {@link Dispatcher} sends a call. */
interface SendOptions {
  /** Announce `skill.dispatch.started` with the send (a call the gate let go at once). */
  started?: boolean;
  /** What is sent, its ids and holder already committed with the record (`#prepare`). */
  prepared?: PreparedSend;
  requestedBy?: string;
  taskId?: string;
  contextId?: string;
  mode?: CallMode;
  headers?: Readonly<Record<string, string>>;
  observer?: Partial<DispatchObserver>;
}

/**
 * How long a new call's answer may take before the task its stream named is written down: most
 * answers come sooner and write nothing; a gateway that dies within it leaves a call that is
 * looked for by its context, as one whose task id came with its answer.
 */
const TASK_NAMED_AFTER_MS = 50;

/**
 * The task a new call's stream named, kept (`task-named`) once the call has gone on for
 * {@link TASK_NAMED_AFTER_MS} without its answer: a gateway that dies from then on leaves a call
 * followed up by its task id, not looked for by its context, and a quick answer costs no write.
 */
class TaskNaming {
  readonly #timer: NodeJS.Timeout;
  #kept: Promise<void> | undefined;

  constructor(keep: () => Promise<void>) {
    this.#timer = setTimeout(() => {
      this.#kept = keep();
    }, TASK_NAMED_AFTER_MS);
  }

  /** Stops the clock and waits for a write under way. */
  async settled(): Promise<void> {
    clearTimeout(this.#timer);
    await this.#kept;
  }
}

/**
 * Whether a send failed because the agent's answer was cut off by the response deadline
 * (`limits.agentResponseTimeout`): the request reached the agent, so its task may run there.
 */
function answerCutOff(error: unknown): error is FleetgateError {
  return (
    isFleetgateError(error) &&
    error.code === 'FLEETGATE_CALL_TIMEOUT' &&
    typeof error.details?.responseTimeoutMs === 'number'
  );
}

/** The question an interrupted task asks: its status message, else the text of its reply. */
function questionOf(task: Task | undefined): string | undefined {
  const texts: string[] = [];
  for (const part of task?.status?.message?.parts ?? []) {
    if (part.content?.$case === 'text') texts.push(part.content.value);
  }
  const text = texts.length > 0 ? texts.join('\n') : readReply(task, undefined).text;
  return text === '' ? undefined : text;
}

/** Options of {@link Dispatcher}. */
export interface DispatcherOptions {
  fleet: Pick<FleetClient, 'call' | 'agentClient'>;
  /**
   * The durable records; every `skill.dispatch.*` event is written into the outbox with the move
   * it announces (nothing is published directly: a bus outage fails no dispatch).
   */
  records: DispatchRecordStore;
  /** Where tasks that did not end in the reply go (the task tracker). */
  tracker: TaskFollower;
  gate?: PolicyGate;
  /**
   * This process's id as the holder of the dispatches it sends (default: a fresh id). A dispatch
   * whose holder died is finished by {@link Dispatcher.recoverOrphans} of a live one.
   */
  owner?: string;
  /**
   * How long a sent call whose agent cannot be asked about it (unreachable) is retried by
   * recovery before it ends "outcome unknown" (default 10 minutes).
   */
  recoveryGiveUpMs?: number;
  /**
   * Tasks this gateway knows ended though no dispatch record says so: those a gateway stopping
   * while its database was away journaled (`TaskTerminal.replay`). Recovery asks here, by the
   * context and message id a call was sent with, before asking the agent, which may have
   * forgotten the task.
   */
  endedTask?: (contextId: string, messageId: string) => Task | undefined;
  /**
   * How calls are sent (default `blocking`: the agent answers when the task ends or waits on
   * input). `return-immediately` hands every unfinished task to the tracker at once.
   */
  mode?: 'blocking' | 'streaming' | 'return-immediately';
  /**
   * Whether another gateway runs on this one's store now (a replica whose instance lease is live).
   * Mid-roll-out, replicas may differ in their agents: a call let go ({@link LetGo}) whose agent
   * this gateway does not know is then left, its approval unused, to a replica that knows the
   * agent — for `unknownAgentGraceMs` after it was let go. With no other gateway running, or once
   * that grace has run out, the call ends `failed` with `FLEETGATE_AGENT_UNKNOWN`. Default: none
   * runs (a gateway alone).
   */
  replicasRunning?: () => Promise<boolean>;
  /** See `replicasRunning` (default 15 s, the default `replicas.leaseTtl`). */
  unknownAgentGraceMs?: number;
  now?: () => number;
  /**
   * Failures of background work (a veto window's release), and the note, once per call, that a
   * call was left to a replica that knows its agent; default: failures rethrown unhandled.
   */
  onError?: (error: unknown, where: string) => void;
}

/** What {@link Dispatcher} `#move` did. */
interface Moved {
  record: DispatchRecord;
  /** Whether this write moved the dispatch to a new status. */
  changed: boolean;
  /** The effects left to run (the announcement was written with the move). */
  effects: readonly CallEffect[];
}

/** An agent that does not offer ListTasks (a v0.3 agent, or one that says so). */
export function isUnsupported(error: unknown): boolean {
  const text = error instanceof Error ? `${error.name} ${error.message}` : String(error);
  return /unsupported|not supported|method not found|-32601|-32004/i.test(text);
}

/**
 * Dispatches skill calls: a durable dispatch record for each, the policy gate, then the fleet
 * client. A terminal reply ends the dispatch at once (the call's `after` hooks already ran through
 * the task terminal); a task still running is handed to the tracker, and whichever path settles it
 * later — the tracker's, or another call answering the task — ends the dispatch through
 * {@link onTaskSettled} (wire it to the terminal's `onSettled`). A task waiting on its caller is
 * `awaiting-input`, never `running` ({@link onTaskState}, wired to the tracker's
 * `onStateChanged`). Publishes `skill.dispatch.requested | rejected | gated | started |
 * awaiting-input | resumed | completed | failed`.
 */
export class Dispatcher {
  readonly #o: DispatcherOptions & {
    gate: PolicyGate;
    now: () => number;
    owner: string;
    recoveryGiveUpMs: number;
    replicasRunning: () => Promise<boolean>;
    unknownAgentGraceMs: number;
  };
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  /**
   * Dispatches this process has in hand now (being gated, released or sent): never taken for
   * orphans, whoever asks.
   */
  readonly #inHand = new Set<string>();
  /**
   * The calls this gateway said it left to a replica (by step, dispatch and when they were let
   * go), with when their grace ends: each is said once, not at every sweep.
   */
  readonly #leftNoted = new Map<string, number>();

  constructor(options: DispatcherOptions) {
    this.#o = {
      gate: ALLOW_ALL,
      now: Date.now,
      owner: randomUUID(),
      recoveryGiveUpMs: 600_000,
      replicasRunning: () => Promise.resolve(false),
      unknownAgentGraceMs: 15_000,
      ...options,
    };
  }

  /** This process's id as the holder of the dispatches it sends. */
  get owner(): string {
    return this.#o.owner;
  }

  /**
   * Dispatches one call; resolves with the record once the call ended or was handed over.
   * `observer` is told the gate's decision, and of a call sent at once its stream events and the
   * agent's answer (a dispatch handle's feed).
   */
  async dispatch(
    request: DispatchRequest,
    observer?: Partial<DispatchObserver>,
  ): Promise<DispatchRecord> {
    checkInputDepth(request);
    const now = this.#o.now();
    const record: DispatchRecord = {
      id: request.id ?? newRecordId(),
      agent: request.agent,
      skill: request.skill,
      correlationId: request.correlationId ?? newRecordId(),
      status: 'running',
      taskId: null,
      createdAt: now,
      updatedAt: now,
      result: null,
      ...defined({ traceparent: request.headers?.traceparent, requestedBy: request.requestedBy }),
      door: request.door ?? 'library',
    };
    const { text, data, message, metadata, extensions, requestedBy, mode, headers } = request;
    const input: HeldInput = defined({ text, data, message, metadata, extensions });
    const call: GateCall = {
      dispatchId: record.id,
      agent: record.agent,
      skill: record.skill,
      correlationId: record.correlationId,
      input,
      ...defined({ requestedBy }),
    };
    const more = { started: true, ...defined({ requestedBy, mode, headers, observer }) };
    // In hand from before it is recorded until it ends or is handed over: to the recovery sweep,
    // a call recorded and not yet sent looks like one whose gateway stopped before sending it.
    this.#inHand.add(record.id);
    try {
      return await this.#gateAndSend(record, call, input, more, observer);
    } finally {
      this.#inHand.delete(record.id);
    }
  }

  /** A recorded call (about to be): gated, then held, refused or sent. */
  async #gateAndSend(
    record: DispatchRecord,
    call: GateCall,
    input: HeldInput,
    more: SendOptions,
    observer: Partial<DispatchObserver> | undefined,
  ): Promise<DispatchRecord> {
    const atOnce = this.#o.gate.decideAtOnce?.(call);
    const prepared = atOnce?.action === 'allow' ? this.#prepare(input) : undefined;
    if (atOnce !== undefined && prepared !== undefined) {
      // A call the gate lets go without a write: the record, who sends it with which ids, and
      // its two events in one unit, committed before the first byte leaves (a process that dies
      // from here on leaves a call that was sent, to be looked up by its context).
      await this.#o.records.create(record, {
        announce: [{ topic: 'skill.dispatch.requested' }, { topic: 'skill.dispatch.started' }],
        send: prepared.send,
      });
      observer?.decided?.(atOnce);
      return this.#send(record, input, { ...more, prepared });
    }

    // The record, its event and its holder in one unit: a process that dies from here on leaves
    // a dispatch that recovery can find (never sent, or sent and to be looked up).
    await this.#o.records.create(record, {
      announce: [{ topic: 'skill.dispatch.requested' }],
      send: { owner: this.#o.owner, messageId: '', contextId: '', sentAt: null },
    });
    // A call the gate let go at once whose input does not decode is decided already: its send
    // records the failure.
    let decision: GateVerdict;
    try {
      decision = atOnce ?? (await this.#o.gate.decide(call));
    } catch (error) {
      // A gate that could not decide (its store away, say) ends the call it was asked about: left
      // as it is, recovery would later say its gateway stopped before sending it.
      await this.#move(record, {
        type: 'send-failed',
        at: this.#o.now(),
        error: callError(error),
      }).catch(() => undefined);
      throw error;
    }
    observer?.decided?.(decision);
    if (decision.action !== 'allow') return this.#held(record, decision);
    return this.#send(record, input, more);
  }

  /**
   * What a call sends, and the ids and holder to commit before it is sent; undefined when the
   * input does not decode (the send records that failure).
   */
  #prepare(held: HeldInput): PreparedSend | undefined {
    let call: { input: CallInput; options: CallOptions };
    try {
      call = heldCall(held);
    } catch {
      return undefined;
    }
    return { ...call, send: this.#sendIds(call.options) };
  }

  /** The ids a send goes out with (the caller's, or new ones) and who sends it, from now. */
  #sendIds(options: CallOptions): DispatchSend {
    options.messageId ??= randomUUID();
    options.contextId ??= randomUUID();
    return {
      owner: this.#o.owner,
      messageId: options.messageId,
      contextId: options.contextId,
      sentAt: this.#o.now(),
    };
  }

  async #send(
    record: DispatchRecord,
    held: HeldInput,
    more: SendOptions = {},
  ): Promise<DispatchRecord> {
    let result: CallResult;
    /** The ids the call went out with, committed before it left (a new task's call only). */
    let sent = more.prepared?.send;
    /** The task the agent's stream named before its answer ended, kept if the answer is slow. */
    let naming = undefined as TaskNaming | undefined;
    try {
      const { input, options } = more.prepared ?? heldCall(held);
      if (more.taskId === undefined && more.prepared === undefined) {
        // Durable before the network: the ids of what is sent, and who sends it, are committed
        // before the first byte leaves, so recovery can find the task by its context.
        sent = this.#sendIds(options);
        await this.#o.records.sending(
          record,
          sent,
          more.started === true ? { topic: 'skill.dispatch.started' } : undefined,
        );
      }
      result = await this.#o.fleet.call(record.agent, record.skill, input, {
        ...options,
        ...(more.observer?.streamed === undefined
          ? {}
          : { onEvent: more.observer.streamed.bind(more.observer) }),
        ...(more.taskId === undefined
          ? {
              onTaskNamed: (taskId: string) => {
                naming = new TaskNaming(() => this.#named(record, taskId));
              },
            }
          : {}),
        correlationId: record.correlationId,
        ...callMode(more.mode ?? this.#o.mode),
        ...defined({ taskId: more.taskId, contextId: more.contextId }),
        ...(more.headers !== undefined
          ? { serviceParameters: more.headers }
          : record.traceparent === undefined
            ? {}
            : { serviceParameters: { traceparent: record.traceparent } }),
      });
    } catch (error) {
      await naming?.settled();
      if (sent !== undefined && more.taskId === undefined && answerCutOff(error)) {
        // The agent took the call and its answer was cut off: the task may run there still. It
        // is looked up as recovery looks up a dead holder's call, never failed blind (its
        // effects would be lost) nor sent again.
        return this.#lookUp(record, sent, error);
      }
      const failed = { type: 'send-failed', at: this.#o.now(), error: callError(error) } as const;
      return (await this.#move(record, failed)).record;
    }
    await naming?.settled();
    more.observer?.replied?.(result);
    return this.#answered(record, result, more);
  }

  /** Keeps the task a call's stream named; a failure leaves the call as it was. */
  async #named(record: DispatchRecord, taskId: string): Promise<void> {
    try {
      await this.#move(record, { type: 'task-named', at: this.#o.now(), taskId });
    } catch (error) {
      // Recovery finds the task by the context it was sent with all the same.
      this.#o.onError?.(error, 'dispatcher.task-named');
    }
  }

  /** The agent answered a sent call: the task is followed, or the dispatch ends with it. */
  async #answered(
    record: DispatchRecord,
    result: CallResult,
    more: { requestedBy?: string; taskId?: string },
  ): Promise<DispatchRecord> {
    const taskId = result.task?.id;
    const goesOn = !result.terminal && result.task !== undefined && taskId !== undefined;
    if (!goesOn && more.taskId !== undefined) {
      // The tracker may have finished the task first; a dispatch ends once.
      const now = await this.#o.records.get(record.id);
      if (now !== undefined && ENDED_STATUSES.has(now.status)) return now;
    }
    const event: CallEvent = {
      type: 'answered',
      at: this.#o.now(),
      state: goesOn ? normalizeTaskState(result.task?.status?.state) : result.state,
      ...defined({ taskId, text: result.text }),
      ...(more.taskId === undefined ? {} : { continued: true }),
      ...(result.streamDropped === true ? { resubscribe: true } : {}),
    };
    let moved: Moved;
    try {
      moved = await this.#move(record, event);
    } catch (error) {
      // The record could not be moved on (the store is away), but the task runs at the agent:
      // it is still followed, so its end is claimed and its events published.
      const follow = advance({ ...record, decided: true, sent: null }, event).effects;
      try {
        await this.#perform(record, follow, result.task, more.requestedBy, ['follow']);
      } catch (followError) {
        if (this.#o.onError === undefined) throw new AggregateError([error, followError]);
        this.#o.onError(followError, 'dispatcher.follow');
      }
      throw error;
    }
    await this.#perform(record, moved.effects, result.task, more.requestedBy);
    return goesOn ? (await this.#o.records.get(record.id))! : moved.record;
  }

  /**
   * A sent call whose answer was cut off (`cause`): found at the agent by its context and message
   * id, it is followed to its end; not found, it ends `failed` with
   * `FLEETGATE_CALL_OUTCOME_UNKNOWN`. An agent that cannot be asked now is asked again by the
   * recovery sweep (the call is sent, without a task id, and no longer in hand here).
   */
  async #lookUp(
    record: DispatchRecord,
    send: DispatchSend,
    cause: FleetgateError,
  ): Promise<DispatchRecord> {
    try {
      await this.#recoverOne({ record, send }, `${cause.message} The call was sent`);
    } catch (error) {
      if (this.#o.onError === undefined) throw error;
      this.#o.onError(error, 'dispatcher.look-up');
    }
    return (await this.#o.records.get(record.id)) ?? record;
  }

  // --- Held dispatches (the approvals seam) -------------------------------------------------

  /** Records a dispatch the gate denied or held; a veto window schedules its own release. */
  async #held(
    record: DispatchRecord,
    decision: Exclude<GateVerdict, { action: 'allow' }>,
  ): Promise<DispatchRecord> {
    const extra: DispatchEventExtra = {};
    if (decision.decision !== undefined) extra.decision = decision.decision;
    if (decision.action === 'hold' && decision.approvalId !== undefined) {
      extra.approvalId = decision.approvalId;
    }
    const moved = await this.#move(
      record,
      {
        type: 'gated',
        at: this.#o.now(),
        action: decision.action,
        reason: decision.reason,
        ...(decision.action === 'deny' && decision.code !== undefined
          ? { code: decision.code }
          : {}),
        ...(decision.action === 'hold' && decision.goAt !== undefined
          ? { goAt: decision.goAt }
          : {}),
      },
      { decided: false, extra },
    );
    await this.#perform(record, moved.effects, undefined, undefined);
    return moved.record;
  }

  #releaseAt(dispatchId: string, at: number): void {
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        // Timers may fire a little early against the clock: wait out the rest of the window.
        if (this.#o.now() < at) return this.#releaseAt(dispatchId, at);
        this.release(dispatchId, { at }).catch((error: unknown) => {
          if (this.#o.onError === undefined) throw error;
          this.#o.onError(error, 'dispatcher.release');
        });
      },
      Math.max(0, at - this.#o.now()) + 1,
    );
    timer.unref();
    this.#timers.add(timer);
  }

  /**
   * Records that `by` asked to cancel a call at the agent, and why: the record keeps it as its
   * error (`FLEETGATE_DISPATCH_CANCELED`, kept when the task ends canceled) and
   * `skill.dispatch.cancel-requested` announces it, in one unit. Before the cancel goes to the
   * agent, so who canceled a call is on record whatever the agent answers. A call not at the
   * agent (held, ended) or asked already is left as it is. Resolves the record as it stands.
   */
  async requestCancel(
    record: DispatchRecord,
    request: { by?: string; reason?: string },
  ): Promise<DispatchRecord> {
    const event: CallEvent = { type: 'cancel-requested', at: this.#o.now(), ...request };
    const moved = await this.#move(record, event, {
      from: record.status,
      ...(request.by === undefined ? {} : { extra: { canceledBy: request.by } }),
      keepsStatus: true,
    });
    return moved.record;
  }

  /**
   * Moves a dispatch held by the gate on, once its approval was decided (or its veto window
   * ended): the gate re-checks the call, the approval is consumed in the same transaction that
   * moves the record to `running`, then the approved input is sent. A rejected, expired or void
   * approval ends the dispatch `rejected`; an undecided one leaves it waiting. Safe to call from
   * any replica and more than once: only one call goes out. `letGo`, when the caller saw the
   * approval let the call go: a gateway that does not know the call's agent leaves it (see
   * `replicasRunning`).
   */
  async release(dispatchId: string, letGo?: LetGo): Promise<DispatchRecord | undefined> {
    const record = await this.#o.records.get(dispatchId);
    const gate = this.#o.gate;
    if (record?.status !== 'awaiting-approval' || gate.release === undefined) return record;
    // Before the gate: its re-check reads the agent's declarations, which only a gateway that
    // knows the agent has (here it would void a good approval).
    const elsewhere = await this.#unknownAgent(record, 'release', letGo);
    if (elsewhere !== undefined) return elsewhere;
    const verdict = await gate.release({
      dispatchId,
      agent: record.agent,
      skill: record.skill,
      correlationId: record.correlationId,
      input: {},
    });
    switch (verdict.action) {
      case 'wait':
        return record;
      case 'deny':
        // Only a dispatch still held: another replica may have just consumed the approval and
        // sent the call (this one then sees the approval consumed, and must not end it).
        return this.#rejectHeld(dispatchId, verdict, 'awaiting-approval');
      case 'go': {
        const at = this.#o.now();
        const next = advance({ ...record, decided: true, sent: null }, { type: 'released', at });
        const announce = next.effects.find((effect) => effect.type === 'announce');
        const running = { ...record, status: next.call.status, updatedAt: at };
        // The approval is consumed, the dispatch moved into this process's hands and its event
        // written in one transaction.
        // In hand from before the claim commits: the record is then `running` and not yet sent.
        this.#inHand.add(dispatchId);
        try {
          const moved = await verdict.claim((trx) =>
            moveDispatch(trx, dispatchId, record.status, running.status, at, {
              ...(announce === undefined
                ? {}
                : {
                    announce: {
                      record: running,
                      event: { topic: announce.topic },
                      id: randomUUID(),
                    },
                  }),
              owner: this.#o.owner,
            }),
          );
          if (!moved) return await this.#o.records.get(dispatchId);
          return await this.#send(running, verdict.input);
        } finally {
          this.#inHand.delete(dispatchId);
        }
      }
    }
  }

  /** Hands a task's question to the gate: it lands in the inbox, never as a silent failure. */
  async #checkpoint(
    record: DispatchRecord,
    taskId: string,
    contextId: string | undefined,
    question: string,
    requestedBy: string | undefined,
  ): Promise<void> {
    await this.#o.gate.checkpoint?.({
      dispatchId: record.id,
      agent: record.agent,
      skill: record.skill,
      correlationId: record.correlationId,
      taskId,
      ...(contextId === undefined || contextId === '' ? {} : { contextId }),
      question,
      ...defined({ requestedBy }),
    });
  }

  /**
   * Sends the answer to a task's question back to the agent on the same task, once the gate has
   * it (consumed in one transaction, so one replica sends it); a rejected or expired question ends
   * the dispatch `rejected`. `letGo`: as for {@link release}.
   */
  async resume(dispatchId: string, letGo?: LetGo): Promise<DispatchRecord | undefined> {
    const record = await this.#o.records.get(dispatchId);
    const gate = this.#o.gate;
    if (
      (record?.status !== 'running' && record?.status !== 'awaiting-input') ||
      gate.resume === undefined
    ) {
      return record;
    }
    const elsewhere = await this.#unknownAgent(record, 'resume', letGo);
    if (elsewhere !== undefined) return elsewhere;
    const verdict = await gate.resume({ dispatchId });
    switch (verdict.action) {
      case 'wait':
        return record;
      case 'deny':
        return this.#rejectHeld(dispatchId, verdict, record.status);
      case 'answer': {
        const at = this.#o.now();
        const { call } = advance(
          { ...record, decided: true, sent: null },
          { type: 'question-answered', at },
        );
        const claimed = await verdict.claim((trx) =>
          moveDispatch(trx, dispatchId, record.status, call.status, at),
        );
        if (!claimed) return this.#o.records.get(dispatchId);
        return this.#send(
          { ...record, status: call.status, updatedAt: at },
          { text: verdict.text },
          {
            taskId: verdict.taskId,
            ...defined({ contextId: verdict.contextId }),
          },
        );
      }
    }
  }

  /**
   * Sends a held follow-up (a `follow-up` approval) on its dispatch's task once the approval let it
   * go (approved, or its veto window ended): the approval is consumed in one transaction with a
   * compare-and-set on the dispatch still `running`, so one replica sends it and a task that ended
   * or asks for input meanwhile takes nothing; then the message goes on the agent's task. A
   * rejected, expired or void follow-up sends nothing and leaves the dispatch as it was: its task
   * goes on without the message. Resolves the dispatch as it is after. `letGo`: as for
   * {@link release}.
   */
  async continueFollowUp(
    approval: { id: string; dispatchId: string },
    letGo?: LetGo,
  ): Promise<DispatchRecord | undefined> {
    const gate = this.#o.gate;
    const record = await this.#o.records.get(approval.dispatchId);
    if (record?.status !== 'running' || gate.continueFollowUp === undefined) return record;
    const elsewhere = await this.#unknownAgent(record, 'follow-up', letGo);
    if (elsewhere !== undefined) return elsewhere;
    const verdict = await gate.continueFollowUp({ approvalId: approval.id });
    if (verdict.action !== 'go' || verdict.dispatchId !== record.id) return record;
    const at = this.#o.now();
    const claimed = await verdict.claim((trx) =>
      moveDispatch(trx, record.id, 'running', 'running', at),
    );
    if (!claimed) return this.#o.records.get(record.id);
    return this.#send({ ...record, updatedAt: at }, verdict.input, {
      taskId: verdict.taskId,
      ...defined({ contextId: verdict.contextId }),
    });
  }

  /**
   * A call let go (`letGo`) whose agent this gateway does not know (`FLEETGATE_AGENT_UNKNOWN` from
   * the fleet client, as its send would get): left to a replica that knows the agent while one may
   * run and the grace after it was let go lasts — nothing consumed, said once, the record resolved
   * as it is — or else ended `failed` (compare-and-set on its status: a replica that sent it
   * meanwhile wins), the record resolved as it is after. Undefined when the agent is known here,
   * or nothing was let go: the step goes on.
   */
  async #unknownAgent(
    record: DispatchRecord,
    step: LetGoStep,
    letGo: LetGo | undefined,
  ): Promise<DispatchRecord | undefined> {
    if (letGo === undefined) return undefined;
    try {
      await this.#o.fleet.agentClient(record.agent);
      return undefined;
    } catch (error) {
      // Any other failure (a card not loaded yet) is the send's to report, as before.
      if (!isFleetgateError(error, 'FLEETGATE_AGENT_UNKNOWN')) return undefined;
    }
    const graceMs = this.#o.unknownAgentGraceMs;
    const endsAt = letGo.at + graceMs;
    const now = this.#o.now();
    const within = now < endsAt;
    if (within && (await this.#o.replicasRunning())) {
      this.#noteLeft(record, step, letGo.at, endsAt);
      letGo.left?.();
      return record;
    }
    const message = within
      ? `No agent named ${record.agent} is configured on this gateway, and no other gateway runs to send ${LET_GO_WHAT[step]}.`
      : `No running gateway has agent ${record.agent} configured: none sent ${LET_GO_WHAT[step]} within ${Math.round(graceMs / 1000)} s of it being let go.`;
    const ended = await this.#move(
      record,
      { type: 'unroutable', at: now, error: { code: 'FLEETGATE_AGENT_UNKNOWN', message } },
      { from: record.status },
    );
    return ended.record;
  }

  /** Says once per call and step that it was left to a replica that knows its agent. */
  #noteLeft(record: DispatchRecord, step: LetGoStep, at: number, endsAt: number): void {
    const now = this.#o.now();
    // A call left here is sent elsewhere or fails by the end of its grace: forget it then.
    for (const [key, until] of this.#leftNoted) if (until < now) this.#leftNoted.delete(key);
    const key = `${step} ${record.id} ${at}`;
    if (this.#leftNoted.has(key)) return;
    this.#leftNoted.set(key, endsAt);
    const seconds = Math.round(this.#o.unknownAgentGraceMs / 1000);
    this.#o.onError?.(
      new FleetgateError(
        'FLEETGATE_AGENT_UNKNOWN',
        `Agent ${record.agent} is not configured on this gateway: dispatch ${record.id} (${record.skill}) leaves ${LET_GO_WHAT[step]} to a replica that knows the agent; it fails if none sends it within ${seconds} s of it being let go.`,
        {
          details: {
            agent: record.agent,
            dispatchId: record.id,
            graceMs: this.#o.unknownAgentGraceMs,
          },
        },
      ),
      `dispatcher.${step}`,
    );
  }

  /**
   * Ends a held dispatch `rejected` with the gate's reason — only while it is still in status
   * `from`, as read before the gate was asked (once: an ended record stays, and a dispatch another
   * replica moved on meanwhile is left to it).
   */
  async #rejectHeld(
    dispatchId: string,
    verdict: { reason: string; code: ErrorCode },
    from: DispatchStatus,
  ): Promise<DispatchRecord | undefined> {
    const record = await this.#o.records.get(dispatchId);
    if (record === undefined) return undefined;
    const event: CallEvent = {
      type: 'denied',
      at: this.#o.now(),
      reason: verdict.reason,
      code: verdict.code,
    };
    // Judged from the status read before the gate was asked: the write is compare-and-set on it.
    return (await this.#move({ ...record, status: from }, event, { from })).record;
  }

  // --- Recovery: calls whose holder died ----------------------------------------------------

  /**
   * Finishes the dispatches a dead process left in flight without a task id (a gateway killed
   * mid-call, a replica gone): each is taken over once (compare-and-set on its holder), then
   * - never sent (the holder died before the first byte left): ends `failed`
   *   (`FLEETGATE_CALL_INTERRUPTED`) — nothing reached the agent;
   * - sent: looked up at the agent (ListTasks by the context it was sent with, matched by its
   *   message id). Found, it is followed to its end like any task (its deltas once); not found,
   *   or the agent cannot list tasks, it ends `failed` with `FLEETGATE_CALL_OUTCOME_UNKNOWN` so a
   *   person checks — never re-sent blindly, never `running` forever. An agent that cannot be
   *   reached is asked again at the next sweep, for `recoveryGiveUpMs` after the send.
   *
   * And the dispatches whose task a dead process followed (it knew the task id): each is taken
   * over once and its task followed here from its record, to its end.
   *
   * `alive(owner)` tells whether a holder still runs (its instance lease); it is asked once per
   * holder and sweep. Resolves how many dispatches this sweep took in hand.
   */
  async recoverOrphans(alive: (owner: string) => Promise<boolean>): Promise<number> {
    const living = new Map<string, boolean>([[this.#o.owner, true]]);
    const runs = async (owner: string): Promise<boolean> => {
      let known = living.get(owner);
      if (known === undefined) living.set(owner, (known = await alive(owner)));
      return known;
    };
    let taken = 0;
    for (const orphan of await this.#o.records.orphans(SWEEP_PAGE)) {
      const { record, send } = orphan;
      if (this.#inHand.has(record.id)) continue;
      if (send.owner !== this.#o.owner) {
        if (await runs(send.owner)) continue;
        if (!(await this.#o.records.takeOver(record.id, send.owner, this.#o.owner))) continue;
      }
      taken += 1;
      try {
        await this.#recoverOne(orphan);
      } catch (error) {
        if (this.#o.onError === undefined) throw error;
        this.#o.onError(error, 'dispatcher.recover');
      }
    }
    return taken + (await this.#adoptAdrift(runs, living));
  }

  /**
   * Takes over the followed dispatches of holders that no longer run, a page at a time: a page
   * names holders not asked yet (asked now; those that run are left out of the next page), or
   * only dead ones (taken). Resolves how many were taken.
   */
  async #adoptAdrift(
    runs: (owner: string) => Promise<boolean>,
    living: ReadonlyMap<string, boolean>,
  ): Promise<number> {
    const adopt = this.#o.tracker.adopt?.bind(this.#o.tracker);
    if (adopt === undefined) return 0;
    let taken = 0;
    for (;;) {
      const running = [...living].filter(([, alive]) => alive).map(([owner]) => owner);
      const page = await this.#o.records.adrift(SWEEP_PAGE, running);
      // Each full page either names a holder not asked before or is taken: else it is the last.
      let progressed = false;
      for (const { record, send } of page) {
        if (!living.has(send.owner)) progressed = true;
        if (await runs(send.owner)) continue;
        if (this.#inHand.has(record.id) || record.taskId === null) continue;
        if (!(await this.#o.records.takeOver(record.id, send.owner, this.#o.owner))) continue;
        progressed = true;
        try {
          await adopt({
            agent: record.agent,
            skill: record.skill,
            correlationId: record.correlationId,
            taskId: record.taskId,
          });
          taken += 1;
        } catch (error) {
          if (this.#o.onError === undefined) throw error;
          this.#o.onError(error, 'dispatcher.adopt');
        }
      }
      if (page.length < SWEEP_PAGE || !progressed) return taken;
    }
  }

  /** `lead` says how the call was left: by default, its holder stopped after sending it. */
  async #recoverOne(
    { record, send }: HeldDispatch,
    lead = `The gateway holding this call stopped after sending it to agent ${record.agent}`,
  ): Promise<void> {
    if (send.sentAt !== null && send.contextId === '') {
      // In flight when the store was upgraded: sent, with nothing recorded to look it up by.
      await this.#outcomeUnknown(
        record,
        send,
        `${lead}, and it was sent by an earlier version that kept no message id`,
      );
      return;
    }
    if (send.sentAt === null) {
      await this.#move(record, {
        type: 'recovered',
        at: this.#o.now(),
        found: {
          kind: 'never-sent',
          message: `The gateway holding this call stopped before sending it; nothing reached agent ${record.agent}.`,
        },
      });
      return;
    }
    const ended = this.#o.endedTask?.(send.contextId, send.messageId);
    if (ended !== undefined) {
      // Its end was journaled and its claim replayed (its deltas once): the record learns it.
      await this.#settle(record, ended, undefined);
      return;
    }
    let task: Task | undefined;
    try {
      task = await this.sentTask(record.agent, send);
    } catch (error) {
      if (!isUnsupported(error) && this.#o.now() - send.sentAt < this.#o.recoveryGiveUpMs) {
        throw error; // reported; asked again at the next sweep
      }
      await this.#outcomeUnknown(record, send, `${lead}, and the agent could not list its tasks`);
      return;
    }
    if (task === undefined) {
      await this.#outcomeUnknown(
        record,
        send,
        `${lead}, and the agent has no task for the message sent`,
      );
      return;
    }
    const state = normalizeTaskState(task.status?.state);
    const found = await this.#move(record, {
      type: 'recovered',
      at: this.#o.now(),
      found: { kind: 'found', taskId: task.id, state },
    });
    await this.#perform(record, found.effects, task, undefined);
    // The tracker settles the task's deltas once (its claim); the dispatch ends here too, in case
    // the dead holder had claimed the task already.
    if (isTerminalState(state)) await this.#settle(found.record, task, undefined);
  }

  /**
   * The agent's task for a call sent before its task id was known (a dead holder's call, or a
   * blocking send the agent has not answered yet): ListTasks by the context the call was sent
   * with, matched by its message id. Undefined when the agent has no such task; rejects when the
   * agent could not be asked ({@link isUnsupported} tells an agent that offers no ListTasks).
   */
  async sentTask(agent: string, send: DispatchSend): Promise<Task | undefined> {
    const { client } = await this.#o.fleet.agentClient(agent);
    const page = await client.listTasks({
      tenant: '',
      contextId: send.contextId,
      status: 0,
      pageSize: 100,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: true,
    });
    return page.tasks.find((t) => t.history.some((m) => m.messageId === send.messageId));
  }

  /** `what` says what happened to the call and what the agent said of it. */
  async #outcomeUnknown(record: DispatchRecord, send: DispatchSend, what: string): Promise<void> {
    const error = new FleetgateError(
      'FLEETGATE_CALL_OUTCOME_UNKNOWN',
      `${what}: whether it ran is unknown. Check at the agent before sending it again.`,
      { details: { agent: record.agent, skill: record.skill, contextId: send.contextId } },
    );
    await this.#move(record, {
      type: 'recovered',
      at: this.#o.now(),
      found: { kind: 'not-found', message: error.message },
    });
  }

  /** Cancels pending veto-window timers (the gateway's sweep releases them after a restart). */
  stop(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /**
   * A task settled (once, on whichever path won its claim): end its dispatch. Wire it to the task
   * terminal's `onSettled`, so a dispatch ends even when a follow-up call answering the task (not
   * the tracker) settled it.
   */
  async onTaskSettled(
    finished: Pick<SettledTask, 'agent' | 'taskId' | 'task' | 'fresh'> & { via?: string },
  ): Promise<void> {
    // A task that ended in the answer that first named it: no dispatch record holds its id (a
    // dispatch learns its task id from an earlier answer), and the call that got it ends its own.
    if (finished.fresh === true) return;
    const record = await this.#o.records.byTask(finished.agent, finished.taskId);
    if (record === undefined || ENDED_STATUSES.has(record.status)) return;
    await this.#settle(record, finished.task, finished.via);
  }

  /** The task of `record` ended (`task`), on `via`: the dispatch ends with it. */
  async #settle(record: DispatchRecord, task: Task, via: string | undefined): Promise<void> {
    const state = normalizeTaskState(task.status?.state);
    const { text } = readReply(task, undefined);
    await this.#move(record, {
      type: 'settled',
      at: this.#o.now(),
      taskId: task.id,
      state,
      ...defined({ text }),
      ...(via === 'timeout' ? { timedOut: true } : {}),
      ...(via === 'forgotten' ? { forgottenBy: record.agent } : {}),
    });
  }

  /**
   * A followed task changed state (wire it to the tracker's `onStateChanged`): a task waiting on
   * its caller makes the dispatch `awaiting-input`, a task working again makes it `running`.
   */
  async onTaskState(change: {
    agent: string;
    taskId: string;
    state: TaskStateName;
    /** The task as fetched: its status message is the question an interrupted task asks. */
    task?: Task;
  }): Promise<void> {
    const record = await this.#o.records.byTask(change.agent, change.taskId);
    if (record === undefined || ENDED_STATUSES.has(record.status)) return;
    const { changed, record: updated } = await this.#move(record, {
      type: 'task-state',
      at: this.#o.now(),
      state: change.state,
    });
    // Another path (the reply, a replica's tracker) moved it first: it announced the change.
    if (!changed || updated === undefined) return;
    if (change.state === 'input-required') {
      // A question seen by the tracker (a poll, a push, a resumed stream) lands in the inbox
      // like one seen in the reply: never a silent wait.
      const task = change.task;
      await this.#checkpoint(
        updated,
        change.taskId,
        task?.contextId,
        questionOf(task) ?? 'The agent asks for input (it sent no question text).',
        updated.requestedBy,
      );
    }
  }

  /**
   * Moves a dispatch by one event of its call ({@link advance}, pure): writes the move with its
   * announcement in one unit, compare-and-set on `from` when given; a dispatch that ended is
   * never changed again (another path or replica ending it first announced it). Resolves the
   * record as it stands, whether this write changed its status, and the effects left to run.
   */
  async #move(
    record: DispatchRecord,
    event: CallEvent,
    more: {
      from?: DispatchStatus;
      extra?: DispatchEventExtra;
      decided?: boolean;
      /** The move keeps the status and is announced all the same (see the store's `update`). */
      keepsStatus?: boolean;
    } = {},
  ): Promise<Moved> {
    // A task that ended canceled may have been canceled at someone's request after `record` was
    // read (the send that waits for the answer read it before): the request is read with it.
    if ((event.type === 'answered' || event.type === 'settled') && event.state === 'canceled') {
      record = (await this.#o.records.get(record.id)) ?? record;
    }
    const next = advance({ ...record, decided: more.decided ?? true, sent: null }, event);
    if (!next.moved) return { record, changed: false, effects: [] };
    const { call } = next;
    let announce: DispatchAnnouncement | undefined;
    for (const effect of next.effects) {
      if (effect.type !== 'announce') continue;
      const extra: DispatchEventExtra = { ...more.extra };
      if (effect.reason !== undefined) extra.reason = effect.reason;
      if (effect.state !== undefined) extra.state = effect.state;
      announce = { topic: effect.topic, ...(Object.keys(extra).length > 0 ? { extra } : {}) };
    }
    const { changed, record: updated } = await this.#o.records.update(record.id, {
      status: call.status,
      at: event.at,
      ...(call.taskId !== null && call.taskId !== record.taskId ? { taskId: call.taskId } : {}),
      ...(call.result !== null && call.result !== record.result ? { result: call.result } : {}),
      ...defined({ from: more.from, announce, keepsStatus: more.keepsStatus }),
    });
    return {
      record: updated ?? record,
      changed,
      effects: next.effects.filter((effect) => effect.type !== 'announce'),
    };
  }

  /** Runs the effects of a move (those named in `only`, when given). */
  async #perform(
    record: DispatchRecord,
    effects: readonly CallEffect[],
    task: Task | undefined,
    requestedBy: string | undefined,
    only?: readonly CallEffect['type'][],
  ): Promise<void> {
    for (const effect of effects) {
      if (only !== undefined && !only.includes(effect.type)) continue;
      switch (effect.type) {
        case 'follow':
          await this.#o.tracker.follow({
            agent: record.agent,
            skill: record.skill,
            correlationId: record.correlationId,
            taskId: effect.taskId,
            state: effect.state,
            ...(effect.resubscribe === true && task !== undefined
              ? { resubscribe: true, task }
              : {}),
          });
          break;
        case 'checkpoint':
          await this.#checkpoint(
            record,
            effect.taskId,
            task?.contextId,
            effect.question,
            requestedBy,
          );
          break;
        case 'release-at':
          this.#releaseAt(record.id, effect.at);
          break;
        case 'announce':
        case 'send':
          // Written with the move; a send is the caller's next step.
          break;
      }
    }
  }
}

/**
 * How a call goes out: as asked, or — asked nothing — blocking, streamed where the agent streams,
 * so the task's id is kept before the gateway waits for the end (see `task-named`).
 */
function callMode(mode: CallMode | undefined): { mode: CallMode; streamWhenAble?: true } {
  return mode === undefined ? { mode: 'blocking', streamWhenAble: true } : { mode };
}
