/**
 * The gateway configuration (`fleetgate.yaml`): parsed once, validated with zod, every problem
 * reported with its path. Only `service/` and `cli/` read files and the environment.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { FleetgateError } from '../protocol/index.js';
import { formatIssues } from '../fleet/index.js';
import { BLAST_RADII, HITL_MODES } from '../protocol/index.js';
import { authSchema, eventsSchema, listenSchema, replicasSchema } from './config-server.js';

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Parses `250ms`, `5s`, `10m`, `1h`, `2d` or a number of milliseconds. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(value.trim());
  if (match === null) return undefined;
  return Math.round(Number(match[1]) * UNITS[match[2]!]!);
}

const blastRadiusSchema = z.enum(BLAST_RADII);
const hitlModeSchema = z.enum(HITL_MODES);

const duration = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a duration like 5s, 10m or 1h (got ${JSON.stringify(value)})`,
    });
    return z.NEVER;
  }
  return ms;
});

/** zod schema of `fleetgate.yaml`. Durations come out in milliseconds. */
export const configSchema = z.strictObject({
  // The service's keys (listen, auth, events, replicas) live in config-server.ts.
  listen: listenSchema,
  store: z
    .string()
    .regex(/^(sqlite:|postgres(ql)?:\/\/)/, 'must be sqlite:PATH or postgres://…')
    .default('sqlite:./data/fleetgate.db'),
  bus: z
    .string()
    .regex(/^(memory|nats:\/\/.+)$/, 'must be memory or nats://host:port')
    .default('memory'),
  cards: z
    .strictObject({
      refreshInterval: duration.default(600_000),
      timeout: duration.default(5000),
      concurrency: z.number().int().min(1).max(256).default(16),
      staleAfterFailures: z.number().int().min(1).max(100).default(3),
    })
    .default({ refreshInterval: 600_000, timeout: 5000, concurrency: 16, staleAfterFailures: 3 }),
  /** Validated in full by the agent directory (it resolves auth from the environment). */
  agents: z.array(z.unknown()).default([]),
  policy: z
    .strictObject({
      unknownRadius: z.union([blastRadiusSchema, z.literal('proceed')]).default('public'),
      approvalAtOrAbove: blastRadiusSchema.default('repo'),
      vetoAtOrAbove: blastRadiusSchema.optional(),
      notifyAtOrAbove: blastRadiusSchema.optional(),
      vetoWindow: duration.default(60_000),
      approvalTtl: duration.default(3_600_000),
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
      sweepInterval: duration.default(1000),
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
  auth: authSchema.optional(),
  events: eventsSchema,
  replicas: replicasSchema,
});

/** A validated configuration (durations in milliseconds, defaults filled in). */
export type FleetgateConfig = z.infer<typeof configSchema>;

/** A configuration as written: every key optional, durations as `5s` or milliseconds. */
export type FleetgateConfigInput = z.input<typeof configSchema>;

/**
 * Validates a configuration object.
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` listing every problem with its path.
 */
export function parseConfig(value: unknown, source = 'config'): FleetgateConfig {
  const result = configSchema.safeParse(value ?? {});
  if (result.success) return result.data;
  const problems = formatIssues('', result.error).map((p) => p.replace(/^\./, ''));
  throw new FleetgateError('FLEETGATE_CONFIG_INVALID', `${source}:\n  ${problems.join('\n  ')}`, {
    details: { source, problems },
  });
}

/**
 * Reads and validates a YAML (or JSON) configuration file.
 *
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID`
 */
export async function loadConfigFile(path: string): Promise<FleetgateConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new FleetgateError(
      'FLEETGATE_CONFIG_INVALID',
      `${path}: cannot read (${(error as Error).message})`,
      {
        cause: error,
      },
    );
  }
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    const where =
      error instanceof YAMLParseError ? ` at line ${error.linePos?.[0].line ?? '?'}` : '';
    throw new FleetgateError(
      'FLEETGATE_CONFIG_INVALID',
      `${path}: not valid YAML${where}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  return parseConfig(value, path);
}
