/** The options and the report of `checkAgent`. */
import type {
  BlastRadius,
  CostPayload,
  Diagnostic,
  HitlMode,
  RejectedDeltaEntry,
  TaskStateName,
  WorldStateDeltaEntry,
} from '../protocol/index.js';
import type { AgentEndpoint } from './check-wire.js';

/** Options of {@link checkAgent}. */
export interface CheckAgentOptions {
  /** The skill to call. */
  skill: string;
  /** The text of the user message (default `"fleetgate check-agent"`). */
  input?: string;
  /** Milliseconds per request, and for following a task to its end (default 10 000). */
  timeoutMs?: number;
  /** Headers sent with every request, e.g. `Authorization`. */
  headers?: Readonly<Record<string, string>>;
  /** Also call with streaming (default: when the card declares `capabilities.streaming`). */
  streaming?: boolean;
  fetch?: typeof fetch;
}

/** One call the check made, and what came back. */
export interface AgentCheckCall {
  mode: 'blocking' | 'streaming';
  binding: AgentEndpoint['binding'];
  protocolVersion: AgentEndpoint['version'];
  endpoint: string;
  /** The extensions asked for in `A2A-Extensions` (`X-A2A-Extensions` on v0.3). */
  requestedExtensions: string[];
  /** The extensions the agent echoed back; `null` when it sent no header. */
  echoedExtensions: string[] | null;
  /** The stamps sent in the request metadata. */
  stamps: Record<string, string>;
  /** How the task ended, `message` for a message reply, `error` when the call failed. */
  state: TaskStateName | 'message' | 'error';
  taskId?: string;
  /**
   * The text of the task's last status message, when it has one: for a task that ended `failed`,
   * `rejected` or `canceled`, usually why.
   */
  statusText?: string;
  /** The kinds of the stream events, in order (streaming only). */
  events?: string[];
  /** The entries a gateway would publish on `world.state.delta`. */
  deltas: WorldStateDeltaEntry[];
  /** The entries a gateway would list on `world.state.delta.rejected`. */
  rejected: RejectedDeltaEntry[];
  cost?: CostPayload;
}

/** The outcome of {@link checkAgent}. */
export interface AgentCheckReport {
  url: string;
  cardUrl: string;
  skill: string;
  /** False when any diagnostic is an error. */
  ok: boolean;
  /** What the card declares for the skill. */
  declarations: {
    extensions: string[];
    radius?: BlastRadius;
    hitlMode?: HitlMode;
    vetoTtlMs?: number;
    domains?: string[];
  };
  calls: AgentCheckCall[];
  /** Every problem, with where: `card.<path>`, `blocking.<path>`, `streaming.<path>`. */
  diagnostics: Diagnostic[];
  summary: { errors: number; warnings: number };
}
