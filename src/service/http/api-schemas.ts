/**
 * The shapes of the HTTP API's answers, as zod schemas: the routes declare them (they become the
 * JSON schemas of `/api/openapi.json`) and the dashboard takes its types from them (`z.infer`), so
 * the page and the API cannot drift apart. This module imports nothing but zod and the radius
 * scale, so the dashboard's type check can read it.
 */
import { z } from 'zod';
import { BLAST_RADII, CALL_DOORS, DISPATCH_STATUSES } from '../../protocol/index.js';

export const radiusSchema = z.enum(BLAST_RADII);
export const roleSchema = z.enum(['viewer', 'operator', 'approver', 'admin']);
const reasonSchema = z.object({ kind: z.string(), detail: z.string() }).passthrough();

export const skillViewSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  declaredRadius: radiusSchema.nullable(),
  floor: radiusSchema.nullable(),
  effectiveRadius: radiusSchema.nullable(),
  pendingRadius: radiusSchema.nullable(),
  hitlMode: z.string().nullable(),
  vetoTtlMs: z.number().nullable(),
  domains: z.array(z.string()).nullable(),
});

export const agentSchema = z.object({
  name: z.string(),
  url: z.string().nullable(),
  status: z.enum(['pending', 'fresh', 'failed', 'stale']),
  description: z.string().nullable(),
  lastFetchedAt: z.number().nullable().describe('epoch milliseconds'),
  lastChangedAt: z.number().nullable(),
  nextRefreshAt: z.number().nullable(),
  failures: z.number(),
  lastError: z.object({ code: z.string(), message: z.string() }).nullable(),
  skills: z.array(skillViewSchema),
  diagnostics: z.array(
    z
      .object({
        code: z.string().optional(),
        message: z.string().optional(),
        severity: z.string().optional(),
        path: z.string().optional(),
      })
      .passthrough(),
  ),
});

export const decisionSchema = z.object({
  action: z.enum(['allow', 'hold', 'deny']),
  mode: z.string().optional(),
  effectiveRadius: z.string().nullable().optional(),
  reason: z.string().optional(),
  reasons: z.array(reasonSchema).optional(),
  approvalId: z.string().optional(),
  goAt: z.number().optional(),
});

export const dispatchSchema = z.object({
  id: z.string(),
  status: z.enum(DISPATCH_STATUSES),
  agent: z.string(),
  skill: z.string(),
  correlationId: z.string(),
  taskId: z.string().nullable(),
  createdAt: z.number(),
  updatedAt: z.number(),
  result: z
    .object({
      state: z.string().optional(),
      text: z.string().optional(),
      error: z.object({ code: z.string(), message: z.string() }).passthrough().optional(),
    })
    .passthrough()
    .nullable(),
  requestedBy: z
    .string()
    .nullable()
    .describe(
      "who asked for the call: the API token's name, the A2A proxy's caller or what a library caller gave; null when nobody was named (no token configured, or a call recorded before the gateway kept it)",
    ),
  door: z
    .enum(CALL_DOORS)
    .nullable()
    .describe(
      'the door the call came through: `api` (this HTTP API: the CLI, the dashboard, any HTTP client), `a2a-proxy`, or `library` (a program that embeds the gateway); null for a call recorded before the gateway kept it',
    ),
});

export const APPROVAL_STATUSES = [
  'pending',
  'approved',
  'rejected',
  'expired',
  'consumed',
  'void',
] as const;

export const approvalSchema = z
  .object({
    id: z.string(),
    kind: z.enum(['dispatch', 'veto', 'checkpoint', 'follow-up']),
    dispatchId: z.string(),
    agent: z.string(),
    skill: z.string(),
    fingerprint: z
      .string()
      .optional()
      .describe('SHA-256 of the exact call the request is bound to'),
    policyVersion: z.string().optional(),
    mode: z.string(),
    radius: radiusSchema.nullable(),
    status: z.enum(APPROVAL_STATUSES),
    requestedBy: z.string().nullable(),
    requiredApprovals: z.number(),
    approvals: z.array(z.object({ by: z.string(), at: z.number() }).passthrough()),
    decidedBy: z.string().nullable(),
    decidedAt: z.number().nullable(),
    reason: z.string().nullable().optional(),
    domains: z.array(z.string()).nullable().optional(),
    reasons: z.array(reasonSchema),
    createdAt: z.number(),
    expiresAt: z.number(),
    snoozedUntil: z.number().nullable().optional(),
    question: z.string().nullable(),
    answer: z
      .string()
      .nullable()
      .optional()
      .describe('the answer a person gave to a question (`checkpoint`), once answered'),
    input: z
      .object({ text: z.string().optional(), data: z.unknown().optional() })
      .passthrough()
      .nullable()
      .optional()
      .describe('the held input (left out of search results)'),
  })
  .passthrough();

