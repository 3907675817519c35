/**
 * The request handler of one agent behind the proxy: one method per A2A operation, as the SDK's
 * JSON-RPC and HTTP+JSON handlers call them (on the handler, through `measured`).
 */
import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import {
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { continueTask, withPendingFollowUp } from './proxy-continue.js';
import type { ProxyCore } from './proxy-core.js';
import { open, sendBlocking, sendStreaming } from './proxy-send.js';
import { relayAgentStream, stream } from './proxy-stream.js';
import {
  answered,
  awaitingApproval,
  callerOf,
  fleetgateMeta,
  protocolOf,
  readerOf,
} from './proxy-task-meta.js';
import { checkPushUrl } from './push.js';
import { listProxyTasks } from './task-query.js';
import type { ProxyTask } from './task-store.js';
import { ended } from './task-store.js';
import { withHistory, withStatus } from './task-view.js';
import { isFleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';

function notFound(id: string): TaskNotFoundError {
  return new TaskNotFoundError(`Task not found: ${id}`);
}

/** The proxy's request handler of one agent. */
export class ProxyHandler implements A2ARequestHandler {
  readonly #core: ProxyCore;
  readonly #agent: string;

  constructor(core: ProxyCore, agent: string) {
    this.#core = core;
    this.#agent = agent;
  }

  getAgentCard(): Promise<AgentCard> {
    return this.#core.cardOf(this.#agent);
  }

  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return this.#core.cardOf(this.#agent);
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Task> {
    if (params.message !== undefined && params.message.taskId !== '') {
      return this.#continueMessage(params, params.message, context);
    }
    const core = this.#core;
    const opened = await open(core, this.#agent, params, context);
    const id = opened.task.id;
    const historyLength = params.configuration?.historyLength;
    const returnNow = params.configuration?.returnImmediately === true;
    if (!opened.created) {
      // The same message again: the task it made as it stands now, at once (the first call
      // answered the same way, or is still answering), never a second dispatch.
      const task = core.local.has(id) ? await core.store.get(id) : await core.sync(id);
      return withHistory((task ?? opened.task).task, historyLength);
    }
    await this.#registerPushWith(params, opened.task, context);
    core.local.add(id);
    const work = sendBlocking(core, this.#agent, opened, params, context, returnNow);
    if (returnNow) {
      core.keep(work, 'proxy.send');
      return withHistory((await core.store.get(id))?.task ?? opened.task.task, historyLength);
    }
    const task = await work;
    return withHistory((task ?? opened.task).task, historyLength);
  }

  /** The task `message` continues, and how to send it there. */
  #continue(params: SendMessageRequest, message: Message, context: ServerCallContext) {
    return continueTask(this.#core, this.#agent, { ...params, message }, context);
  }

  /** `SendMessage` to a task the proxy has: the answer to its question, or a follow-up. */
  async #continueMessage(
    params: SendMessageRequest,
    message: Message,
    context: ServerCallContext,
  ): Promise<Task> {
    const core = this.#core;
    const { task, answer, followUp } = await this.#continue(params, message, context);
    if (params.configuration?.returnImmediately === true) {
      core.keep(answer(params, false), 'proxy.continue');
      return withHistory(task.task, params.configuration.historyLength);
    }
    if (followUp) {
      // Answered as the agent answered the follow-up.
      const after = await answer(params, false);
      return withHistory((after ?? task).task, params.configuration?.historyLength);
    }
    await answer(params, false);
    const after = await core.follow(
      task.id,
      (t) => answered(t) && t.updatedAt > task.updatedAt,
      Date.now() + core.options.holdForMs,
    );
    return withHistory((after ?? task).task, params.configuration?.historyLength);
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    if (params.message !== undefined && params.message.taskId !== '') {
      yield* this.#continueStream(params, params.message, context);
      return;
    }
    const core = this.#core;
    const opened = await open(core, this.#agent, params, context);
    const id = opened.task.id;
    if (!opened.created) {
      const current = (await core.sync(id)) ?? opened.task;
      yield* stream(core, current.task, id, {
        state: current.state,
        artifacts: current.task.artifacts.length,
      });
      return;
    }
    await this.#registerPushWith(params, opened.task, context);
    core.local.add(id);
    core.feed.open(id);
    const agentDone = sendStreaming(core, this.#agent, opened, params, context);
    yield* stream(core, opened.task.task, id, { state: 'submitted', artifacts: 0 }, { agentDone });
  }

  /** `SendStreamingMessage` to a task the proxy has: the answer to its question, or a follow-up. */
  async *#continueStream(
    params: SendMessageRequest,
    message: Message,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const core = this.#core;
    const { task, answer, followUp } = await this.#continue(params, message, context);
    if (followUp) {
      // The agent's events of the follow-up, live, to the end of the agent's stream.
      core.feed.open(task.id);
      const sent = answer(params, true)
        .then(
          () => true,
          (error: unknown) => {
            core.options.onError(error, 'proxy.follow-up');
            return true;
          },
        )
        .finally(() => core.feed.close(task.id));
      core.keep(sent, 'proxy.follow-up');
      yield* stream(
        core,
        task.task,
        task.id,
        { state: task.state, artifacts: task.task.artifacts.length },
        { agentDone: sent },
      );
      return;
    }
    core.keep(answer(params, true), 'proxy.continue');
    // The task as it stands, then its progress from the store, to its end or next question.
    yield* stream(
      core,
      task.task,
      task.id,
      { state: task.state, artifacts: task.task.artifacts.length },
      { askedAt: task.updatedAt },
    );
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    let task = await this.#owned(params.id, context, 'read');
    if (!ended(task.state) && !this.#core.local.has(task.id)) {
      task = (await this.#core.sync(task.id)) ?? task;
    }
    if (!ended(task.state)) task = await withPendingFollowUp(this.#core, task);
    return withHistory(task.task, params.historyLength);
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    const core = this.#core;
    const task = await this.#owned(params.id, context);
    if (ended(task.state)) {
      throw new TaskNotCancelableError(`Task ${task.id} already ended ${task.state}.`);
    }
    const record = await core.gateway.dispatchRecord(task.id);
    const approvalId = fleetgateMeta(task.task)?.approvalId;
    if (record?.status === 'awaiting-approval' && approvalId !== undefined) {
      await core.gateway.approvals.reject(approvalId, callerOf(context), 'canceled by the client');
      const { task: stored } = await core.store.update(task.id, {
        task: withStatus(
          task.task,
          TaskState.TASK_STATE_CANCELED,
          'Canceled by the client before approval; the agent was not called.',
        ),
        at: Date.now(),
      });
      if (stored !== undefined) await core.push.notify(stored.task, stored.state);
      return (stored ?? task).task;
    }
    // The gateway's one cancel: the task canceled at the agent (found by what was sent when the
    // agent has not answered the send yet); the row follows the call's end.
    try {
      await core.gateway.cancelDispatch(task.id, {
        by: callerOf(context),
        ...defined({ metadata: params.metadata }),
      });
    } catch (error) {
      if (
        isFleetgateError(error) &&
        (error.code === 'FLEETGATE_DISPATCH_NOT_CANCELABLE' ||
          error.code === 'FLEETGATE_DISPATCH_NOT_FOUND')
      ) {
        throw new TaskNotCancelableError(`Task ${task.id}: ${error.message}`);
      }
      throw error;
    }
    return ((await core.follow(task.id, (t) => ended(t.state), Date.now() + 5000)) ?? task).task;
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const core = this.#core;
    const task = await this.#owned(params.id, context, 'read');
    const current =
      ended(task.state) || core.local.has(task.id) ? task : ((await core.sync(task.id)) ?? task);
    if (ended(current.state)) {
      throw new UnsupportedOperationError(
        `Task ${current.id} is in a terminal state (${current.state}) and cannot be subscribed to.`,
      );
    }
    // A task running at the agent is followed on the agent's own stream, which ends when the
    // agent's does; a held one (nothing at the agent yet) on the store.
    // A call this process is still sending ends the subscription when the agent answers it.
    const sending = core.inflight.get(current.id);
    const agentTaskId =
      sending === undefined && !awaitingApproval(current)
        ? await core.agentTaskId(current.id)
        : null;
    const agentDone =
      sending ??
      (agentTaskId !== null
        ? () => relayAgentStream(core, this.#agent, current, agentTaskId)
        : undefined);
    yield* stream(
      core,
      current.task,
      current.id,
      { state: current.state, artifacts: current.task.artifacts.length },
      agentDone === undefined ? {} : { agentDone },
    );
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const core = this.#core;
    const task = await this.#owned(params.taskId, context);
    if (params.url === '') throw new RequestMalformedError('url is required');
    await checkPushUrl(core.options.pushUrls, params.url);
    const config = { ...params, id: params.id === '' ? randomUUID() : params.id };
    await core.store.setPush(
      { taskId: task.id, configId: config.id, config, protocol: protocolOf(context) },
      Date.now(),
    );
    // A task that already ended is sent at once.
    if (ended(task.state)) await core.push.notify(task.task, task.state);
    return config;
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const task = await this.#owned(params.taskId, context, 'read');
    const found = await this.#core.store.getPush(task.id, params.id);
    if (found === undefined) {
      throw new TaskNotFoundError(`No push configuration ${params.id} for task ${task.id}`);
    }
    return found.config;
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const task = await this.#owned(params.taskId, context, 'read');
    const configs = (await this.#core.store.listPush(task.id)).map((c) => c.config);
    return { configs, nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    context: ServerCallContext,
  ): Promise<void> {
    const task = await this.#owned(params.taskId, context);
    await this.#core.store.deletePush(task.id, params.id);
  }

  listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return listProxyTasks(this.#core.database, this.#agent, readerOf(context), params);
  }

  /**
   * The caller's task (another's is not found). To read, an admin reaches every caller's, as
   * ListTasks shows them; to change one (cancel, push configs), only its caller.
   */
  async #owned(
    id: string,
    context: ServerCallContext,
    access: 'read' | 'write' = 'write',
  ): Promise<ProxyTask> {
    const task = await this.#core.store.get(id);
    const reader = readerOf(context);
    if (
      task === undefined ||
      task.agent !== this.#agent ||
      (task.caller !== reader.caller && !(access === 'read' && reader.admin))
    ) {
      throw notFound(id);
    }
    return task;
  }

  /**
   * A push configuration sent with the message (`configuration.taskPushNotificationConfig`):
   * registered for the new task through `CreateTaskPushNotificationConfig`'s own path (its checks
   * included) before the call is sent, so every state the task reaches, `submitted` first, is
   * delivered like one set later. A configuration refused ends the task failed, saying why, and
   * nothing is sent.
   */
  async #registerPushWith(
    params: SendMessageRequest,
    task: ProxyTask,
    context: ServerCallContext,
  ): Promise<void> {
    const config = params.configuration?.taskPushNotificationConfig;
    if (config === undefined) return;
    try {
      await this.createTaskPushNotificationConfig({ ...config, taskId: task.id }, context);
      // As an SDK agent does, the task goes out as it starts (submitted), its first try
      // answered before the client hears of the task; every later state follows.
      await this.#core.push.notify(task.task, task.state, { firstTry: true });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      await this.#core.store.update(task.id, {
        task: withStatus(
          task.task,
          TaskState.TASK_STATE_FAILED,
          `configuration.taskPushNotificationConfig was refused (${reason}); the agent was not called.`,
        ),
        at: Date.now(),
      });
      throw error;
    }
  }
}
