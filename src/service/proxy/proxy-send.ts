/**
 * A new task's call: recorded (or found again by its message id) with its skill resolved, then
 * sent through the gateway's dispatch path, blocking or streaming, the agent's events relayed to
 * the task's subscribers.
 */
import { randomUUID } from 'node:crypto';
import type { AgentCard, Message, SendMessageRequest } from '@a2a-js/sdk';
import { Message as MessageCodec } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import type { CallResult, DispatchRecord } from '../../dispatch/index.js';
import { FLEETGATE_GATEWAY_V1_URI, LIMITS } from '../../protocol/index.js';
import { tooDeepAt } from '../../protocol/values/index.js';
import { newRecordId } from '../../protocol/ids/index.js';
import type { ProxyCore } from './proxy-core.js';
import type { ProxyMetadata } from './proxy-task-meta.js';
import { answered, callerOf, fleetgateMeta, protocolOf } from './proxy-task-meta.js';
import type { ResolvedSkill } from './skill.js';
import { resolveSkill } from './skill.js';
import type { ProxyTask } from './task-store.js';
import { ended } from './task-store.js';
import { clientEvent, submittedTask } from './task-view.js';
import { defined } from '../../protocol/fields/index.js';

/** A recorded call: its task, whether this message made it, the message to send, its skill. */
export interface OpenedCall {
  task: ProxyTask;
  created: boolean;
  message: Record<string, unknown>;
  skill: ResolvedSkill;
}

/** How a dispatch went: its record, whether the gate held it, the agent's answer when it has one. */
export interface SentCall {
  record: DispatchRecord;
  held: boolean;
  result: CallResult | undefined;
}

/** What the gateway's agent knows of, and the agent's skills for skill resolution. */
function skillsOf(agent: string, card: AgentCard): string[] {
  void agent;
  return card.skills.map((s) => s.id);
}

/** Records the call (or finds the one the same message id made) and resolves its skill. */
export async function open(
  core: ProxyCore,
  agent: string,
  params: SendMessageRequest,
  context: ServerCallContext,
): Promise<OpenedCall> {
  const { gateway, store } = core;
  const message = params.message;
  if (message === undefined || message.messageId === '') {
    throw new RequestMalformedError('message.messageId is required');
  }
  const card = await core.cardOf(agent);
  const skill = resolveSkill({
    agent,
    skills: skillsOf(agent, card),
    messageMetadata: message.metadata,
    requestMetadata: params.metadata,
    radius: (s) => gateway.agents.effectiveRadius(agent, s).radius,
  });
  const id = newRecordId();
  const contextId = message.contextId === '' ? randomUUID() : message.contextId;
  const references = await agentReferences(core, agent, message);
  const forwarded: Message = { ...message, taskId: '', contextId, referenceTaskIds: references };
  const wire = MessageCodec.toJSON(forwarded) as Record<string, unknown>;
  // Refused before the task is recorded, as the gateway's dispatch would refuse it after: a task
  // left `submitted` for a call that never went out.
  for (const [name, value] of [
    ['message', wire],
    ['metadata', params.metadata],
  ] as const) {
    const at = tooDeepAt(value, LIMITS.inputDepth);
    if (at !== undefined) {
      throw new RequestMalformedError(
        `The ${name} nests deeper than ${LIMITS.inputDepth} levels (at ${name}${at}).`,
      );
    }
  }
  const meta: ProxyMetadata = {
    agent,
    skill: skill.skill,
    skillVia: skill.via,
    skillReason: skill.reason,
  };
  const claimed = await store.claim({
    id,
    agent,
    caller: callerOf(context),
    messageId: message.messageId,
    contextId,
    state: 'submitted',
    task: submittedTask({ id, contextId }, message, { fleetgate: meta }),
    protocol: protocolOf(context),
    createdAt: Date.now(),
  });
  return {
    task: claimed.task,
    created: claimed.created,
    message: wire,
    skill,
  };
}

/** References name the proxy's tasks; the agent knows its own ids. */
export async function agentReferences(
  core: ProxyCore,
  agent: string,
  message: Message,
): Promise<string[]> {
  const references: string[] = [];
  for (const ref of message.referenceTaskIds) {
    const known = await core.store.get(ref);
    references.push(known?.agent === agent ? ((await core.agentTaskId(known.id)) ?? ref) : ref);
  }
  return references;
}

