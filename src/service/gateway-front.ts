/**
 * The `Gateway` a caller holds, over the parts the composition root wired (`gateway-wiring.ts`):
 * calls accepted until `close()` starts, dispatch handles and their watcher, follow-ups decided by
 * the gate, and the shutdown in reverse order of the wiring.
 */
import type { Task } from '@a2a-js/sdk';
import type { Subscription } from '../bus/index.js';
import { createOutboxLog, InMemoryEventBus } from '../bus/index.js';
import { ENDED_STATUSES } from '../calls/index.js';
import type { DispatchRecord, DispatchWatcher, GateVerdict } from '../dispatch/index.js';
import { CallHandle, createDispatchWatcher, isUnsupported } from '../dispatch/index.js';
import { FleetgateError } from '../protocol/index.js';
import { newRecordId } from '../protocol/ids/index.js';
import { defined } from '../protocol/fields/index.js';
import { checkCallTarget } from './fleet-view.js';
import type { FollowUpRequest, Gateway } from './gateway-types.js';
import type { CallPath, Ground, Records, Upkeep } from './gateway-wiring.js';
import type { Consumers, OrphanRecovery } from './gateway-start.js';

/** Everything the composition root built, and the signal `close()` aborts first. */
export interface Assembly {
  readonly ground: Ground;
  readonly records: Records;
  readonly calls: CallPath;
  readonly upkeep: Upkeep;
  readonly consumers: Consumers;
  readonly orphans: OrphanRecovery;
  readonly closing: AbortController;
}

/** Work the gateway accepted and has not finished; refuses new work once closing. */
class Acceptor {
  readonly inFlight = new Set<Promise<unknown>>();
  closing: Promise<void> | undefined;

  accept<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing !== undefined) {
      return Promise.reject(
        new FleetgateError('FLEETGATE_GATEWAY_CLOSED', 'The gateway is shutting down.'),
      );
    }
    const promise = work();
    this.inFlight.add(promise);
    const forget = (): void => void this.inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }
}

/** The gateway over an assembly. */
export function buildGateway(assembly: Assembly): Gateway {
  const { ground, records, calls, upkeep, consumers } = assembly;
  const { config, bus, runtime } = ground;
  const { dispatchRecords } = records;
  const { approvals } = upkeep;
  const work = new Acceptor();
  const accept = <T>(fn: () => Promise<T>): Promise<T> => work.accept(fn);
  const watcher = dispatchWatcher(assembly);
  const handleServices = {
    watcher,
    read: (id: string) => dispatchRecords.get(id),
    closing: assembly.closing.signal,
    cancel: (record: DispatchRecord, decision: GateVerdict | undefined, reason?: string) =>
      accept(() =>
        cancelDispatch(assembly, watcher, record, {
          ...defined({ reason }),
          ...(decision?.action === 'hold' ? { approvalId: decision.approvalId } : {}),
        }),
      ),
  };
  return {
    config,
    dispatch(request) {
      const id = request.id ?? newRecordId();
      const handle = new CallHandle(id, handleServices);
      handle.begin(
        accept(async () => {
          checkCallTarget(runtime.broker, request.agent, request.skill);
          return calls.dispatcher.dispatch({ ...request, id }, handle);
        }),
      );
      return handle;
    },
    cancelDispatch: (id, options = {}) =>
      accept(async () => {
        const record = await dispatchRecords.get(id);
        if (record === undefined) {
          throw new FleetgateError('FLEETGATE_DISPATCH_NOT_FOUND', `No dispatch ${id} to cancel.`, {
            details: { id },
          });
        }
        return cancelDispatch(assembly, watcher, record, options);
      }),
    dispatchRecord: (id) => dispatchRecords.get(id),
    dispatches: (query) => dispatchRecords.list(query),
    decideFollowUp: (request) => accept(() => decideFollowUp(assembly, request)),
    call: (agent, skill, callInput, options) =>
      accept(() => calls.fleet.call(agent, skill, callInput, options)),
    agents: runtime.broker,
    approvals: {
      ...approvals.api,
      approve: (id, by, reason) => accept(() => approvals.api.approve(id, by, reason)),
      reject: (id, by, reason) => accept(() => approvals.api.reject(id, by, reason)),
      answer: (id, by, text, reason) => accept(() => approvals.api.answer(id, by, text, reason)),
      sweep: () => accept(() => approvals.api.sweep()),
    },
    world: consumers.world,
    events: bus,
    eventLog: createOutboxLog(ground.store.db),
    costs: consumers.costs,
    pushReceiver: calls.tracker.pushReceiver(),
    settle: () => settle(ground),
    close() {
      work.closing ??= closeGateway(assembly, watcher, work.inFlight);
      return work.closing;
    },
  };
}

