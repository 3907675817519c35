/**
 * The gateway configuration (`fleetgate.yaml`): parsed once, validated with zod, every problem of
 * the file reported at once with its line, column and path. Only `service/` and `cli/` read files
 * and the environment.
 */
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument, visit, type Document } from 'yaml';
import { z } from 'zod';
import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { SecretResolver } from '../fleet/index.js';
import { agentConfigSchema } from '../fleet/index.js';
import { BLAST_RADII, HITL_MODES } from '../protocol/index.js';
import type { ConfigProblem } from './config-problems.js';
import {
  duplicateKeys,
  formatProblem,
  issueProblems,
  locate,
  pathText,
  valueAt,
} from './config-problems.js';
import {
  authSchema,
  eventsSchema,
  listenSchema,
  proxySchema,
  replicasSchema,
} from './config-server.js';
import type { UrlReading } from './config-values.js';
import {
  duration,
  parseSize,
  positiveDuration,
  readBusUrl,
  readStoreUrl,
  withDurationUnits,
} from './config-values.js';

export { parseDuration, parseSize } from './config-values.js';

const blastRadiusSchema = z.enum(BLAST_RADII);
const hitlModeSchema = z.enum(HITL_MODES);

const size = (min: number) =>
  z.union([z.string(), z.number()]).transform((value, ctx) => {
    const bytes = parseSize(value);
    if (bytes === undefined || bytes < min) {
      ctx.addIssue({
        code: 'custom',
        message:
          bytes === undefined
            ? `must be a size like 512KiB, 4MiB or a number of bytes (got ${JSON.stringify(value)})`
            : `must be at least ${min} bytes (got ${bytes})`,
      });
      return z.NEVER;
    }
    return bytes;
  });

/** The defaults of the `limits` section (bytes and milliseconds). */
export const DEFAULT_LIMITS = {
  eventBytes: 512 * 1024,
  domainBytes: 16 * 1024 * 1024,
  agentResponseBytes: 16 * 1024 * 1024,
  agentResponseTimeout: 600_000,
  pushBodyBytes: 4 * 1024 * 1024,
  pushBodyTimeout: 10_000,
} as const;

/**
 * `limits`: what the gateway accepts from the network and keeps, each enforced with a coded
 * error (see docs/operations.md, "Resource limits").
 */
const limitsSchema = z
  .strictObject({
    /**
     * Largest event written to the outbox, as JSON bytes: a `world.state.delta` over it is split
     * into parts under it; any other event over it is parked. Keep it below the bus's largest
     * message (NATS `max_payload`, 1 MiB by default).
     */
    eventBytes: size(70 * 1024).default(DEFAULT_LIMITS.eventBytes),
    /** Largest world-state domain (about its JSON size); entries past it are rejected. */
    domainBytes: size(1024).default(DEFAULT_LIMITS.domainBytes),
    /** Most bytes read of one response from an agent. */
    agentResponseBytes: size(1024).default(DEFAULT_LIMITS.agentResponseBytes),
    /** Longest single HTTP exchange with an agent, body included. */
    agentResponseTimeout: duration.default(DEFAULT_LIMITS.agentResponseTimeout),
    /** Largest push-notification body. */
    pushBodyBytes: size(1024).default(DEFAULT_LIMITS.pushBodyBytes),
    /** Longest time reading one push-notification body. */
    pushBodyTimeout: duration.default(DEFAULT_LIMITS.pushBodyTimeout),
  })
  .default(DEFAULT_LIMITS);

/**
 * The problems of a URL key, one issue each: a URL of the wrong shape is shown (its password
 * hidden), a query option at fault is named alone.
 */
function urlProblems(
  read: (url: string) => UrlReading<unknown>,
): (url: string, ctx: z.RefinementCtx) => void {
  return (url, ctx) => {
    const result = read(url);
    if (result.ok) return;
    for (const problem of result.problems) {
      ctx.addIssue({
        code: 'custom',
        message: problem.message,
        params: { named: problem.option !== undefined },
      });
    }
  };
}

