/**
 * Search and paging for the dashboard's long lists, done by the store: dispatches, world changes
 * (the audit log) and approval requests, each filtered by agent, skill, radius, status, domain and
 * text, newest first, in pages with an opaque cursor, with the count of everything that matches.
 *
 * - `GET /api/search/dispatches`
 * - `GET /api/search/effects`
 * - `GET /api/search/approvals`
 *
 * A dispatch and an audit record carry no radius or domain of their own: those filters select the
 * skills that have that effective radius now, or declare that domain, from the fleet's cards.
 */
import { sql, type RawBuilder } from 'kysely';
import { z } from 'zod';
import { BLAST_RADII } from '../../protocol/index.js';
import type { Gateway } from '../gateway-types.js';
import type { ApiContext } from './context.js';
import type { RouteSpec } from './route.js';
import { viewerGet } from './route.js';
import { fleetView } from '../fleet-view.js';
import { BY_CREATED, BY_SEQ, queryPage } from './paged-query.js';
import { auditEffect, num, parseJson, str } from './sql-values.js';
import {
  searchApprovalSchema as approvalItemSchema,
  searchDispatchSchema as dispatchItemSchema,
  searchEffectSchema as effectItemSchema,
  searchPage as page,
} from './api-schemas.js';
import { defined } from '../../protocol/fields/index.js';

/** The store the searches read. */
type Db = ApiContext['ports']['store']['db'];

const radius = z.enum(BLAST_RADII as unknown as [string, ...string[]]);

const common = {
  agent: z.string().min(1).max(63).optional(),
  skill: z.string().min(1).max(200).optional(),
  radius: radius.optional().describe("the skill's effective radius (dispatches, effects: now)"),
  domain: z.string().min(1).max(200).optional(),
  text: z
    .string()
    .min(1)
    .max(200)
    .superRefine((text, ctx) => {
      // A NUL ended the LIKE pattern on SQLite: every row matched.
      const control = [...text].map((c) => c.codePointAt(0)!).find((n) => n < 0x20 || n === 0x7f);
      if (control !== undefined) {
        const code = control.toString(16).toUpperCase().padStart(4, '0');
        ctx.addIssue({
          code: 'custom',
          message: `must not hold control characters (got U+${code})`,
        });
      }
    })
    .optional()
    .describe('a substring, case-insensitive'),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().min(1).max(400).optional().describe('`next` of the previous page'),
  count: z
    .enum(['true', 'false'])
    .default('true')
    .describe('`false`: leave the total out (a page after the first needs it no more)'),
};

/** `%text%` for LIKE, its wildcards escaped (`\` is the escape character). */
function like(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** `text` found in any of `columns` (case-insensitive; a null column counts as empty). */
function textCondition(text: string, columns: readonly string[]): RawBuilder<unknown> {
  const t = like(text);
  const found = columns.map((c) => sql`lower(coalesce(${sql.ref(c)}, '')) like ${t} escape '\\'`);
  return sql`(${sql.join(found, sql` or `)})`;
}

/** The conditions every search starts with: the agent and the skill, when given. */
function agentSkillConditions(query: {
  agent?: string | undefined;
  skill?: string | undefined;
}): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  if (query.agent !== undefined) conditions.push(sql`agent = ${query.agent}`);
  if (query.skill !== undefined) conditions.push(sql`skill = ${query.skill}`);
  return conditions;
}

/** The (agent, skill) pairs of the fleet with this radius now, or declaring this domain. */
function skillsWhere(
  gw: Pick<Gateway, 'agents'>,
  filter: { radius?: string; domain?: string },
): [string, string][] {
  const pairs: [string, string][] = [];
  for (const agent of fleetView(gw)) {
    for (const s of agent.skills) {
      if (filter.radius !== undefined && s.effectiveRadius !== filter.radius) continue;
      if (filter.domain !== undefined && !(s.domains ?? []).includes(filter.domain)) continue;
      pairs.push([agent.name, s.id]);
    }
  }
  return pairs;
}

/** Each (agent, skill) pair's effective radius now, by `agent\u0000skill`. */
function radiusOf(gw: Pick<Gateway, 'agents'>): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const agent of fleetView(gw)) {
    for (const s of agent.skills) out.set(`${agent.name}\u0000${s.id}`, s.effectiveRadius);
  }
  return out;
}

