/**
 * The fleet and dispatch routes: `GET /api/agents`, `GET /api/agents/:name`,
 * `POST /api/agents/:name/refresh`, `POST /api/agents/:name/ack`, `POST /api/dispatch`,
 * `GET /api/dispatches`, `GET /api/dispatches/:id` and `POST /api/dispatches/:id/cancel`.
 */
import { context as otelContext, trace, TraceFlags } from '@opentelemetry/api';
import { z } from 'zod';
import type { DispatchRecord, GateVerdict } from '../../dispatch/index.js';
import { FleetgateError, LIMITS } from '../../protocol/index.js';
import type { CallDoor } from '../../protocol/index.js';
import { tooDeepAt } from '../../protocol/values/index.js';
import { defined } from '../../protocol/fields/index.js';
import { parseDuration } from '../config.js';
import { agentView, fleetView } from '../fleet-view.js';
import type { SkillRoute } from '../skill-routing.js';
import { routeSkill } from '../skill-routing.js';
import type { Gateway } from '../gateway-types.js';
import type { ApiContext } from './context.js';
import type { RouteSpec } from './route.js';
import { defineRoute, viewerGet } from './route.js';
import { agentSchema, decisionSchema, dispatchSchema } from './api-schemas.js';

const agentName = z.object({
  name: z.string().min(1).max(63).describe('the agent name from the configuration'),
});

const dispatchBody = z.strictObject({
  agent: z
    .string()
    .min(1)
    .max(63)
    .optional()
    .describe('the agent; without it the gateway routes the skill'),
  skill: z.string().min(1).max(200),
  text: z.string().max(100_000).optional(),
  data: z
    .unknown()
    .optional()
    .superRefine((data, ctx) => {
      const at = tooDeepAt(data, LIMITS.inputDepth);
      if (at !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `nests deeper than ${LIMITS.inputDepth} levels (at data${at})`,
        });
      }
    })
    .describe(`JSON for the agent, nested at most ${LIMITS.inputDepth} levels`),
  correlationId: z.string().min(1).max(200).optional(),
});

const dispatchQuery = z.object({
  wait: z
    .string()
    .optional()
    .describe(
      '`true` or a duration (`30s`): answer once the dispatch ended or waits on a human, at most this long (default: answer at once)',
    ),
});

const dispatchAnswer = dispatchSchema.extend({
  decision: decisionSchema.optional(),
  routing: z
    .object({ agent: z.string(), reasons: z.array(z.string()), candidates: z.array(z.unknown()) })
    .optional(),
  traceparent: z.string().optional(),
});

const ENDED = new Set(['completed', 'failed', 'rejected', 'canceled']);
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** Longest `?wait=` accepted. */
const MAX_WAIT_MS = 10 * 60_000;

/** A gate decision as the API shows it. */
export function decisionView(decision: GateVerdict | undefined): z.infer<typeof decisionSchema> {
  if (decision === undefined) return { action: 'allow' };
  const policy = (decision.decision ?? {}) as {
    mode?: unknown;
    effectiveRadius?: unknown;
    reasons?: unknown;
  };
  return {
    action: decision.action,
    ...(typeof policy.mode === 'string' ? { mode: policy.mode } : {}),
    ...(typeof policy.effectiveRadius === 'string' || policy.effectiveRadius === null
      ? { effectiveRadius: policy.effectiveRadius }
      : {}),
    ...(Array.isArray(policy.reasons)
      ? { reasons: policy.reasons as z.infer<typeof decisionSchema>['reasons'] }
      : {}),
    ...(decision.action === 'allow' ? {} : { reason: decision.reason }),
    ...(decision.action === 'hold' && decision.approvalId !== undefined
      ? { approvalId: decision.approvalId }
      : {}),
    ...(decision.action === 'hold' && decision.goAt !== undefined ? { goAt: decision.goAt } : {}),
  };
}