/** Dispatch handles wait on their dispatch's own events, heard once the first handle waits. */
function dispatchWatcher(assembly: Assembly): DispatchWatcher {
  const { bus, reportError } = assembly.ground;
  const { instanceId } = assembly.calls;
  return createDispatchWatcher(
    (id) => assembly.records.dispatchRecords.get(id),
    (listener) => {
      let subscription: Subscription | undefined;
      let stopped = false;
      const ready = Promise.resolve()
        .then(() =>
          bus.subscribe(
            'skill.dispatch.>',
            (event) => {
              const id = (event.payload as { id?: unknown } | null)?.id;
              if (typeof id === 'string') listener(id);
            },
            // Never waits; a dropped event only delays a wait to its next safety read.
            {
              name: `dispatch_handles_${instanceId.replace(/[^\w-]/gu, '_')}`.slice(0, 64),
              overflow: 'drop-oldest',
            },
          ),
        )
        .then(
          (taken) => {
            subscription = taken;
            if (stopped) void taken.unsubscribe();
          },
          (error: unknown) => reportError(error, 'dispatch-handles'),
        );
      return {
        ready,
        stop() {
          stopped = true;
          void subscription?.unsubscribe();
        },
      };
    },
  );
}

/** What a cancel knows beside the dispatch: why, who, and the approval a held call waits on. */
interface CancelOptions {
  reason?: string;
  by?: string;
  metadata?: Record<string, unknown>;
  /** The approval the call is held on, when the canceller saw the gate's decision. */
  approvalId?: string;
}

/** The approvals a call waits on before anything is sent: its approval or its veto window. */
const HELD_KINDS = ['dispatch', 'veto'] as const;

/** Cancels a dispatch (see `DispatchHandle.cancel` and `Gateway.cancelDispatch`). */
async function cancelDispatch(
  assembly: Assembly,
  watcher: DispatchWatcher,
  record: DispatchRecord,
  options: CancelOptions,
): Promise<DispatchRecord> {
  const { fleet, tracker, hitl } = assembly.calls;
  const why = options.reason ?? 'canceled by its caller';
  if (record.status === 'awaiting-approval') {
    const approvalId =
      options.approvalId ?? (await hitl.inbox.byDispatch(record.id, HELD_KINDS))?.id;
    if (approvalId === undefined) {
      throw new FleetgateError(
        'FLEETGATE_DISPATCH_NOT_CANCELABLE',
        `Dispatch ${record.id} is awaiting approval but no approval of it is open; it was decided a moment ago: read it again.`,
        { details: { id: record.id, status: record.status } },
      );
    }
    await assembly.upkeep.approvals.api.reject(approvalId, options.by ?? 'caller', why);
    return (await assembly.records.dispatchRecords.get(record.id)) ?? record;
  }
  if (record.status === 'running' || record.status === 'awaiting-input') {
    const { client } = await fleet.agentClient(record.agent);
    const { taskId } = record;
    // Sent blocking, the agent not done: its task found at the agent first (a call that cannot
    // be canceled yet is refused before anything is recorded).
    const id = taskId ?? (await sentTaskId(assembly, record));
    // Who asked and why, on record before the cancel leaves: kept as the call's error when its
    // task ends canceled, announced on `skill.dispatch.cancel-requested`.
    await assembly.calls.dispatcher.requestCancel(
      record,
      defined({ by: options.by, reason: options.reason }),
    );
    if (taskId === null) {
      // The send still waiting gets the task's end (and settles the call) once the agent has
      // canceled it.
      await client.cancelTask({ tenant: '', id, metadata: options.metadata });
    } else {
      const task = await client.cancelTask({ tenant: '', id, metadata: options.metadata });
      // The agent's answer is a sighting of the task: an end settles the dispatch at once (once,
      // whichever path sees it first); a task still winding down is polled now.
      if (!(await tracker.observe(record.agent, task, 'cancel'))) {
        tracker.pollNow(record.agent, taskId);
      }
    }
    return (
      (await watcher.until(record.id, (r) => ENDED_STATUSES.has(r.status), {
        timeoutMs: 10_000,
      })) ?? record
    );
  }
  return record;
}

