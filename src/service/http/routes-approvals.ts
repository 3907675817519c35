/**
 * The approvals routes: `GET /api/approvals`, `GET /api/approvals/:id` and
 * `POST /api/approvals/:id/approve|reject|snooze|answer`. The approver is the token's name, never
 * a field of the body; a request already decided answers 409 with who decided it.
 */
import { z } from 'zod';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { ApprovalOutcome } from '../approvals.js';
import { parseDuration } from '../config.js';
import type { ApiContext } from './context.js';
import type { RouteSpec } from './route.js';
import { defineRoute, viewerGet } from './route.js';
import { APPROVAL_STATUSES as STATUSES, approvalSchema } from './api-schemas.js';

const outcomeSchema = z.object({
  approval: approvalSchema,
  dispatch: z.object({}).passthrough().nullable(),
});

const idParams = z.object({ id: z.string().min(1).max(200).describe('the approval id') });
const reasonBody = z
  .strictObject({ reason: z.string().max(2000).optional() })
  .optional()
  .describe('why (kept in the audit trail)');

function outcome(o: ApprovalOutcome): { approval: unknown; dispatch: unknown } {
  return { approval: o.approval, dispatch: o.dispatch ?? null };
}

/** The approvals routes. */
export function approvalRoutes(ctx: ApiContext): RouteSpec[] {
  const approvals = ctx.gateway.approvals;
  return [
    viewerGet({
      url: '/api/approvals',
      tag: 'approvals',
      summary: 'Approval requests by status (default: pending, snoozed ones left out)',
      query: z.object({
        status: z.enum(STATUSES).optional(),
        snoozed: z.enum(['true', 'false']).optional().describe('`true`: include snoozed requests'),
      }),
      responses: {
        200: {
          description: 'the requests, oldest first',
          schema: z.object({ approvals: z.array(approvalSchema) }),
        },
      },
      handler: async ({ query }) => ({
        approvals: await approvals.list({
          ...defined({ status: query.status }),
          includeSnoozed: query.snoozed === 'true',
        }),
      }),
    }),
    viewerGet({
      url: '/api/approvals/:id',
      tag: 'approvals',
      summary: 'One approval request',
      params: idParams,
      responses: { 200: { description: 'the request', schema: approvalSchema } },
      handler: async ({ params }) => {
        const record = await approvals.get(params.id);
        if (record === undefined) {
          throw new FleetgateError('FLEETGATE_APPROVAL_NOT_FOUND', `No approval ${params.id}.`, {
            details: { id: params.id },
          });
        }
        return record;
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/approvals/:id/approve',
      access: 'approver',
      tag: 'approvals',
      summary: 'Approve a held call (the token is the approver)',
      description:
        'Once enough distinct approvers said yes the call is re-checked and sent, exactly once; the answer comes when it ended or was handed to the tracker. A request already decided answers 409 with `details.decidedBy`.',
      params: idParams,
      body: reasonBody,
      responses: { 200: { description: 'the approval and its dispatch', schema: outcomeSchema } },
      handler: async ({ params, body, identity }) =>
        outcome(await approvals.approve(params.id, identity.name, body?.reason)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/approvals/:id/reject',
      access: 'approver',
      tag: 'approvals',
      summary: 'Reject (or veto) a held call; its dispatch ends rejected',
      params: idParams,
      body: reasonBody,
      responses: { 200: { description: 'the approval and its dispatch', schema: outcomeSchema } },
      handler: async ({ params, body, identity }) =>
        outcome(await approvals.reject(params.id, identity.name, body?.reason)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/approvals/:id/snooze',
      access: 'approver',
      tag: 'approvals',
      summary: 'Hide a pending request for a while (it still expires on time)',
      params: idParams,
      body: z
        .strictObject({
          reason: z.string().max(2000).optional(),
          for: z.string().optional().describe('a duration like 15m (default 15m)'),
        })
        .optional(),
      responses: { 200: { description: 'the request', schema: approvalSchema } },
      handler: async ({ params, body, identity }) => {
        const ms = parseDuration(body?.for ?? '15m');
        if (ms === undefined || ms <= 0) {
          throw new FleetgateError(
            'FLEETGATE_HTTP_REQUEST_INVALID',
            `Invalid request body: for: must be a duration like 15m (got ${JSON.stringify(body?.for)})`,
            { details: { issues: [{ path: 'body.for', message: 'must be a duration' }] } },
          );
        }
        return approvals.snooze(params.id, identity.name, ms, body?.reason);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/approvals/:id/answer',
      access: 'operator',
      tag: 'approvals',
      summary: "Answer a task's question (input-required); the answer goes back on the same task",
      params: idParams,
      body: z.strictObject({
        text: z.string().min(1).max(100_000),
        reason: z.string().max(2000).optional(),
      }),
      responses: { 200: { description: 'the request and its dispatch', schema: outcomeSchema } },
      handler: async ({ params, body, identity }) =>
        outcome(await approvals.answer(params.id, identity.name, body.text, body.reason)),
    }),
  ];
}