/** zod schema of `fleetgate.yaml`. Durations come out in milliseconds. */
export const configSchema = z.strictObject({
  // The service's keys (listen, auth, events, replicas) live in config-server.ts.
  listen: listenSchema,
  /**
   * `sqlite:PATH` or `postgres://…`; `?schema=name` and the driver's TLS and connection
   * parameters (`STORE_URL_OPTIONS`), any other query option refused.
   */
  store: z.string().superRefine(urlProblems(readStoreUrl)).default('sqlite:./data/fleetgate.db'),
  /**
   * Where a gateway that stops while its database is away keeps the task ends it saw but could
   * not commit, for the next start to replay. Default: `<file>.claims` beside a SQLite file,
   * `./data/claims` with PostgreSQL; none for an in-memory store.
   */
  journal: z.string().min(1).optional(),
  /** PostgreSQL timeouts; 0 turns one off (see docs/operations.md, "Failure modes"). */
  storeTimeouts: z
    .strictObject({
      connect: duration.default(10_000),
      statement: duration.default(30_000),
      query: duration.default(40_000),
    })
    .default({ connect: 10_000, statement: 30_000, query: 40_000 }),
  /**
   * How long the gateway keeps its bookkeeping: sent outbox rows, terminal task records, ended
   * dispatch records (0 keeps them forever), swept every `interval` (0: never).
   */
  retention: z
    .strictObject({
      outbox: duration.default(7 * 86_400_000),
      tasks: duration.default(7 * 86_400_000),
      dispatches: duration.default(30 * 86_400_000),
      interval: duration.default(3_600_000),
    })
    .default({
      outbox: 7 * 86_400_000,
      tasks: 7 * 86_400_000,
      dispatches: 30 * 86_400_000,
      interval: 3_600_000,
    }),
  /** `memory` or `nats://host:port`; `?stream=NAME&prefix=name`, any other query option refused. */
  bus: z.string().superRefine(urlProblems(readBusUrl)).default('memory'),
  cards: z
    .strictObject({
      refreshInterval: duration.default(600_000),
      timeout: duration.default(5000),
      concurrency: z.number().int().min(1).max(256).default(16),
      staleAfterFailures: z.number().int().min(1).max(100).default(3),
    })
    .default({ refreshInterval: 600_000, timeout: 5000, concurrency: 16, staleAfterFailures: 3 }),
  /**
   * Each entry is checked against the agent schema by {@link checkConfig} (in the same pass); the
   * agent directory parses them again when it resolves their secrets.
   */
  agents: z.array(z.unknown()).default([]),
  policy: z
    .strictObject({
      unknownRadius: z.enum([...BLAST_RADII, 'proceed']).default('public'),
      approvalAtOrAbove: blastRadiusSchema.default('repo'),
      vetoAtOrAbove: blastRadiusSchema.optional(),
      notifyAtOrAbove: blastRadiusSchema.optional(),
      vetoWindow: positiveDuration.default(60_000),
      approvalTtl: positiveDuration.default(3_600_000),
      rejectCooldown: duration.default(3_600_000),
      approvers: z
        .strictObject({
          fleet: z.number().int().min(1).max(16).default(1),
          public: z.number().int().min(1).max(16).default(2),
        })
        .default({ fleet: 1, public: 2 }),
      /** Per agent/skill: `allow` waives the radius thresholds, `deny` refuses, `minMode` raises. */
      overrides: z
        .array(
          z.strictObject({
            agent: z.string().min(1).default('*'),
            skill: z.string().min(1).default('*'),
            action: z.enum(['allow', 'deny']).optional(),
            minMode: hitlModeSchema.optional(),
            note: z.string().optional(),
          }),
        )
        .default([]),
      /** How often held dispatches are checked for decisions, expiry and ended veto windows. */
      sweepInterval: positiveDuration.default(1000),
    })
    .default({
      unknownRadius: 'public',
      approvalAtOrAbove: 'repo',
      vetoWindow: 60_000,
      approvalTtl: 3_600_000,
      rejectCooldown: 3_600_000,
      approvers: { fleet: 1, public: 2 },
      overrides: [],
      sweepInterval: 1000,
    }),
  domains: z
    .record(z.string().min(1), z.strictObject({ minRadius: blastRadiusSchema }))
    .default({}),
  limits: limitsSchema,
  auth: authSchema.optional(),
  events: eventsSchema,
  replicas: replicasSchema,
  proxy: proxySchema,
});

