/**
 * What a gateway is to those who use it — the public `Gateway`, and the `GatewayPorts` the
 * composition root hands the service layer — apart from how it is built (`gateway.ts`), so the
 * HTTP API, the A2A proxy and the fleet view read the interface without importing the root that
 * imports them.
 */
import type { EventBus, OutboxLog } from '../bus/index.js';
import type { CardSource, SecretResolver } from '../fleet/index.js';
import type { AgentClient } from '../dispatch/index.js';
import type {
  CallInput,
  CallOptions,
  CallResult,
  DispatchHandle,
  DispatchQuery,
  DispatchRecord,
  DispatchRequest,
  DispatchRecordStore,
  GateCall,
  GateVerdict,
  PolicyGate,
} from '../dispatch/index.js';
import type { CostSummaries } from '../alerts/index.js';
import type { HeldInput } from '../protocol/index.js';
import type {
  PushRequest,
  PushResponse,
  TaskRecordStore,
  TaskTrackerOptions,
} from '../tasks/index.js';
import type { WorldMaterialiser } from '../world/index.js';
import type { GatewayApprovals } from './approvals.js';
import type { FleetgateConfig } from './config.js';
import type { FleetRuntime } from './fleet-runtime.js';
import type { GatewayStore } from './migrations.js';

/** A follow-up message to the running task of a dispatch ({@link Gateway.decideFollowUp}). */
export interface FollowUpRequest {
  dispatchId: string;
  /** The agent's task the dispatch is on. */
  taskId: string;
  contextId?: string;
  /** What is sent once let go: the message (v1.0 wire JSON), the request's metadata, extensions. */
  input: HeldInput;
  /** Who sent it: they can never approve it themselves. */
  requestedBy?: string;
}