/** Sends the call through the gateway's dispatch path. */
export async function dispatch(
  core: ProxyCore,
  agent: string,
  opened: Omit<OpenedCall, 'created'>,
  params: SendMessageRequest,
  context: ServerCallContext,
  streaming: boolean,
  /** Told when the agent answered the call (its stream ended), before the records move on. */
  onAnswered?: (result: CallResult) => void,
): Promise<SentCall> {
  const { feed, store } = core;
  const id = opened.task.id;
  let result: CallResult | undefined;
  const requested = (context.requestedExtensions ?? []).filter(
    (uri) => uri !== FLEETGATE_GATEWAY_V1_URI,
  );
  const call = core.gateway.dispatch({
    id,
    agent,
    skill: opened.skill.skill,
    message: opened.message,
    ...defined({ metadata: params.metadata }),
    ...(requested.length === 0 ? {} : { extensions: requested }),
    requestedBy: callerOf(context),
    door: 'a2a-proxy',
    mode: streaming ? 'streaming' : 'blocking',
  });
  // The agent's events to the task's subscribers as they come, and its answer, up to the record
  // the dispatch answered with (every update before it has been read once that one is).
  const ids = { id, contextId: opened.task.contextId };
  const relayed = (async () => {
    for await (const update of call.events()) {
      if (update.type === 'stream') {
        if (streaming) feed.publish(id, clientEvent(update.event, ids));
      } else if (update.type === 'reply') {
        result = update.result;
        onAnswered?.(update.result);
      } else if (update.type === 'status') {
        return;
      }
    }
  })();
  const record = await call.answered();
  await relayed;
  const decision = await call.decision;
  const held = decision.action === 'hold';
  if (decision.action === 'hold' && decision.approvalId !== undefined) {
    // The approval id goes on the task before anyone reads it as waiting.
    const base = opened.task.task;
    const meta = fleetgateMeta(base);
    await store.update(id, {
      task: {
        ...base,
        metadata: {
          ...(base.metadata ?? {}),
          fleetgate: {
            ...meta,
            approvalId: decision.approvalId,
            approvalUrl: core.dashboardLink(decision.approvalId),
          },
        },
      },
      at: Date.now(),
    });
  }
  return { record, held, result };
}

/**
 * Sends a new task's call, blocking, and syncs the task with its outcome; a call the gate held
 * is followed until it has its answer (unless the client asked to be answered at once).
 */
export async function sendBlocking(
  core: ProxyCore,
  agent: string,
  opened: OpenedCall,
  params: SendMessageRequest,
  context: ServerCallContext,
  returnNow: boolean,
): Promise<ProxyTask | undefined> {
  const id = opened.task.id;
  try {
    const sending = dispatch(core, agent, opened, params, context, false);
    core.sendingNow(id, sending);
    const sent = await sending;
    // The extensions the agent activated for the call go back to the client with those
    // the proxy activated on arrival (the SDK sets the response header from the context).
    for (const uri of sent.result?.echoedExtensions ?? []) {
      context.addActivatedExtension(uri);
    }
    let task = await core.sync(id, {
      record: sent.record,
      // The row as this call left it (a held call's row has its approval id since).
      ...(sent.held ? {} : { current: opened.task }),
      ...defined({ result: sent.result }),
    });
    if (!returnNow && sent.held && task !== undefined && !ended(task.state)) {
      core.options.observe?.held?.(agent, 1);
      try {
        task = await core.follow(id, answered, Date.now() + core.options.holdForMs);
      } finally {
        core.options.observe?.held?.(agent, -1);
      }
    }
    return task;
  } finally {
    core.local.delete(id);
  }
}

/**
 * Sends a new task's call, streaming, in the background; resolves true once the agent answered
 * it, false when the gate held it.
 */
export function sendStreaming(
  core: ProxyCore,
  agent: string,
  opened: OpenedCall,
  params: SendMessageRequest,
  context: ServerCallContext,
): Promise<boolean> {
  const id = opened.task.id;
  // The client's stream ends when the agent's does: once the call's result is on the task
  // (and its push deliveries started), before the gateway has finished recording the call.
  let agentAnswered!: (end: boolean) => void;
  const agentDone = new Promise<boolean>((resolve) => (agentAnswered = resolve));
  const dispatching = dispatch(core, agent, opened, params, context, true, (result) => {
    const settle = async (): Promise<void> => {
      const record = await core.gateway.dispatchRecord(id);
      if (record !== undefined) await core.sync(id, { record, result });
    };
    void settle()
      .catch((error: unknown) => core.options.onError(error, 'proxy.stream'))
      .finally(() => agentAnswered(true));
  });
  core.sendingNow(id, dispatching);
  void dispatching.then(
    (sent) => agentAnswered(!sent.held),
    () => agentAnswered(true),
  );
  const sending = dispatching.then(
    async (sent) => {
      try {
        await core.sync(id, {
          record: sent.record,
          ...defined({ result: sent.result }),
        });
      } finally {
        core.feed.close(id);
        core.local.delete(id);
      }
      // The agent's stream ended with the call, unless the gate held it (nothing was sent).
      return !sent.held;
    },
    (error: unknown) => {
      core.feed.close(id);
      core.local.delete(id);
      throw error;
    },
  );
  core.keep(sending, 'proxy.stream');
  return agentDone;
}