/** A validated configuration (durations in milliseconds, defaults filled in). */
export type FleetgateConfig = z.infer<typeof configSchema>;

/** A configuration as written: every key optional, durations as `5s` or milliseconds. */
export type FleetgateConfigInput = z.input<typeof configSchema>;

/** Options of {@link checkConfig}, {@link parseConfig} and {@link loadConfigFile}. */
export interface ConfigCheckOptions {
  /**
   * Resolves the environment variables the agents' `auth` names; when given, one that is not set
   * is a problem too (what the gateway would refuse at start).
   */
  secrets?: SecretResolver;
}

/**
 * Every problem of a configuration object in one pass: the sections, each agent entry, agent
 * names used twice and (with `secrets`) unset secrets. No problems means `config` is defined.
 */
export function checkConfig(
  value: unknown,
  options: ConfigCheckOptions = {},
): { config: FleetgateConfig | undefined; problems: ConfigProblem[] } {
  const input = value ?? {};
  const result = configSchema.safeParse(input);
  const problems: ConfigProblem[] = result.success
    ? []
    : result.error.issues.flatMap((issue) => issueProblems(issue, configSchema, input));
  const agents = valueAt(input, ['agents']);
  if (Array.isArray(agents)) {
    const names = new Map<string, number>();
    agents.forEach((entry: unknown, i) => {
      const agent = agentConfigSchema.safeParse(entry);
      if (!agent.success) {
        problems.push(
          ...agent.error.issues.flatMap((issue) =>
            issueProblems(issue, agentConfigSchema, entry, ['agents', i]),
          ),
        );
      }
      const name = valueAt(entry, ['name']);
      if (typeof name === 'string') {
        const first = names.get(name);
        if (first === undefined) names.set(name, i);
        else {
          problems.push({
            path: ['agents', i, 'name'],
            message: `agent name "${name}" is already used by agents[${first}]`,
          });
        }
      }
      if (agent.success && options.secrets !== undefined) {
        problems.push(...unsetSecrets(agent.data, i, options.secrets));
      }
    });
  }
  if (options.secrets !== undefined) problems.push(...tokenSecrets(input, options.secrets));
  const proxied = valueAt(input, ['proxy', 'agents']);
  if (proxied !== null && typeof proxied === 'object' && !Array.isArray(proxied)) {
    const known = new Set(
      (Array.isArray(agents) ? agents : []).map((entry: unknown) => valueAt(entry, ['name'])),
    );
    for (const name of Object.keys(proxied)) {
      if (!known.has(name)) {
        problems.push({
          path: ['proxy', 'agents', name],
          message: `no agent named "${name}" in agents`,
        });
      }
    }
  }
  return { config: problems.length === 0 && result.success ? result.data : undefined, problems };
}

/**
 * The API tokens' environment variables that the gateway would refuse at start (unset, or shorter
 * than {@link MIN_TOKEN_CHARS}), read from the file as written so they are listed with its other
 * problems.
 */
function tokenSecrets(input: unknown, secrets: SecretResolver): ConfigProblem[] {
  const tokens = valueAt(input, ['auth', 'tokens']);
  if (!Array.isArray(tokens)) return [];
  return tokens.flatMap((entry: unknown, i): ConfigProblem[] => {
    const env = valueAt(entry, ['tokenEnv']);
    if (typeof env !== 'string') return [];
    const problem = tokenProblem(env, secrets(env));
    return problem === undefined
      ? []
      : [{ path: ['auth', 'tokens', i, 'tokenEnv'], message: problem }];
  });
}

/** Shortest API token the gateway takes. */
export const MIN_TOKEN_CHARS = 16;

/** Why the token in environment variable `env` (holding `value`) cannot be used, if it cannot. */
export function tokenProblem(env: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return `${env} is not set in the environment`;
  if (value.length < MIN_TOKEN_CHARS)
    return `${env} holds fewer than ${MIN_TOKEN_CHARS} characters`;
  return undefined;
}