/**
 * The agent's task id of a call sent without it (a blocking send the agent has not answered yet:
 * the id comes with the answer), asked of the agent by what the call was sent with.
 */
async function sentTaskId(assembly: Assembly, record: DispatchRecord): Promise<string> {
  const notYet = (why: string): FleetgateError =>
    new FleetgateError(
      'FLEETGATE_DISPATCH_NOT_CANCELABLE',
      `Dispatch ${record.id} cannot be canceled yet: ${why}.`,
      { details: { id: record.id, status: record.status } },
    );
  const held = await assembly.records.dispatchRecords.held(record.id);
  if (held === undefined || held.send.sentAt === null || held.send.messageId === '') {
    throw notYet(`it is being sent to ${record.agent}; retry shortly`);
  }
  let task: Task | undefined;
  try {
    task = await assembly.calls.dispatcher.sentTask(record.agent, held.send);
  } catch (error) {
    if (!isUnsupported(error)) throw error;
    throw notYet(
      `${record.agent} lists no tasks (ListTasks), so its task id is known only when it answers`,
    );
  }
  if (task === undefined)
    throw notYet(`${record.agent} has not opened its task yet; retry shortly`);
  return task.id;
}

/** Decides a follow-up to a running dispatch's task (see `Gateway.decideFollowUp`). */
async function decideFollowUp(assembly: Assembly, request: FollowUpRequest): Promise<GateVerdict> {
  const record = await assembly.records.dispatchRecords.get(request.dispatchId);
  if (record === undefined) {
    throw new FleetgateError(
      'FLEETGATE_DISPATCH_NOT_FOUND',
      `No dispatch ${request.dispatchId} to follow up.`,
      { details: { id: request.dispatchId } },
    );
  }
  if (record.status !== 'running' || record.taskId !== request.taskId) {
    throw new FleetgateError(
      'FLEETGATE_USAGE',
      `Dispatch ${record.id} is ${record.status}${record.taskId === null ? '' : ` on task ${record.taskId}`}: a follow-up goes to the running task it is on.`,
      { details: { id: record.id, status: record.status, taskId: request.taskId } },
    );
  }
  return assembly.calls.gate.decide({
    dispatchId: record.id,
    agent: record.agent,
    skill: record.skill,
    correlationId: record.correlationId,
    input: request.input,
    ...defined({ requestedBy: request.requestedBy }),
    followUp: {
      taskId: request.taskId,
      ...defined({ contextId: request.contextId }),
    },
  });
}

/** Publishes everything committed so far and waits for the bus to deliver it. */
async function settle(ground: Ground): Promise<void> {
  // Delivering an event can commit more (the materialiser's `world.state.updated` rows): relay
  // and deliver until a round finds nothing left to send.
  for (let round = 0; round < 16; round += 1) {
    const sent = await ground.relay.drain();
    if (ground.bus instanceof InMemoryEventBus) await ground.bus.idle();
    if (sent === 0 && round > 0) return;
  }
}

/** The shutdown: the wiring in reverse, after the calls in flight (see `Gateway.close`). */
async function closeGateway(
  assembly: Assembly,
  watcher: DispatchWatcher,
  inFlight: ReadonlySet<Promise<unknown>>,
): Promise<void> {
  const { ground, calls, upkeep } = assembly;
  const { deps, relay, bus, reportError } = ground;
  assembly.closing.abort();
  watcher.close();
  ground.runtime.broker.stop();
  await upkeep.retention.stop();
  calls.dispatcher.stop();
  assembly.orphans.stop();
  await assembly.orphans.running;
  await upkeep.approvals.stop();
  await Promise.allSettled([...inFlight]);
  // Nothing of this process is in flight now: its instance lease goes.
  await calls.instance.stop();
  calls.tracker.stop();
  // Claims waiting for the store get one last try; tasks with a record recover next start.
  await calls.terminal.stop();
  if (deps.relay !== false) {
    await relay.drain().catch((error: unknown) => reportError(error, 'outbox-relay'));
  }
  await relay.stop();
  if (bus instanceof InMemoryEventBus) await bus.idle();
  await assembly.consumers.stop();
  await ground.runtime.close();
  await ground.lease.stop();
  if (deps.bus === undefined) await bus.close();
  if (deps.store === undefined) await ground.store.close();
}