/** The pairs as one condition: per skill, the agents offering it (a few `in` lists). */
function pairCondition(pairs: [string, string][]): RawBuilder<unknown> {
  if (pairs.length === 0) return sql`1 = 0`;
  const bySkill = new Map<string, string[]>();
  for (const [agent, skill] of pairs) {
    const agents = bySkill.get(skill) ?? [];
    agents.push(agent);
    bySkill.set(skill, agents);
  }
  return sql`(${sql.join(
    [...bySkill].map(
      ([skill, agents]) => sql`(skill = ${skill} and agent in (${sql.join(agents)}))`,
    ),
    sql` or `,
  )})`;
}

/**
 * A search route: a viewer's `GET` taking the filters every search takes ({@link common}) and its
 * own, answering a page of items.
 */
function searchRoute<F extends z.ZodRawShape>(route: {
  url: string;
  tag: string;
  summary: string;
  filters: F;
  itemSchema: z.ZodType;
  handler: (input: { query: z.output<z.ZodObject<typeof common & F>> }) => Promise<unknown>;
}): RouteSpec {
  return viewerGet({
    url: route.url,
    tag: route.tag,
    summary: route.summary,
    query: z.object({ ...common, ...route.filters }),
    responses: { 200: { description: 'a page', schema: page(route.itemSchema) } },
    handler: route.handler,
  });
}

/** The search routes. */
export function searchRoutes(ctx: ApiContext): RouteSpec[] {
  const gw = ctx.gateway;
  const db = ctx.ports.store.db;
  return [dispatchSearchRoute(gw, db), effectSearchRoute(gw, db), approvalSearchRoute(db)];
}

/** `GET /api/search/dispatches`. */
function dispatchSearchRoute(gw: Pick<Gateway, 'agents'>, db: Db): RouteSpec {
  return searchRoute({
    url: '/api/search/dispatches',
    tag: 'dispatch',
    summary: 'Search dispatches: filters, newest first, paged with a cursor, with the total',
    filters: { status: z.string().min(1).max(40).optional() },
    itemSchema: dispatchItemSchema,
    handler: async ({ query }) => {
      const conditions = agentSkillConditions(query);
      if (query.status !== undefined) conditions.push(sql`status = ${query.status}`);
      if (query.radius !== undefined || query.domain !== undefined) {
        conditions.push(
          pairCondition(skillsWhere(gw, defined({ radius: query.radius, domain: query.domain }))),
        );
      }
      if (query.text !== undefined) {
        const columns = ['id', 'correlation_id', 'task_id', 'result', 'agent', 'skill'];
        conditions.push(textCondition(query.text, columns));
      }
      const radii = radiusOf(gw);
      return queryPage(db, {
        table: 'fleetgate_dispatch',
        columns:
          'id, agent, skill, correlation_id, status, task_id, created_at, updated_at, result',
        order: BY_CREATED,
        conditions,
        query,
        item: (r) => ({
          id: String(r.id),
          agent: String(r.agent),
          skill: String(r.skill),
          correlationId: String(r.correlation_id),
          status: String(r.status),
          taskId: str(r.task_id),
          createdAt: num(r.created_at) ?? 0,
          updatedAt: num(r.updated_at) ?? 0,
          result: parseJson(r.result),
          radius: radii.get(`${String(r.agent)}\u0000${String(r.skill)}`) ?? null,
        }),
      });
    },
  });
}