function unsetSecrets(
  agent: z.infer<typeof agentConfigSchema>,
  i: number,
  secrets: SecretResolver,
): ConfigProblem[] {
  const unset = (env: string): boolean => {
    const found = secrets(env);
    return found === undefined || found === '';
  };
  const problems: ConfigProblem[] = [];
  const bearer = agent.auth?.bearerEnv;
  if (bearer !== undefined && unset(bearer)) {
    problems.push({
      path: ['agents', i, 'auth', 'bearerEnv'],
      message: `${bearer} is not set in the environment`,
    });
  }
  for (const [header, env] of Object.entries(agent.auth?.headersEnv ?? {})) {
    if (unset(env)) {
      problems.push({
        path: ['agents', i, 'auth', 'headersEnv', header],
        message: `${env} is not set in the environment`,
      });
    }
  }
  return problems;
}

/** `FLEETGATE_CONFIG_INVALID` listing every problem, one line each. */
/**
 * The value of a parsed file. The YAML reader refuses aliases that expand to more than
 * `MAX_ALIAS_COUNT` nodes (a few lines of nested aliases can stand for billions): that is the
 * file's problem, reported at its first alias like a syntax error.
 */
function documentValue(doc: Document, counter: LineCounter, source: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    if (!(error instanceof ReferenceError)) throw error;
    let first: number | undefined;
    visit(doc, {
      Alias(_, node) {
        first = node.range?.[0];
        return visit.BREAK;
      },
    });
    const pos = first === undefined ? undefined : counter.linePos(first);
    throw configError(source, [
      {
        path: [],
        message: `not usable YAML: its aliases (*name) expand to more than ${MAX_ALIAS_COUNT} nodes; write the values out instead`,
        ...defined({ line: pos?.line, column: pos?.col }),
      },
    ]);
  }
}

/** Most nodes the aliases of a configuration file may expand to (the YAML reader's default). */
const MAX_ALIAS_COUNT = 100;

function configError(source: string, problems: readonly ConfigProblem[]): FleetgateError {
  const lines = problems.map((p) => formatProblem(source, p));
  const summary = lines.length === 1 ? lines[0]! : `${source} has ${lines.length} problems`;
  return new FleetgateError(
    'FLEETGATE_CONFIG_INVALID',
    lines.length === 1 ? summary : `${summary}: ${lines.join('; ')}`,
    {
      details: {
        source,
        summary,
        problems: lines,
        issues: problems.map((p) => ({ ...p, path: pathText(p.path) })),
      },
    },
  );
}

/**
 * Validates a configuration object.
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` listing every problem with its path
 * (`details.problems`, one line each).
 */
export function parseConfig(
  value: unknown,
  source = 'config',
  options: ConfigCheckOptions = {},
): FleetgateConfig {
  const { config, problems } = checkConfig(value, options);
  if (config === undefined) throw configError(source, problems);
  return config;
}

/**
 * Reads and validates a YAML (or JSON) configuration file; every problem is reported at once as
 * `file:line:col path: message`.
 *
 * @throws FleetgateError `FLEETGATE_FILE_ACCESS_FAILED` when the file cannot be read,
 * `FLEETGATE_CONFIG_INVALID` listing every problem of its content.
 */
export async function loadConfigFile(
  path: string,
  options: ConfigCheckOptions = {},
): Promise<FleetgateConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^[A-Z]+: /u, '') : '';
    throw new FleetgateError(
      'FLEETGATE_FILE_ACCESS_FAILED',
      `Cannot read the configuration file ${path} (${reason})`,
      { cause: error, details: { path } },
    );
  }
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, uniqueKeys: false, prettyErrors: false });
  const syntax = doc.errors.map((error): ConfigProblem => {
    const pos = counter.linePos(error.pos[0]);
    return {
      path: [],
      message: `not valid YAML: ${error.message.split('\n', 1)[0]!.replace(/ at line \d+, column \d+:?$/u, '')}`,
      line: pos.line,
      column: pos.col,
    };
  });
  // A file that is not YAML has no structure to check: its syntax errors are all there is.
  if (syntax.length > 0) throw configError(path, syntax);
  const value = documentValue(doc, counter, path);
  const problems = [
    ...duplicateKeys(doc, counter),
    ...withDurationUnits(() => checkConfig(value, options)).problems.map((p) =>
      locate(doc, counter, p),
    ),
  ].sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
  if (problems.length > 0) throw configError(path, problems);
  return withDurationUnits(() => parseConfig(value, path, options));
}
