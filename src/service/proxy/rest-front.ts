/**
 * v1.0 HTTP+JSON at `/a2a/:agent/rest/…`, answered from the gateway's fastify route: what the
 * SDK's express `restHandler` answers a v1.0 request — the same routes (with and without a tenant
 * before them), the content-type guard, the version check against the card, `A2A-Extensions`,
 * the SDK's codecs for bodies and answers, its HTTP statuses and error bodies, streams as SSE —
 * without an express app and its router on every call. v0.3 HTTP+JSON stays on the SDK's
 * express handler (`front.ts`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  A2A_CONTENT_TYPE,
  AgentCard,
  HTTP_EXTENSION_HEADER,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  taskStateFromJSON,
  type ListTasksRequest,
  type Message,
} from '@a2a-js/sdk';
import {
  ContentTypeNotSupportedError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  restStatusFor,
  toRestErrorBody,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';
import { validateVersion } from '@a2a-js/sdk/server';
import { sendSse } from './sse.js';
import type { TransportFrontOptions } from './transport.js';
import { callContext, headerOf } from './transport.js';

/** One agent's v1.0 HTTP+JSON endpoint. */
export interface RestFront {
  /**
   * Answers one v1.0 HTTP+JSON request: `path` is the part of the URL after `/rest` (without its
   * query), `body` the request's JSON, already parsed (undefined when the body was empty), `user`
   * the caller the gateway checked. Resolves false when no route of the transport matches.
   */
  serve(
    request: FastifyRequest,
    reply: FastifyReply,
    path: string,
    body: unknown,
    user: User,
  ): Promise<boolean>;
}

/** A JSON answer: its status and body (none for 204). */
interface Answer {
  status: number;
  body?: unknown;
}

/** What a route's handler has: the call's context, the path's values, the query and the body. */
interface Call {
  context: ServerCallContext;
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
  tenant: string;
  body: unknown;
}

/** A route's work: a JSON answer, or a stream of events. */
type Handler = (
  handler: A2ARequestHandler,
  call: Call,
) => Promise<Answer | AsyncGenerator<unknown, void, undefined>>;

interface Route {
  method: string;
  /** Path segments; `:name` takes one segment, `:name:verb` one that ends `:verb`. */
  pattern: string[];
  handler: Handler;
}

const JSON_TYPES = new Set(['application/json', A2A_CONTENT_TYPE]);

/** The body as an object for the SDK's `fromJSON` (the path's tenant wins over the body's). */
function bodyOf(call: Call, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const body =
    typeof call.body === 'object' && call.body !== null && !Array.isArray(call.body)
      ? (call.body as Record<string, unknown>)
      : {};
  return { ...body, ...(call.tenant === '' ? {} : { tenant: call.tenant }), ...extra };
}

/** The SDK's check of a message to send. */
function checkSend(params: SendMessageRequest): SendMessageRequest {
  if (!params.message) throw new RequestMalformedError('message is required');
  if (!params.message.messageId) throw new RequestMalformedError('message.messageId is required');
  return params;
}

/** A non-negative `historyLength`, as the SDK parses it. */
function historyLength(value: string): number {
  const parsed = parseInt(value, 10);
  if (isNaN(parsed)) throw new RequestMalformedError('historyLength must be a valid integer');
  if (parsed < 0) throw new RequestMalformedError('historyLength must be non-negative');
  return parsed;
}

/** A `pageSize` of 1–100, as the SDK parses it. */
function pageSize(value: string): number {
  const parsed = parseInt(value, 10);
  if (isNaN(parsed) || String(parsed) !== value.trim()) {
    throw new RequestMalformedError('pageSize must be a valid integer');
  }
  if (parsed < 1 || parsed > 100) {
    throw new RequestMalformedError('pageSize must be between 1 and 100');
  }
  return parsed;
}

/** The `ListTasks` request of a query, as the SDK reads it. */
function listRequest(query: URLSearchParams, tenant: string): ListTasksRequest {
  const text = (name: string): string => query.get(name) ?? '';
  const status = text('status');
  return {
    tenant,
    contextId: text('contextId'),
    status:
      status === ''
        ? TaskState.TASK_STATE_UNSPECIFIED
        : taskStateFromJSON(isNaN(Number(status)) ? status : Number(status)),
    pageSize: text('pageSize') === '' ? undefined : pageSize(text('pageSize')),
    pageToken: text('pageToken'),
    historyLength: text('historyLength') === '' ? undefined : historyLength(text('historyLength')),
    statusTimestampAfter: text('statusTimestampAfter') || undefined,
    includeArtifacts: text('includeArtifacts') === 'true',
  };
}