/** `GET /api/search/effects`: the audit log of every domain. */
function effectSearchRoute(gw: Pick<Gateway, 'agents'>, db: Db): RouteSpec {
  return searchRoute({
    url: '/api/search/effects',
    tag: 'world',
    summary: 'Search world changes (the audit log of every domain): filters, newest first, paged',
    filters: {
      status: z.enum(['applied', 'rejected']).optional(),
      path: z.string().min(1).max(500).optional().describe('this path and below'),
    },
    itemSchema: effectItemSchema,
    handler: async ({ query }) => {
      const conditions = agentSkillConditions(query);
      if (query.status !== undefined) conditions.push(sql`status = ${query.status}`);
      if (query.domain !== undefined) conditions.push(sql`domain = ${query.domain}`);
      if (query.path !== undefined) {
        conditions.push(
          sql`(path = ${query.path} or substr(path, 1, ${query.path.length + 1}) = ${`${query.path}.`})`,
        );
      }
      if (query.radius !== undefined) {
        conditions.push(pairCondition(skillsWhere(gw, { radius: query.radius })));
      }
      if (query.text !== undefined) {
        conditions.push(textCondition(query.text, ['path', 'value', 'task_id', 'reason']));
      }
      return queryPage(db, {
        table: 'fleetgate_world_audit',
        columns: `seq, domain, path, op, value, previous, next, status, reason, version, agent,
          skill, task_id, recorded_at`,
        order: BY_SEQ,
        conditions,
        query,
        item: (r) => ({
          ...auditEffect(r),
          agent: String(r.agent),
          skill: String(r.skill),
          taskId: String(r.task_id),
          recordedAt: num(r.recorded_at) ?? 0,
        }),
      });
    },
  });
}

/** `GET /api/search/approvals`. */
function approvalSearchRoute(db: Db): RouteSpec {
  return searchRoute({
    url: '/api/search/approvals',
    tag: 'approvals',
    summary: 'Search approval requests: filters, newest first, paged, with the total',
    filters: {
      status: z
        .enum(['pending', 'approved', 'rejected', 'expired', 'consumed', 'void', 'decided'])
        .optional()
        .describe('`decided`: every status but pending'),
      kind: z.enum(['dispatch', 'veto', 'checkpoint', 'follow-up']).optional(),
      by: z.string().min(1).max(200).optional().describe('asked, approved or decided by'),
    },
    itemSchema: approvalItemSchema,
    handler: async ({ query }) => {
      const conditions = agentSkillConditions(query);
      if (query.status === 'decided') conditions.push(sql`status <> 'pending'`);
      else if (query.status !== undefined) conditions.push(sql`status = ${query.status}`);
      if (query.kind !== undefined) conditions.push(sql`kind = ${query.kind}`);
      if (query.radius !== undefined) conditions.push(sql`radius = ${query.radius}`);
      if (query.domain !== undefined) {
        conditions.push(sql`domains like ${like(`"${query.domain}"`)} escape '\\'`);
      }
      if (query.by !== undefined) {
        conditions.push(
          sql`(requested_by = ${query.by} or decided_by = ${query.by}
              or approvals like ${like(`"by":"${query.by}"`)} escape '\\')`,
        );
      }
      if (query.text !== undefined) {
        const columns = [
          ...['input', 'reason', 'id', 'dispatch_id', 'decided_by', 'requested_by'],
          ...['question', 'answer'],
        ];
        conditions.push(textCondition(query.text, columns));
      }
      return queryPage(db, {
        table: 'fleetgate_policy_approval',
        columns: `id, kind, dispatch_id, agent, skill, mode, radius, status, requested_by,
          required_approvals, approvals, decided_by, decided_at, reason, created_at, expires_at,
          fingerprint, policy_version, domains, reasons, question, answer, snoozed_until`,
        order: BY_CREATED,
        conditions,
        query,
        item: (r) => {
          const votes = parseJson(r.approvals);
          return {
            id: String(r.id),
            kind: String(r.kind),
            dispatchId: String(r.dispatch_id),
            agent: String(r.agent),
            skill: String(r.skill),
            mode: String(r.mode),
            radius: str(r.radius),
            status: String(r.status),
            requestedBy: str(r.requested_by),
            requiredApprovals: num(r.required_approvals) ?? 1,
            approvals: (Array.isArray(votes) ? votes : []) as { by: string; at: number }[],
            decidedBy: str(r.decided_by),
            decidedAt: num(r.decided_at),
            reason: str(r.reason),
            createdAt: num(r.created_at) ?? 0,
            expiresAt: num(r.expires_at) ?? 0,
            fingerprint: String(r.fingerprint),
            policyVersion: String(r.policy_version),
            domains: (parseJson(r.domains) ?? null) as string[] | null,
            reasons: (parseJson(r.reasons) ?? []) as { kind: string; detail: string }[],
            question: str(r.question),
            answer: str(r.answer),
            snoozedUntil: num(r.snoozed_until),
          };
        },
      });
    },
  });
}
