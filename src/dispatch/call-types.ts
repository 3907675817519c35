import type { Message, Part, StreamResponse, Task } from '@a2a-js/sdk';

import type { TaskStateName } from '../protocol/index.js';
import type { DataPart } from './task-accumulator.js';

/** What to send: a text, or a text and/or a JSON value, and/or SDK parts. */
export type CallInput = string | { text?: string; data?: unknown; parts?: readonly Part[] };

/**
 * How to send:
 * - `blocking` (default): `SendMessage`, the agent answers when the task is terminal or
 *   interrupted;
 * - `streaming`: `SendStreamingMessage`; the events are folded into one task, the chain still sees
 *   one terminal outcome (falls back to blocking when the card does not declare streaming);
 * - `return-immediately`: `SendMessage` with `returnImmediately`; the task usually comes back
 *   non-terminal and is left to the task tracker, which settles it through the task terminal.
 */
export type CallMode = 'blocking' | 'streaming' | 'return-immediately';

/** Options of {@link FleetClient.call}. */
export interface CallOptions {
  mode?: CallMode;
  /**
   * A blocking call goes as `SendStreamingMessage` where the agent's card declares streaming: the
   * same answer at the end, and the task's id with the stream's first event (`onTaskNamed`), so a
   * caller that dies before the end can follow the task up by its id. Its events are not relayed
   * (`onEvent` is for streaming calls). Not to an agent configured with `preferStreaming: false`.
   */
  streamWhenAble?: boolean;
  /** Ties every event of this call together (default: a fresh UUID). */
  correlationId?: string;
  /** The caller's own `SendMessageRequest.metadata`; stamps win over these keys. */
  metadata?: Record<string, unknown>;
  /** `Message.metadata` of the user message. */
  messageMetadata?: Record<string, unknown>;
  /** Extension URIs the caller activates itself; merged into `A2A-Extensions`, never replaced. */
  extensions?: readonly string[];
  /** Extra headers for this call (override the agent's configured headers). */
  serviceParameters?: Readonly<Record<string, string>>;
  signal?: AbortSignal;
  /**
   * Milliseconds before the call rejects with `FLEETGATE_CALL_TIMEOUT`. The request is not
   * aborted: its task is settled when it ends (its events published once), or followed when still
   * running (canceled at the agent when nothing follows tasks) — never silently lost.
   */
  timeoutMs?: number;
  /** Continue an existing conversation / task (e.g. after `input-required`). */
  contextId?: string;
  taskId?: string;
  /** The user message's id (default: a fresh UUID): an A2A client's own, forwarded as is. */
  messageId?: string;
  /** `Message.referenceTaskIds` of the user message. */
  referenceTaskIds?: readonly string[];
  /** `Message.extensions` of the user message. */
  messageExtensions?: readonly string[];
  /** Every stream event as it arrives (streaming mode). */
  onEvent?: (event: StreamResponse) => void;
  /**
   * The agent named the call's task before its answer ended (streaming mode, a new task): told
   * once, with the first event that carries the task's id.
   */
  onTaskNamed?: (taskId: string) => void;
}

/** Where the time of one call went, in milliseconds. */
export interface CallTiming {
  /** `Date.now()` at the start of the call. */
  startedAt: number;
  beforeMs: number;
  transportMs: number;
  /** 0 when the task was handed to the tracker. */
  afterMs: number;
  totalMs: number;
}

/** What {@link FleetClient.call} returns. */
export interface CallResult {
  agent: string;
  skill: string;
  correlationId: string;
  /** True when the task completed (or the agent answered with a message). */
  ok: boolean;
  /** The task's state, or `message` for a message reply. */
  state: TaskStateName | 'message';
  /** False when the task was left running; its `after` hooks run when the terminal settles it. */
  terminal: boolean;
  /**
   * True when a stream broke before the task ended: the task is left to the tracker, which
   * resumes it with `SubscribeToTask` (and polls meanwhile).
   */
  streamDropped?: boolean;
  task?: Task;
  message?: Message;
  /** Text parts of the artifacts (or of the message), joined by newlines; else the status text. */
  text: string;
  /** Data parts, with the MIME type each carries. */
  data: DataPart[];
  /** The extensions active for this agent (card ∩ registry), as sent in `A2A-Extensions`. */
  activated: string[];
  /** The extensions the agent echoed back, when it did (best effort). */
  echoedExtensions?: string[];
  /** The stamps that went out in the request metadata. */
  stamps: Record<string, string>;
  transport: string;
  protocolVersion: string;
  timing: CallTiming;
}

/** A task still running, handed to whatever follows tasks until they end (the task tracker). */
export interface FollowRequest {
  agent: string;
  skill: string;
  correlationId: string;
  taskId: string;
  /** The state the task was last seen in. */
  state: TaskStateName;
  /** The task's stream broke: resume it with `SubscribeToTask` when the agent streams. */
  resubscribe?: boolean;
  /** The task as known so far (artifacts received before a stream broke). */
  task?: Task;
}

/** Follows tasks until they end (the task tracker). */
export interface TaskFollower {
  follow(request: FollowRequest): Promise<void>;
  /**
   * Follows a task recorded by another process (one that died), from its record; a task it had
   * not begun to follow (its stream named it, the end had not come) is followed from `call`.
   * False when it is followed here already or has ended.
   */
  adopt?(call: Omit<FollowRequest, 'state'>): Promise<boolean>;
}