/** The answer of `SendMessage`: the task, or the agent's message. */
function sendResult(result: Task | Message): unknown {
  return SendMessageResponse.toJSON({
    payload:
      'messageId' in result
        ? { $case: 'message', value: result }
        : { $case: 'task', value: result },
  });
}

/** The v1.0 HTTP+JSON routes, in the SDK's order. */
const ROUTES: readonly Route[] = [
  {
    method: 'GET',
    pattern: ['extendedAgentCard'],
    handler: async (h, c) => ({
      status: 200,
      body: AgentCard.toJSON(
        await h.getAuthenticatedExtendedAgentCard({ tenant: c.tenant }, c.context),
      ),
    }),
  },
  {
    method: 'POST',
    pattern: ['message:send'],
    handler: async (h, c) => ({
      status: 200,
      body: sendResult(
        await h.sendMessage(checkSend(SendMessageRequest.fromJSON(bodyOf(c))), c.context),
      ),
    }),
  },
  {
    method: 'POST',
    pattern: ['message:stream'],
    handler: (h, c) =>
      Promise.resolve(
        h.sendMessageStream(checkSend(SendMessageRequest.fromJSON(bodyOf(c))), c.context),
      ),
  },
  ...['GET', 'POST'].map((method): Route => ({
    method,
    pattern: ['tasks', ':taskId:subscribe'],
    handler: (h, c) =>
      Promise.resolve(h.resubscribe({ id: c.params['taskId']!, tenant: c.tenant }, c.context)),
  })),
  {
    method: 'POST',
    pattern: ['tasks', ':taskId:cancel'],
    handler: async (h, c) => ({
      status: 200,
      body: Task.toJSON(
        await h.cancelTask({ id: c.params['taskId']!, tenant: c.tenant, metadata: {} }, c.context),
      ),
    }),
  },
  {
    method: 'GET',
    pattern: ['tasks', ':taskId'],
    handler: async (h, c) => {
      const history = c.query.get('historyLength');
      const task = await h.getTask(
        {
          id: c.params['taskId']!,
          tenant: c.tenant,
          ...(history === null ? {} : { historyLength: historyLength(history) }),
        },
        c.context,
      );
      return { status: 200, body: Task.toJSON(task) };
    },
  },
  {
    method: 'GET',
    pattern: ['tasks'],
    handler: async (h, c) => {
      const request = listRequest(c.query, c.tenant);
      const listed = ListTasksResponse.toJSON(await h.listTasks(request, c.context)) as Record<
        string,
        unknown
      >;
      const tasks = (listed['tasks'] as Record<string, unknown>[] | undefined) ?? [];
      return {
        status: 200,
        body: {
          ...listed,
          // Asked for artifacts, each task names its list, empty or not.
          tasks: request.includeArtifacts
            ? tasks.map((t) => ('artifacts' in t ? t : { ...t, artifacts: [] }))
            : tasks,
          nextPageToken: listed['nextPageToken'] ?? '',
          pageSize: listed['pageSize'] ?? 0,
          totalSize: listed['totalSize'] ?? 0,
        },
      };
    },
  },
  {
    method: 'POST',
    pattern: ['tasks', ':taskId', 'pushNotificationConfigs'],
    handler: async (h, c) => {
      if ((await h.getAgentCard()).capabilities?.pushNotifications !== true) {
        throw new PushNotificationNotSupportedError();
      }
      const config = TaskPushNotificationConfig.fromJSON(bodyOf(c, { taskId: c.params['taskId'] }));
      return {
        status: 201,
        body: TaskPushNotificationConfig.toJSON(
          await h.createTaskPushNotificationConfig(config, c.context),
        ),
      };
    },
  },
  {
    method: 'GET',
    pattern: ['tasks', ':taskId', 'pushNotificationConfigs'],
    handler: async (h, c) => ({
      status: 200,
      body: ListTaskPushNotificationConfigsResponse.toJSON(
        await h.listTaskPushNotificationConfigs(
          { taskId: c.params['taskId']!, pageSize: 0, pageToken: '', tenant: c.tenant },
          c.context,
        ),
      ),
    }),
  },
  {
    method: 'GET',
    pattern: ['tasks', ':taskId', 'pushNotificationConfigs', ':configId'],
    handler: async (h, c) => ({
      status: 200,
      body: TaskPushNotificationConfig.toJSON(
        await h.getTaskPushNotificationConfig(
          { taskId: c.params['taskId']!, id: c.params['configId']!, tenant: c.tenant },
          c.context,
        ),
      ),
    }),
  },
  {
    method: 'DELETE',
    pattern: ['tasks', ':taskId', 'pushNotificationConfigs', ':configId'],
    handler: async (h, c) => {
      await h.deleteTaskPushNotificationConfig(
        { taskId: c.params['taskId']!, id: c.params['configId']!, tenant: c.tenant },
        c.context,
      );
      return { status: 204 };
    },
  },
];

