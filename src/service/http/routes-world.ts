/** The world-state routes: `GET /api/world`, `/api/world/:domain`, `/api/world/:domain/history`. */
import { z } from 'zod';
import { FleetgateError } from '../../protocol/index.js';
import { defined } from '../../protocol/fields/index.js';
import type { ApiContext } from './context.js';
import type { RouteSpec } from './route.js';
import { viewerGet } from './route.js';
import { auditRecordSchema, domainSchema } from './api-schemas.js';

const domainParams = z.object({ domain: z.string().min(1).max(200) });

function unknownDomain(domain: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_WORLD_DOMAIN_UNKNOWN',
    `No world-state domain ${domain} (none was seeded or changed yet).`,
    { details: { domain } },
  );
}

/** The world-state routes. */
export function worldRoutes(ctx: ApiContext): RouteSpec[] {
  const world = ctx.gateway.world;
  return [
    viewerGet({
      url: '/api/world',
      tag: 'world',
      summary: 'The materialised world state: every domain',
      responses: {
        200: {
          description: 'domains by name',
          schema: z.object({ domains: z.record(z.string(), domainSchema) }),
        },
      },
      handler: async () => ({ domains: await world.getWorld() }),
    }),
    viewerGet({
      url: '/api/world/:domain',
      tag: 'world',
      summary: 'One world-state domain',
      params: domainParams,
      responses: { 200: { description: 'the domain', schema: domainSchema } },
      handler: async ({ params }) => {
        const found = await world.getDomain(params.domain);
        if (found === undefined) throw unknownDomain(params.domain);
        return found;
      },
    }),
    viewerGet({
      url: '/api/world/:domain/history',
      tag: 'world',
      summary: "A domain's audit log: every applied and rejected entry",
      params: domainParams,
      query: z.object({
        path: z.string().max(500).optional().describe('only this path and below'),
        since: z.string().optional().describe('epoch ms or RFC 3339'),
        afterSeq: z.coerce.number().int().min(0).optional().describe('paging: only after this seq'),
        limit: z.coerce.number().int().min(1).max(10_000).optional(),
        order: z.enum(['asc', 'desc']).optional(),
        status: z.enum(['applied', 'rejected']).optional(),
      }),
      responses: {
        200: {
          description: 'audit records',
          schema: z.object({ records: z.array(auditRecordSchema) }),
        },
      },
      handler: async ({ params, query }) => {
        if ((await world.getDomain(params.domain)) === undefined) {
          throw unknownDomain(params.domain);
        }
        const since =
          query.since === undefined
            ? undefined
            : /^\d+$/.test(query.since)
              ? Number(query.since)
              : query.since;
        const records = await world.history(
          params.domain,
          defined({
            path: query.path,
            since,
            afterSeq: query.afterSeq,
            limit: query.limit,
            order: query.order,
            status: query.status,
          }),
        );
        return { records };
      },
    }),
  ];
}