export const domainSchema = z.object({
  name: z.string(),
  version: z.number().describe('changes applied since the domain was created, gap-free'),
  state: z.record(z.string(), z.unknown()),
  updatedAt: z.number().describe('epoch milliseconds'),
});

export const auditRecordSchema = z
  .object({
    seq: z.number(),
    domain: z.string(),
    path: z.string(),
    op: z.string(),
    value: z.unknown(),
    previous: z.unknown().optional(),
    next: z.unknown().optional(),
    status: z.enum(['applied', 'rejected']),
    reason: z.string().optional(),
    version: z.number().optional(),
    agent: z.string(),
    skill: z.string(),
    taskId: z.string(),
    eventId: z.string(),
    time: z.string(),
    recordedAt: z.number(),
  })
  .passthrough();

export const sessionSchema = z.object({
  name: z.string(),
  role: roleSchema,
  authenticated: z.boolean(),
});

export const explanationSchema = z
  .object({
    agent: z.string(),
    skill: z.string(),
    policyVersion: z.string(),
    decision: z
      .object({
        mode: z.string(),
        deny: z.object({ reason: z.string() }).passthrough().optional(),
        effectiveRadius: radiusSchema.nullable(),
        reasons: z.array(reasonSchema),
        vetoTtlMs: z.number().optional(),
        approvers: z.number(),
      })
      .passthrough(),
  })
  .passthrough();

export const storyEventSchema = z.object({
  id: z.string(),
  topic: z.string(),
  time: z.string(),
  at: z.number().describe('epoch ms the event was committed'),
  payload: z.record(z.string(), z.unknown()),
});

/** One world change as a call's story and the world search show it (a row of the audit log). */
const auditEffectSchema = z.object({
  seq: z.number(),
  domain: z.string(),
  path: z.string(),
  op: z.string(),
  value: z.unknown(),
  previous: z.unknown(),
  next: z.unknown(),
  status: z.enum(['applied', 'rejected']),
  reason: z.string().nullable(),
  version: z.number().nullable(),
});

/** A world change a call's task made, with when it was recorded. */
export const storyEffectSchema = auditEffectSchema.extend({ at: z.number() });

export const storySchema = z.object({
  dispatch: dispatchSchema,
  send: z
    .object({
      owner: z.string(),
      messageId: z.string(),
      contextId: z.string(),
      sentAt: z.number().nullable(),
    })
    .nullable()
    .describe('what was sent to the agent and by which gateway process'),
  traceparent: z.string().nullable(),
  task: z
    .object({
      state: z.string(),
      createdAt: z.number(),
      updatedAt: z.number(),
      terminalAt: z.number().nullable(),
      terminalVia: z.string().nullable(),
    })
    .nullable(),
  events: z.array(storyEventSchema).describe('oldest first'),
  approvals: z.array(approvalSchema),
  effects: z.array(storyEffectSchema),
  cost: z.record(z.string(), z.unknown()).nullable(),
});

export const statusSchema = z.object({
  version: z.string(),
  instance: z.string().describe('an id of this gateway process: a new one after a restart'),
  startedAt: z.number(),
  uptimeMs: z.number(),
});

export const searchDispatchSchema = dispatchSchema.omit({ requestedBy: true, door: true }).extend({
  radius: radiusSchema.nullable().describe("the skill's effective radius now"),
});

/** A world change the world search found, with the task that made it. */
export const searchEffectSchema = auditEffectSchema.extend({
  agent: z.string(),
  skill: z.string(),
  taskId: z.string(),
  recordedAt: z.number(),
});

export const searchApprovalSchema = approvalSchema;

/** A page of a search. */
export function searchPage<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    next: z.string().nullable().describe('the cursor of the next page; null on the last'),
    total: z.number().nullable().describe('how many match in all (null with `count=false`)'),
  });
}
