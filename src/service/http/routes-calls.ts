/**
 * Read routes for the dashboard's call page and status strip:
 * - `GET /api/dispatches/:id/story` — one call's whole story from the durable records: the
 *   dispatch, what was sent and by whom, its task, every event it announced (through the outbox,
 *   so in the order they were committed), its approvals with who decided, the world changes its
 *   task made (values before and after) and its cost sample.
 * - `GET /api/status` — the gateway's version, when this process started and an id of this
 *   process, so a page can tell a restarted gateway from the one it signed in to.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { z } from 'zod';
import { FleetgateError } from '../../protocol/index.js';
import type { Gateway } from '../gateway-types.js';
import type { ApiContext } from './context.js';
import type { RouteSpec } from './route.js';
import { viewerGet } from './route.js';
import { statusSchema, storySchema } from './api-schemas.js';
import { auditEffect, num, parseJson, str } from './sql-values.js';
import { dispatchView, unknownDispatch } from './routes-fleet.js';

/** Most events kept for one call (a call that reported a long stream of deltas). */
const MAX_EVENTS = 2000;
const MAX_EFFECTS = 5000;

/** The store the stories are read from. */
type Db = ApiContext['ports']['store']['db'];

/** The call page's and the status strip's routes. */
export function callRoutes(ctx: ApiContext): RouteSpec[] {
  const gw = ctx.gateway;
  const db = ctx.ports.store.db;
  return [statusRoute(ctx), taskDispatchRoute(gw, db), storyRoute(gw, db)];
}

/** `GET /api/status`: the gateway's version, uptime and an id of this process. */
function statusRoute(ctx: ApiContext): RouteSpec {
  const instance = randomUUID();
  const startedAt = Date.now();
  return viewerGet({
    url: '/api/status',
    tag: 'service',
    summary: "The gateway's version, uptime and process id (new after a restart)",
    responses: { 200: { description: 'the gateway', schema: statusSchema } },
    handler: () =>
      Promise.resolve({
        version: ctx.version,
        instance,
        startedAt,
        uptimeMs: Date.now() - startedAt,
      }),
  });
}

/** `GET /api/agents/:name/tasks/:taskId/dispatch`: the dispatch that made a task. */
function taskDispatchRoute(gw: Gateway, db: Db): RouteSpec {
  return viewerGet({
    url: '/api/agents/:name/tasks/:taskId/dispatch',
    tag: 'dispatch',
    summary: 'The dispatch that made a task of an agent (a delta names its task)',
    params: z.object({
      name: z.string().min(1).max(63),
      taskId: z.string().min(1).max(200),
    }),
    responses: { 200: { description: 'the dispatch', schema: z.object({}).passthrough() } },
    handler: async ({ params }) => {
      const found = await sql<{ id: string }>`select id from fleetgate_dispatch
        where agent = ${params.name} and task_id = ${params.taskId}`.execute(db);
      const record =
        found.rows[0] === undefined ? undefined : await gw.dispatchRecord(found.rows[0].id);
      if (record === undefined) {
        throw new FleetgateError(
          'FLEETGATE_DISPATCH_NOT_FOUND',
          `No dispatch of agent ${params.name} made task ${params.taskId}.`,
          { details: { agent: params.name, taskId: params.taskId } },
        );
      }
      return dispatchView(record);
    },
  });
}

/** `GET /api/dispatches/:id/story`: one call's whole story from the durable records. */
function storyRoute(gw: Gateway, db: Db): RouteSpec {
  return viewerGet({
    url: '/api/dispatches/:id/story',
    tag: 'dispatch',
    summary:
      "One call's whole story: gate decision, approvals, what was sent, task, events, world changes, cost",
    description:
      'Read from the durable records: events are those the gateway committed for the call (kept for `retention.outbox`), oldest first.',
    params: z.object({ id: z.string().min(1).max(200) }),
    responses: { 200: { description: 'the story', schema: storySchema } },
    handler: async ({ params }) => {
      const dispatch = await gw.dispatchRecord(params.id);
      if (dispatch === undefined) throw unknownDispatch(params.id);
      const [sendRows, traceRows, taskRows, eventRows, approvalRows, effectRows] =
        await Promise.all([
          sql<Record<string, unknown>>`select owner, message_id, context_id, sent_at
            from fleetgate_dispatch_send where dispatch_id = ${dispatch.id}`.execute(db),
          sql<Record<string, unknown>>`select traceparent from fleetgate_dispatch_trace
            where dispatch_id = ${dispatch.id}`.execute(db),
          dispatch.taskId === null
            ? Promise.resolve({ rows: [] as Record<string, unknown>[] })
            : sql<Record<string, unknown>>`select state, created_at, updated_at, terminal_at,
                terminal_via from fleetgate_task
                where agent = ${dispatch.agent} and task_id = ${dispatch.taskId}`.execute(db),
          sql<Record<string, unknown>>`select seq, id, topic, payload, time, created_at
            from fleetgate_outbox where correlation_id = ${dispatch.correlationId}
            order by seq limit ${MAX_EVENTS}`.execute(db),
          sql<Record<string, unknown>>`select id from fleetgate_policy_approval
            where dispatch_id = ${dispatch.id} order by created_at`.execute(db),
          dispatch.taskId === null
            ? Promise.resolve({ rows: [] as Record<string, unknown>[] })
            : sql<Record<string, unknown>>`select seq, domain, path, op, value, previous, next,
                status, reason, version, recorded_at from fleetgate_world_audit
                where task_id = ${dispatch.taskId} and agent = ${dispatch.agent}
                order by seq limit ${MAX_EFFECTS}`.execute(db),
        ]);
      // A correlation id may be shared by several calls: keep the events of this one.
      const events = eventRows.rows
        .map((r) => ({
          id: String(r.id),
          topic: String(r.topic),
          time: String(r.time),
          at: num(r.created_at) ?? 0,
          payload: (parseJson(r.payload) ?? {}) as Record<string, unknown>,
        }))
        .filter((e) => {
          const p = e.payload;
          if (e.topic.startsWith('skill.dispatch.')) return p.id === dispatch.id;
          if (e.topic.startsWith('hitl.')) return p.dispatchId === dispatch.id;
          if (typeof p.taskId === 'string') return p.taskId === dispatch.taskId;
          return true;
        });
      const approvals = (
        await Promise.all(approvalRows.rows.map((r) => gw.approvals.get(String(r.id))))
      ).filter((a) => a !== undefined);
      const send = sendRows.rows[0];
      const task = taskRows.rows[0];
      const costEvent = events.find((e) => e.topic === 'cost.sample');
      return {
        dispatch: dispatchView(dispatch),
        send:
          send === undefined
            ? null
            : {
                owner: String(send.owner),
                messageId: String(send.message_id),
                contextId: String(send.context_id),
                sentAt: num(send.sent_at),
              },
        traceparent: traceRows.rows[0] === undefined ? null : String(traceRows.rows[0].traceparent),
        task:
          task === undefined
            ? null
            : {
                state: String(task.state),
                createdAt: num(task.created_at) ?? 0,
                updatedAt: num(task.updated_at) ?? 0,
                terminalAt: num(task.terminal_at),
                terminalVia: str(task.terminal_via),
              },
        events,
        approvals,
        effects: effectRows.rows.map((r) => ({
          ...auditEffect(r),
          at: num(r.recorded_at) ?? 0,
        })),
        cost: costEvent === undefined ? null : costEvent.payload,
      };
    },
  });
}