function waitMs(wait: string | undefined): number | undefined {
  if (wait === undefined || wait === 'false' || wait === '0') return undefined;
  if (wait === 'true' || wait === '') return 60_000;
  const ms = parseDuration(wait);
  if (ms === undefined) {
    throw new FleetgateError(
      'FLEETGATE_HTTP_REQUEST_INVALID',
      `Invalid request query: wait: must be true or a duration like 30s (got ${JSON.stringify(wait)})`,
      { details: { issues: [{ path: 'query.wait', message: 'must be true or a duration' }] } },
    );
  }
  return Math.min(ms, MAX_WAIT_MS);
}

/**
 * The traceparent to send on the A2A call: a child of the incoming one under a `fleetgate.dispatch`
 * span (recorded only when an OpenTelemetry SDK is registered; without one the incoming trace
 * context passes through unchanged).
 */
function traceOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value === undefined ? null : TRACEPARENT.exec(value.trim().toLowerCase());
  if (match === null || match[1] === 'ff') return undefined;
  const parent = trace.setSpanContext(otelContext.active(), {
    traceId: match[2]!,
    spanId: match[3]!,
    traceFlags: Number.parseInt(match[4]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
  const span = trace.getTracer('fleetgate').startSpan('fleetgate.dispatch', {}, parent);
  const ctx = span.spanContext();
  span.end();
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags.toString(16).padStart(2, '0')}`;
}

function unknownAgent(name: string): FleetgateError {
  return new FleetgateError('FLEETGATE_AGENT_UNKNOWN', `No agent named ${name} is configured.`, {
    details: { agent: name },
  });
}

/** `FLEETGATE_DISPATCH_NOT_FOUND` (a 404): the gateway has no record of dispatch `id`. */
export function unknownDispatch(id: string): FleetgateError {
  return new FleetgateError('FLEETGATE_DISPATCH_NOT_FOUND', `No dispatch ${id}.`, {
    details: { id },
  });
}

/**
 * A dispatch record as the API shows it: who asked is `null` when nobody was named (a call asked
 * without a token, or one recorded before the store kept who asked), and its door `null` on a call
 * recorded before the store kept it.
 */
export function dispatchView(record: DispatchRecord): Omit<
  DispatchRecord,
  'requestedBy' | 'door'
> & {
  requestedBy: string | null;
  door: CallDoor | null;
} {
  return { ...record, requestedBy: record.requestedBy ?? null, door: record.door ?? null };
}

/** The fleet and dispatch routes. */
export function fleetRoutes(ctx: ApiContext): RouteSpec[] {
  return [
    ...agentRoutes(ctx.gateway),
    dispatchRoute(ctx),
    ...dispatchReadRoutes(ctx),
    dispatchCancelRoute(ctx.gateway),
  ];
}

/** `GET /api/agents`, `GET /api/agents/:name`, `POST /api/agents/:name/refresh` and `…/ack`. */
function agentRoutes(gw: Gateway): RouteSpec[] {
  return [
    viewerGet({
      url: '/api/agents',
      tag: 'fleet',
      summary: 'The fleet: card status and effective declarations of every agent',
      responses: {
        200: {
          description: 'every agent, in configuration order',
          schema: z.object({
            agents: z.array(agentSchema),
            pendingAcknowledgements: z.array(z.unknown()),
          }),
        },
      },
      handler: () =>
        Promise.resolve({
          agents: fleetView(gw),
          pendingAcknowledgements: gw.agents.pendingAcknowledgements(),
        }),
    }),
    viewerGet({
      url: '/api/agents/:name',
      tag: 'fleet',
      summary: 'One agent: card status, skills with radius, floor, hitl mode and domains',
      params: agentName,
      responses: { 200: { description: 'the agent', schema: agentSchema } },
      handler: ({ params }) => {
        const state = gw.agents.state(params.name);
        if (state === undefined) throw unknownAgent(params.name);
        return Promise.resolve(agentView(gw, state));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/agents/:name/refresh',
      access: 'operator',
      tag: 'fleet',
      summary: 'Refresh one agent card now',
      params: agentName,
      responses: {
        200: {
          description: 'the refresh outcome and the agent after it',
          schema: z.object({ outcome: z.object({}).passthrough(), agent: agentSchema }),
        },
      },
      handler: async ({ params }) => {
        if (gw.agents.state(params.name) === undefined) throw unknownAgent(params.name);
        const outcome = await gw.agents.refresh(params.name);
        return { outcome, agent: agentView(gw, gw.agents.state(params.name)!) };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/agents/:name/ack',
      access: 'admin',
      tag: 'fleet',
      summary: 'Accept the narrower radius or hitl mode a skill now declares',
      description:
        'A card that narrows a skill does not lower the gate until an operator acknowledges it; the acknowledging token is recorded.',
      params: agentName,
      body: z.strictObject({ skill: z.string().min(1).max(200) }),
      responses: {
        200: { description: 'what is now in effect', schema: z.object({}).passthrough() },
      },
      handler: async ({ params, body, identity }) => {
        if (gw.agents.state(params.name) === undefined) throw unknownAgent(params.name);
        const result = await gw.agents.acknowledge(params.name, body.skill, identity.name);
        return { agent: params.name, skill: body.skill, acknowledgedBy: identity.name, ...result };
      },
    }),
  ];
}

/** `POST /api/dispatch`: a skill call through the policy gate. */
function dispatchRoute(ctx: ApiContext): RouteSpec {
  const gw = ctx.gateway;
  return defineRoute({
    method: 'POST',
    url: '/api/dispatch',
    access: 'operator',
    tag: 'dispatch',
    summary: 'Dispatch a skill call through the policy gate',
    description:
      'Without `agent` the gateway routes the skill: fresh cards first, then the narrowest effective radius, then the better recent success rate. Answers at once (`running`, `awaiting-approval`, …) unless `wait` is given. A W3C `traceparent` header is propagated on the A2A call.',
    body: dispatchBody,
    query: dispatchQuery,
    responses: {
      200: { description: 'the dispatch ended', schema: dispatchAnswer },
      202: {
        description: 'the dispatch runs, or waits for an approval or input',
        schema: dispatchAnswer,
      },
    },
    handler: async ({ body, query, identity, request, reply }) => {
      const wait = waitMs(query.wait);
      let routing: SkillRoute | undefined;
      let agent = body.agent;
      if (agent === undefined) {
        routing = routeSkill(gw, body.skill);
        agent = routing.agent;
      }
      // An unknown agent or skill is refused by the gateway's dispatch (nothing recorded).
      const traceparent = traceOf(request.headers.traceparent);
      const call = gw.dispatch({
        agent,
        skill: body.skill,
        ...defined({ text: body.text, data: body.data, correlationId: body.correlationId }),
        ...(identity.authenticated ? { requestedBy: identity.name } : {}),
        door: 'api',
        // Waited for: blocking, streamed where the agent streams (the gateway's default).
        ...(wait === undefined ? { mode: 'return-immediately' as const } : {}),
        ...(traceparent === undefined ? {} : { headers: { traceparent } }),
      });
      const started = Date.now();
      // `wait` bounds the whole answer: a call the agent is still working on when it is up is
      // answered as it stands (202), and goes on.
      let record = wait === undefined ? await call.answered() : await within(call.answered(), wait);
      const decision = await call.decision;
      if (record === undefined) {
        record = (await gw.dispatchRecord(call.id)) ?? (await call.answered());
      } else if (wait !== undefined && record.status === 'running') {
        const left = wait - (Date.now() - started);
        if (left > 0) record = (await ctx.watcher.settled(record.id, left)) ?? record;
      }
      request.log.info(
        { dispatch: record.id, agent, skill: body.skill, status: record.status, traceparent },
        'dispatch',
      );
      void reply.code(ENDED.has(record.status) ? 200 : 202);
      return {
        ...dispatchView(record),
        decision: decisionView(decision),
        ...defined({ routing, traceparent }),
      };
    },
  });
}

/** `POST /api/dispatches/:id/cancel`: a held call rejected, a running task canceled at its agent. */
function dispatchCancelRoute(gw: Gateway): RouteSpec {
  return defineRoute({
    method: 'POST',
    url: '/api/dispatches/:id/cancel',
    access: 'operator',
    tag: 'dispatch',
    summary: 'Cancel a dispatch',
    description:
      'A call held for approval (or in its veto window) is rejected, by the token, with the reason; a task running at the agent is canceled there (A2A CancelTask), who asked and why recorded first, and the call ends `canceled`, or as the agent ends the task. Answers once the call ended (200), or as it stands after 10 s when the agent still winds the task down (202). A call that had already ended is answered as it is (200): its `status` says how it ended.',
    params: z.object({ id: z.string().min(1).max(200).describe('the dispatch id') }),
    body: z
      .strictObject({ reason: z.string().min(1).max(2000).optional() })
      .optional()
      .describe(
        "why: kept in the audit trail (a held call's rejection; a running call's `FLEETGATE_DISPATCH_CANCELED` error and `skill.dispatch.cancel-requested` event)",
      ),
    responses: {
      200: { description: 'the dispatch ended', schema: dispatchSchema },
      202: { description: 'the agent is still winding the task down', schema: dispatchSchema },
    },
    handler: async ({ params, body, identity, reply }) => {
      const record = await gw.cancelDispatch(params.id, {
        ...defined({ reason: body?.reason }),
        ...(identity.authenticated ? { by: identity.name } : {}),
      });
      void reply.code(ENDED.has(record.status) ? 200 : 202);
      return dispatchView(record);
    },
  });
}

/**
 * What `promise` resolves to within `ms`, or undefined when the time is up first; a rejection
 * that comes later is the caller's no more (it is handled here, never left unhandled).
 */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  promise.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const up = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, up]);
  } finally {
    clearTimeout(timer);
  }
}

/** `GET /api/dispatches` and `GET /api/dispatches/:id`. */
function dispatchReadRoutes(ctx: ApiContext): RouteSpec[] {
  const gw = ctx.gateway;
  return [
    viewerGet({
      url: '/api/dispatches',
      tag: 'dispatch',
      summary: 'Dispatches, newest first, filtered and paged',
      description:
        'Every filter given must match. Pages with `before`: the id of the last dispatch of the previous page.',
      query: z.object({
        agent: z.string().min(1).max(200).optional(),
        skill: z.string().min(1).max(200).optional(),
        status: dispatchSchema.shape.status.optional(),
        correlationId: z.string().min(1).max(200).optional(),
        idEndsWith: z
          .string()
          .min(1)
          .max(200)
          .optional()
          .describe('the end of the id, any case: a short id as `fleetgate dispatch` prints it'),
        limit: z.coerce.number().int().min(1).max(500).default(50),
        before: z.string().min(1).max(200).optional(),
      }),
      responses: {
        200: {
          description: 'the page of dispatches',
          schema: z.object({ dispatches: z.array(dispatchSchema), next: z.string().nullable() }),
        },
      },
      handler: async ({ query }) => {
        const page = await gw.dispatches({
          limit: query.limit,
          ...defined({
            agent: query.agent,
            skill: query.skill,
            status: query.status,
            correlationId: query.correlationId,
            idEndsWith: query.idEndsWith,
            before: query.before,
          }),
        });
        return {
          dispatches: page.map(dispatchView),
          next: page.length === query.limit ? (page.at(-1)?.id ?? null) : null,
        };
      },
    }),
    viewerGet({
      url: '/api/dispatches/:id',
      tag: 'dispatch',
      summary: 'One dispatch: status, task, result',
      params: z.object({ id: z.string().min(1).max(200) }),
      query: z.object({
        wait: z
          .string()
          .optional()
          .describe('`true` or a duration: answer once the dispatch is no longer running'),
      }),
      responses: { 200: { description: 'the dispatch', schema: dispatchSchema } },
      handler: async ({ params, query }) => {
        const wait = waitMs(query.wait);
        const record =
          wait === undefined
            ? await gw.dispatchRecord(params.id)
            : await ctx.watcher.settled(params.id, wait);
        if (record === undefined) throw unknownDispatch(params.id);
        return dispatchView(record);
      },
    }),
  ];
}