/** A running gateway. */
export interface Gateway {
  readonly config: FleetgateConfig;
  /**
   * Dispatches a skill call through the policy gate, with a durable record: the handle has the
   * dispatch's id at once, then its decision, updates, end and a way to cancel it.
   *
   * @example
   * ```ts
   * const call = gw.dispatch({ agent: 'ci', skill: 'rerun_checks', text: 'PR 42' });
   * for await (const update of call.events()) console.log(update.type);
   * const { status, result } = await call.result();
   * ```
   */
  dispatch(request: DispatchRequest): DispatchHandle;
  /**
   * Cancels a dispatch by its id, wherever it was dispatched from (a handle in another process,
   * the HTTP API, the CLI, the A2A proxy): a call held for approval is rejected (its approval, as
   * `by`, default `caller`); a task running at the agent is canceled there (A2A CancelTask) and
   * the call ends `canceled`, or as the agent ends the task. Resolves the record once the call
   * ended, or as it stands after 10 s when the agent is still winding the task down; an ended call
   * is answered as it is.
   *
   * A call sent blocking learns its task id when the agent answers; until then its task is found
   * at the agent by the message and context ids it was sent with (ListTasks).
   *
   * @throws FleetgateError `FLEETGATE_DISPATCH_NOT_FOUND`; `FLEETGATE_DISPATCH_NOT_CANCELABLE` while
   *   the call is being sent (the agent has not opened its task yet), or when its task id is not
   *   known and the agent offers no ListTasks.
   */
  cancelDispatch(
    id: string,
    options?: {
      reason?: string;
      by?: string;
      /** Sent with the agent's CancelTask (an A2A client's, through the proxy). */
      metadata?: Record<string, unknown>;
    },
  ): Promise<DispatchRecord>;
  /** The durable record of a dispatch. */
  dispatchRecord(id: string): Promise<DispatchRecord | undefined>;
  /** Dispatch records matching the filters, newest first (see `DispatchQuery`). */
  dispatches(query: DispatchQuery): Promise<DispatchRecord[]>;
  /**
   * Decides a follow-up message to the running task of a dispatch as a call of its skill (the
   * same radius rules, standing approvals and denials): `allow` — the caller sends it on the task
   * (`call` with its `taskId`); `hold` — it waits in the approvals inbox as a `follow-up` approval
   * holding `input`, and is sent on the task once approved (or its veto window ended); `deny` —
   * nothing is sent.
   *
   * @throws FleetgateError `FLEETGATE_DISPATCH_NOT_FOUND`; `FLEETGATE_USAGE` when the dispatch is
   *   not running on `taskId`.
   */
  decideFollowUp(request: FollowUpRequest): Promise<GateVerdict>;
  /** Calls a skill directly (no gate, no dispatch record): the library path. */
  call(agent: string, skill: string, input: CallInput, options?: CallOptions): Promise<CallResult>;
  /** The fleet: card states, effective declarations, refresh and acknowledgement. */
  readonly agents: FleetRuntime['broker'];
  /** The materialised world state (read side). */
  readonly world: Pick<WorldMaterialiser, 'getWorld' | 'getDomain' | 'history' | 'replay'>;
  /** Subscribe to bus events (NATS-syntax patterns). */
  readonly events: Pick<EventBus, 'subscribe' | 'publish'>;
  /**
   * The durable log of the events committed through the outbox (kept for `retention.outbox`), by
   * outbox position: on a bus that keeps no log (in-memory) the live-event feed resumes from it;
   * its deliveries carry the position (`Delivery.outboxSeq`).
   */
  readonly eventLog: OutboxLog;
  /** The approvals inbox: list, approve, reject, snooze, standing approvals, `explain`. */
  readonly approvals: GatewayApprovals;
  /** Cost and success summaries per agent and skill. */
  readonly costs: Pick<CostSummaries, 'summary' | 'summaries'>;
  /**
   * The `POST /callbacks/a2a/:taskId` handler, free of any HTTP framework: give it the request
   * headers and the **unread** body stream; it authenticates first and reads within
   * `limits.pushBodyBytes` / `limits.pushBodyTimeout`. Close the connection when the answer says
   * `discardBody`. The contract is spelled out in `src/tasks/push-receiver.ts`.
   */
  readonly pushReceiver: (request: PushRequest) => Promise<PushResponse>;
  /** Publishes everything committed so far and waits for the bus to deliver it. */
  settle(): Promise<void>;
  /**
   * Graceful shutdown: stops accepting calls, waits for the ones in flight (their claims commit),
   * flushes the outbox, then closes what the gateway opened. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * What the service layer reads of a gateway beside its public interface, handed over by the
 * composition root ({@link assembleGateway}) and never reachable from a `Gateway`: the store for
 * the service's read models (a call's story, search, the proxy's tasks, outbox lag), the agent
 * clients (each request with its agent's credential), and two readings for `/readyz` and metrics.
 */
export interface GatewayPorts {
  readonly store: GatewayStore;
  /** The agent's client: its card, its transport, its configured headers on every request. */
  agentClient(agent: string): Promise<AgentClient>;
  /** Whether this replica holds the card-refresh lease (it fetches the cards). */
  leaseHeld(): boolean;
  /** Tasks the task tracker follows in this process. */
  trackedTasks(): number;
}

/** The durable records a gateway keeps on its store: tasks (the terminal claim) and dispatches. */
export interface GatewayRecords {
  tasks: TaskRecordStore;
  dispatches: DispatchRecordStore;
}

/** What tests and embedders may inject instead of what the config names. */
export interface GatewayDeps {
  /** An open store; the gateway migrates nothing else and does not close it. */
  store?: GatewayStore;
  /** A bus; the gateway does not close it. */
  bus?: EventBus;
  /** Where cards come from (default: HTTP). */
  cardSource?: CardSource;
  /** Resolves the environment variables named by `auth` in the agents (default: none). */
  secrets?: SecretResolver;
  /** The policy gate of every dispatch (default: the HITL gate built from `config.policy`). */
  gate?: PolicyGate;
  /** The gateway's public base URL, for push notifications from agents. */
  pushBaseUrl?: string;
  /** `fetch` used for agent calls (default: `node:http`, see `createFleetClient`'s `fetch`). */
  fetch?: typeof fetch;
  /** Initial world-state values by domain. */
  seeds?: Readonly<Record<string, unknown>>;
  /** Clock in epoch milliseconds. */
  now?: () => number;
  /**
   * How dispatches are sent (default `blocking`); with `return-immediately` every task that did
   * not end in the reply is followed by the tracker from the start.
   */
  dispatchMode?: 'blocking' | 'streaming' | 'return-immediately';
  /** Poll timing and limits of the task tracker. */
  tracking?: Pick<TaskTrackerOptions, 'polling' | 'maxTrackingTimeMs'>;
  /**
   * The outbox relay: its idle poll interval (default 250 ms), or `false` to leave it stopped —
   * committed events then stay in the outbox until a gateway with a relay runs (crash tests).
   */
  relay?: false | { pollIntervalMs?: number };
  /**
   * Wraps the task and dispatch records the gateway built on its store, before anything uses
   * them: a fault-injection seam (a claim or an update failing as a lost database connection
   * would), so such suites still run the whole gateway. Default: the records as built.
   */
  records?: (built: GatewayRecords) => GatewayRecords;
  /** Receives failures of background work (default: published on `system.error`). */
  onError?: (error: unknown, where: string) => void;
  /** Told every decision of the policy gate (metrics). */
  onGateDecision?: (request: GateCall, decision: GateVerdict) => void;
  /**
   * Readers of the gateway's events started with its own, before the outbox relay, the first
   * card refresh and the recovery of calls publish anything (metrics count the events of a start
   * too); stopped with them.
   */
  consumers?: readonly GatewayConsumer[];
}

/** A reader of a gateway's events; see {@link GatewayDeps.consumers}. */
export interface GatewayConsumer {
  /** Subscribes to `events`; `agents` answers the gate's view of the fleet (radii). */
  start(events: EventBus, agents: FleetRuntime['broker']): Promise<void>;
  stop(): Promise<void>;
}