/** The values of `segments` when they match `pattern`, else undefined. */
function matchPattern(
  pattern: readonly string[],
  segments: readonly string[],
): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    const got = segments[i]!;
    if (!want.startsWith(':')) {
      if (want !== got) return undefined;
      continue;
    }
    const verb = want.indexOf(':', 1);
    if (verb === -1) {
      if (got === '') return undefined;
      params[want.slice(1)] = got;
      continue;
    }
    const suffix = want.slice(verb);
    if (!got.endsWith(suffix) || got.length === suffix.length) return undefined;
    params[want.slice(1, verb)] = got.slice(0, -suffix.length);
  }
  return params;
}

/**
 * The route of a request, with its path values and tenant: each route as it stands first, then
 * with a tenant segment before it.
 */
function findRoute(
  method: string,
  path: string,
): { route: Route; params: Record<string, string>; tenant: string } | undefined {
  const trimmed = path.replace(/^\/+/, '').replace(/\/$/, '');
  let segments: string[];
  try {
    segments = trimmed === '' ? [] : trimmed.split('/').map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
  const verb = method === 'HEAD' ? 'GET' : method;
  for (const route of ROUTES) {
    if (route.method !== verb) continue;
    const params = matchPattern(route.pattern, segments);
    if (params !== undefined) return { route, params, tenant: '' };
  }
  if (segments.length < 2 || segments[0] === '') return undefined;
  for (const route of ROUTES) {
    if (route.method !== verb) continue;
    const params = matchPattern(route.pattern, segments.slice(1));
    if (params !== undefined) return { route, params, tenant: segments[0]! };
  }
  return undefined;
}

/** Builds the v1.0 HTTP+JSON endpoint of one agent. */
export function createRestFront(options: TransportFrontOptions): RestFront {
  const { requestHandler, contextBuilder, onError } = options;
  /** The SDK's error answer; the gateway reports its own faults and answers the client's. */
  const failed = (error: unknown, where: string): Required<Answer> => {
    const status = restStatusFor(error);
    if (status >= 500) onError(error, where);
    return { status, body: toRestErrorBody(error, status) };
  };

  return {
    async serve(request, reply, path, body, user) {
      const found = findRoute(request.method, path);
      if (found === undefined) return false;
      void reply.header('content-type', A2A_CONTENT_TYPE);
      // The SDK's content-type guard: no content type passes, any other than JSON is refused.
      const contentType = headerOf(request, 'content-type');
      if (contentType && !JSON_TYPES.has(contentType.split(';', 1)[0]!.trim().toLowerCase())) {
        const refused = new ContentTypeNotSupportedError(
          `Unsupported Content-Type "${contentType}"; expected application/json or application/a2a+json.`,
        );
        void reply.code(400).send(toRestErrorBody(refused, 400));
        return true;
      }
      let activated: string[] = [];
      try {
        const context = callContext(contextBuilder, request, user, { tenant: found.tenant });
        validateVersion(context.requestedVersion, await requestHandler.getAgentCard(), 'HTTP+JSON');
        const query = new URLSearchParams(request.url.split('?')[1] ?? '');
        const answer = await found.route.handler(requestHandler, {
          context,
          params: found.params,
          query,
          // The path's tenant, else the query's (as the SDK reads it).
          tenant: found.tenant || (query.get('tenant') ?? ''),
          body,
        });
        // Read once the call has answered (a blocking call adds what the agent echoed); on a
        // stream, before its first event, as the SDK sets it.
        activated =
          context.activatedExtensions === undefined ? [] : Array.from(context.activatedExtensions);
        if (Symbol.asyncIterator in answer) {
          await sendSse(reply, answer, activated, {
            frame: (value) => StreamResponse.toJSON(value as StreamResponse),
            failedFirst: (error) => failed(error, 'proxy.rest.stream'),
            failedLater: (error) => failed(error, 'proxy.rest.stream').body,
            onCloseError: (error) => failed(error, 'proxy.rest.stream'),
          });
          return true;
        }
        if (activated.length > 0) void reply.header(HTTP_EXTENSION_HEADER, activated);
        if (answer.status === 204) void reply.code(204).send();
        else void reply.code(answer.status).send(answer.body);
      } catch (error) {
        const answer = failed(error, 'proxy.rest');
        if (!reply.sent) {
          if (activated.length > 0) void reply.header(HTTP_EXTENSION_HEADER, activated);
          void reply.code(answer.status).send(answer.body);
        } else if (!reply.raw.writableEnded) {
          reply.raw.end();
        }
      }
      return true;
    },
  };
}
