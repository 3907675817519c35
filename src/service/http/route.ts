/**
 * One way to declare a route of the HTTP API: its method and path, who may call it, zod schemas
 * for its path parameters, query and body (validated by fastify before the handler runs, turned
 * into JSON schema for `/api/openapi.json`), the shape of its answer, and the handler. The route
 * table is the single source of the OpenAPI document and of the auth matrix.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { Role } from '../config-server.js';

/** Who may call a route: a role (or a wider one), anyone, or an agent with a push secret. */
export type Access = Role | 'public' | 'push';

/** The caller, as the bearer token names it. */
export interface Identity {
  /** The token's name (`auth.tokens[].name`); `anonymous` when auth is off. */
  name: string;
  role: Role;
  /** False when no token is configured: every loopback caller is an anonymous admin. */
  authenticated: boolean;
}

/** A validated request, as a handler sees it. */
export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  identity: Identity;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** A route of the API. */
export interface RouteSpec<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  method: 'GET' | 'POST';
  /** fastify syntax: `/api/agents/:name`. */
  url: string;
  access: Access;
  summary: string;
  description?: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** What a success answers, by status (documentation; errors share one envelope). */
  responses: Readonly<Record<number, { description: string; schema?: z.ZodType; type?: string }>>;
  /** The body is not JSON (push callbacks): it reaches the handler unparsed, as a stream. */
  rawBody?: boolean;
  handler(input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<unknown>;
}

/** Declares a route with its types inferred from its schemas. */
export function defineRoute<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec {
  // The handler's input is validated by the route's own schemas before it runs.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  return spec as unknown as RouteSpec;
}

/** Declares a read of the API: a `GET` route any viewer (or a wider role) may call. */
export function viewerGet<P extends z.ZodType, Q extends z.ZodType>(
  spec: Omit<RouteSpec<P, Q>, 'method' | 'access' | 'body'>,
): RouteSpec {
  return defineRoute({ method: 'GET', access: 'viewer', ...spec });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /** The handler reads the request stream itself, under a limit of its own. */
    rawBody?: boolean;
  }
  interface FastifyRequest {
    identity: Identity;
  }
}

/** Where in the request a schema applies, for error messages. */
type Part = 'params' | 'querystring' | 'body';

/**
 * What is said of a body of JSON `null`: zod was given `undefined` (see {@link zodValidator}), and
 * "received undefined" would send the caller looking for a body it did send.
 */
function nullBodyMessage(issue: z.core.$ZodIssue): string {
  return issue.path.length === 0 && issue.code === 'invalid_type'
    ? `must be a JSON ${issue.expected}, got null`
    : issue.message;
}

/** A fastify validator that runs a zod schema and answers with the project's error code. */
export function zodValidator(schema: z.ZodType, part: Part) {
  return (data: unknown): { value: unknown } | { error: Error } => {
    const where = part === 'querystring' ? 'query' : part;
    // No query parameter of the API is a list: one given twice (`?limit=2&limit=3`) is named as
    // such, not as the number the list is not.
    const repeated =
      part === 'querystring' && data !== null && typeof data === 'object'
        ? Object.entries(data).filter(([, value]) => Array.isArray(value))
        : [];
    // A body of JSON `null` is parsed as no body, so an optional body takes it.
    const result = schema.safeParse(data ?? (part === 'body' ? undefined : {}));
    if (result.success && repeated.length === 0) return { value: result.data };
    const issues =
      repeated.length > 0
        ? repeated.map(([key, value]) => ({
            path: `${where}.${key}`,
            message: `is given ${(value as unknown[]).length} times; give it once`,
          }))
        : result.error!.issues.map((issue) => ({
            path: [where, ...issue.path.map(String)].join('.'),
            message: part === 'body' && data === null ? nullBodyMessage(issue) : issue.message,
          }));
    return {
      error: new FleetgateError(
        'FLEETGATE_HTTP_REQUEST_INVALID',
        `Invalid request ${where}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
        { details: { issues } },
      ),
    };
  };
}

/** Registers routes on an app whose validator compiler is {@link zodValidator}. */
export function registerRoutes(app: FastifyInstance, routes: readonly RouteSpec[]): void {
  for (const route of routes) {
    app.route({
      method: route.method,
      url: route.url,
      config: { access: route.access, ...(route.rawBody === true ? { rawBody: true } : {}) },
      schema: defined({ params: route.params, querystring: route.query, body: route.body }),
      handler: async (request, reply) => {
        const answer = await route.handler({
          params: request.params,
          query: request.query,
          body: request.body,
          identity: request.identity,
          request,
          reply,
        });
        // A handler that answered itself (SSE, metrics text) returns the reply.
        return answer === reply ? reply : answer;
      },
    });
  }
}

/** `:name` → `{name}` */
function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    target: 'openapi-3.0',
  }) as Record<string, unknown>;
  return rest;
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): unknown[] {
  if (schema === undefined) return [];
  const s = jsonSchema(schema) as {
    properties?: Record<string, Record<string, unknown>>;
    required?: string[];
  };
  return Object.entries(s.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === 'path' || (s.required ?? []).includes(name),
      ...defined({ description }),
      schema: rest,
    };
  });
}

/** The OpenAPI 3.0 document of a route table. */
export function openApiDocument(
  routes: readonly RouteSpec[],
  info: { title: string; version: string },
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const errorRef = { $ref: '#/components/schemas/Error' };
  for (const route of routes) {
    const path = openApiPath(route.url);
    const responses: Record<string, unknown> = {};
    for (const [status, answer] of Object.entries(route.responses)) {
      responses[status] = {
        description: answer.description,
        ...(answer.schema === undefined
          ? answer.type === undefined
            ? {}
            : { content: { [answer.type]: { schema: { type: 'string' } } } }
          : {
              content: {
                [answer.type ?? 'application/json']: { schema: jsonSchema(answer.schema) },
              },
            }),
      };
    }
    responses.default = {
      description: 'An error: `{ error: { code, message, details? } }`',
      content: { 'application/json': { schema: errorRef } },
    };
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = {
      summary: route.summary,
      ...defined({ description: route.description }),
      tags: [route.tag],
      operationId: `${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
      'x-fleetgate-access': route.access,
      security: route.access === 'public' || route.access === 'push' ? [] : [{ bearer: [] }],
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body === undefined
        ? {}
        : {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: jsonSchema(route.body) } },
            },
          }),
      responses,
    };
  }
  return {
    openapi: '3.0.3',
    info: {
      ...info,
      description:
        'The Fleetgate gateway: the fleet, dispatches through the HITL gate, approvals, the world state and live events.',
    },
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', example: 'FLEETGATE_AGENT_UNKNOWN' },
                message: { type: 'string' },
                details: { type: 'object', additionalProperties: true },
              },
            },
          },
        },
      },
    },
  };
}
