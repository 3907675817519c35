/**
 * The dashboard's routes: `GET /` and `GET /assets/:file` serve the single-page app built into
 * `dist/dashboard/` (by `npm run build`, which `prepare` runs on install); `GET /api/session`
 * tells the page who its token is, so it can hide controls the role may not use (the API refuses
 * them anyway); `GET /api/policy/explain` gives the gate's decision for a call before it is sent.
 * Without a built dashboard (a checkout where the build did not run) the small live page of
 * `dashboard.ts` answers `/` instead.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { FleetgateError } from '../../protocol/index.js';
import { cardSkills } from '../fleet-view.js';
import type { ApiContext } from './context.js';
import { dashboardRoute } from './dashboard.js';
import { callRoutes } from './routes-calls.js';
import { explanationSchema, sessionSchema } from './api-schemas.js';
import { searchRoutes } from './routes-search.js';
import type { RouteSpec } from './route.js';
import { defineRoute, viewerGet } from './route.js';

/**
 * Where the build lands, found from the package's root: the same place whether this module runs
 * from `src/` (tsx) or bundled into `dist/` (the package), where it has no place of its own.
 */
const DASHBOARD = new URL('dist/dashboard/', import.meta.resolve('fleetgate/package.json'));

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

/** Asset names as Vite writes them: one path segment, no dot files, nothing to climb out with. */
const ASSET = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // uPlot and the radius badges set element styles.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** The directory of the built dashboard, or undefined when it was not built. */
export function dashboardDirectory(): string | undefined {
  const dir = fileURLToPath(DASHBOARD);
  return existsSync(join(dir, 'index.html')) ? dir : undefined;
}

function notFound(file: string): FleetgateError {
  return new FleetgateError('FLEETGATE_HTTP_ROUTE_NOT_FOUND', `No dashboard file ${file}.`, {
    details: { file },
  });
}

/** The routes of the dashboard; `directory` overrides where the build is looked for. */
export function dashboardRoutes(ctx: ApiContext, directory = dashboardDirectory()): RouteSpec[] {
  return [
    sessionRoute(),
    explainRoute(ctx),
    faviconRoute(),
    ...callRoutes(ctx),
    ...searchRoutes(ctx),
    ...(directory === undefined ? [dashboardRoute()] : builtDashboardRoutes(directory)),
  ];
}

/** `GET /api/policy/explain`: the gate's decision for a call, before it is sent. */
function explainRoute(ctx: ApiContext): RouteSpec {
  const gw = ctx.gateway;
  return viewerGet({
    url: '/api/policy/explain',
    tag: 'approvals',
    summary:
      "The gate's decision for a call to AGENT SKILL now, with every reason (nothing is sent)",
    description:
      'An agent the gateway does not know answers 404 `FLEETGATE_AGENT_UNKNOWN`; a skill its card does not list, 404 `FLEETGATE_SKILL_UNKNOWN`.',
    query: z.object({
      agent: z.string().min(1).max(63),
      skill: z.string().min(1).max(200),
      text: z
        .string()
        .max(100_000)
        .optional()
        .describe('an input, to get the call fingerprint too'),
    }),
    responses: {
      200: {
        description: 'the decision: mode, effective radius, reasons, approvers needed or denial',
        schema: explanationSchema,
      },
    },
    handler: async ({ query }) => {
      const state = gw.agents.state(query.agent);
      if (state === undefined) {
        throw new FleetgateError('FLEETGATE_AGENT_UNKNOWN', `No agent ${query.agent}.`, {
          details: { agent: query.agent },
        });
      }
      // A skill the agent's card does not list is a mistake, not a call to explain. (Without a
      // card yet, the gate's answer for an unknown declaration is the one that applies.)
      const skills = cardSkills(state.card).map((k) => k.id);
      if (state.card !== undefined && !skills.includes(query.skill)) {
        throw new FleetgateError(
          'FLEETGATE_SKILL_UNKNOWN',
          `Agent ${query.agent} has no skill ${query.skill} (its card lists ${skills.join(', ') || 'none'}).`,
          { details: { agent: query.agent, skill: query.skill, skills } },
        );
      }
      return gw.approvals.explain(
        query.agent,
        query.skill,
        query.text === undefined ? undefined : { text: query.text },
      );
    },
  });
}

/** `GET /api/session`: who the caller's token is. */
function sessionRoute(): RouteSpec {
  return viewerGet({
    url: '/api/session',
    tag: 'service',
    summary: "Who the caller's token is: its name and role",
    responses: {
      200: {
        description: 'the caller',
        schema: sessionSchema,
      },
    },
    handler: ({ identity }) =>
      Promise.resolve({
        name: identity.name,
        role: identity.role,
        authenticated: identity.authenticated,
      }),
  });
}

/**
 * `GET /favicon.ico`. No icon of its own: an empty answer, cached, so a browser asks once and
 * reports no error.
 */
function faviconRoute(): RouteSpec {
  return defineRoute({
    method: 'GET',
    url: '/favicon.ico',
    access: 'public',
    tag: 'service',
    summary: 'No icon (204): the dashboard has none, and a browser asks on every page',
    responses: { 204: { description: 'no content' } },
    handler: ({ reply }) =>
      Promise.resolve(reply.code(204).header('cache-control', 'public, max-age=86400').send()),
  });
}

/** `GET /` and `GET /assets/:file`: the built single-page app in `directory`. */
function builtDashboardRoutes(directory: string): RouteSpec[] {
  let index: Buffer | undefined;
  return [
    {
      method: 'GET',
      url: '/',
      access: 'public',
      tag: 'service',
      summary: 'The dashboard (a single-page app over this API)',
      responses: { 200: { description: 'HTML', type: 'text/html' } },
      handler: async ({ reply }) => {
        index ??= await readFile(join(directory, 'index.html'));
        return reply
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('content-security-policy', CSP)
          .header('x-content-type-options', 'nosniff')
          .send(index);
      },
    },
    defineRoute({
      method: 'GET',
      url: '/assets/:file',
      access: 'public',
      tag: 'service',
      summary: 'A file of the dashboard (script, style sheet)',
      params: z.object({ file: z.string().min(1).max(200) }),
      responses: { 200: { description: 'the file' } },
      handler: async ({ params, reply }) => {
        const type = TYPES[extname(params.file)];
        if (!ASSET.test(params.file) || type === undefined) throw notFound(params.file);
        let body: Buffer;
        try {
          body = await readFile(join(directory, 'assets', params.file));
        } catch {
          throw notFound(params.file);
        }
        // Vite names files by content hash: a name never changes content.
        return reply
          .type(type)
          .header('cache-control', 'public, max-age=31536000, immutable')
          .header('x-content-type-options', 'nosniff')
          .send(body);
      },
    }),
  ];
}
