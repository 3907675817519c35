/**
 * A plain `@a2a-js/sdk` agent, as anyone writes one with the SDK's own server pieces (in-memory
 * task and push stores, the express handlers, v0.3 compatibility): the system under test of the
 * proxy's conformance suite. One skill, `work`, declared radius `self` (nothing waits for
 * approval), and a second one, `deploy`, radius `fleet`.
 *
 * - A new message makes a task `submitted` (its history the message), then `working`, and the
 *   executor returns: the task stays `working`, and the agent's stream of the call ends there.
 *   Text `linger` keeps it `submitted` for `lingerMs` first.
 * - A follow-up message (`taskId` set) re-publishes the task and sets it `working`; text `finish`
 *   completes it with an artifact `done: <text of the first message>`.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, TaskState, type Message, type Task } from '@a2a-js/sdk';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import {
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';

const BLAST_V1 = 'https://proto-labs.ai/a2a/ext/blast-v1';

/** A running plain agent. */
export interface PlainAgent {
  url: string;
  /** Every message the agent received, in order, with the agent's task id it went to. */
  received: { message: Message; taskId: string; followUp: boolean }[];
  close(): Promise<void>;
}

const textOf = (message: Message): string =>
  message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

function status(state: TaskState, taskId: string, contextId: string) {
  return {
    kind: 'statusUpdate' as const,
    data: {
      taskId,
      contextId,
      status: { state, message: undefined, timestamp: new Date().toISOString() },
      metadata: undefined,
    },
  };
}

/** Starts the agent on a free loopback port. */
export async function startPlainSdkAgent(options: { lingerMs?: number } = {}): Promise<PlainAgent> {
  const lingerMs = options.lingerMs ?? 1500;
  const received: PlainAgent['received'] = [];
  const executor: AgentExecutor = {
    async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
      const message = ctx.userMessage;
      const existing = ctx.task;
      received.push({ message, taskId: ctx.taskId, followUp: existing !== undefined });
      const task: Task = existing ?? {
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: {
          state: TaskState.TASK_STATE_SUBMITTED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        artifacts: [],
        history: [message],
        metadata: undefined,
      };
      bus.publish({ kind: 'task', data: task });
      if (existing === undefined && textOf(message) === 'linger') {
        await new Promise((resolve) => setTimeout(resolve, lingerMs));
      }
      bus.publish(status(TaskState.TASK_STATE_WORKING, task.id, task.contextId));
      if (existing !== undefined && textOf(message) === 'finish') {
        bus.publish({
          kind: 'artifactUpdate',
          data: {
            taskId: task.id,
            contextId: task.contextId,
            artifact: {
              artifactId: `result-${task.id}`,
              name: 'result',
              description: '',
              parts: [
                {
                  content: { $case: 'text', value: `done: ${textOf(task.history[0]!)}` },
                  metadata: undefined,
                  filename: '',
                  mediaType: 'text/plain',
                },
              ],
              metadata: undefined,
              extensions: [],
            },
            append: false,
            lastChunk: true,
            metadata: undefined,
          },
        });
        bus.publish(status(TaskState.TASK_STATE_COMPLETED, task.id, task.contextId));
      }
    },
    cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
      bus.publish(status(TaskState.TASK_STATE_CANCELED, taskId, ''));
      return Promise.resolve();
    },
  };

  const app = express();
  app.disable('x-powered-by');
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = AgentCard.fromJSON({
    name: 'Plain SDK agent',
    description: 'An @a2a-js/sdk agent built from the SDK server pieces only.',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${base}/`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extensions: [
        {
          uri: BLAST_V1,
          description: 'Blast radius of each skill',
          required: false,
          params: { skills: { work: { radius: 'self' }, deploy: { radius: 'fleet' } } },
        },
      ],
    },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'work', name: 'Work', description: 'Works on a task', tags: ['test'] },
      { id: 'deploy', name: 'Deploy', description: 'Deploys the fleet', tags: ['test'] },
    ],
  });
  const pushStore = new InMemoryPushNotificationStore();
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    pushStore,
    new DefaultPushNotificationSender(pushStore),
  );
  const legacyCompat = { enabled: true };
  const common = { requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat };
  app.use(
    ['/.well-known/agent-card.json', '/.well-known/agent.json'],
    agentCardHandler({ agentCardProvider: requestHandler, legacyCompat, cache: { maxAge: 0 } }),
  );
  app.use('/rest', restHandler(common));
  app.use('/', jsonRpcHandler(common));
  return {
    url: base,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
