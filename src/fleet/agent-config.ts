import { z } from 'zod';
import { FleetgateError } from '../protocol/index.js';
import type { BlastRadius } from '../protocol/index.js';
import { BLAST_RADII, LIMITS } from '../protocol/index.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Map)
  );
}
const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** zod schema of one agent of the `agents:` config section. */
export const agentConfigSchema = z.strictObject({
  name: z
    .string()
    .regex(
      AGENT_NAME,
      'must be 1-63 lowercase letters, digits, "-" or "_", starting with a letter or digit',
    ),
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  auth: z
    .strictObject({
      /** Name of the environment variable holding a bearer token. */
      bearerEnv: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
      /** Extra headers whose values come from environment variables: `{ "X-Api-Key": "ENV" }`. */
      headersEnv: z
        .record(
          z.string().min(1),
          z.string().regex(ENV_NAME, 'must be an environment variable name'),
        )
        .optional(),
    })
    .optional(),
  /**
   * Operator floors: the narrowest radius a skill is treated as, whatever the card says. Read into
   * a `Map` from the object's own entries, so every skill name is a key like any other: a plain
   * object (or zod's record) silently drops `__proto__` and answers `constructor` with Object's.
   */
  floors: z
    .preprocess(
      (value) => (isPlainRecord(value) ? new Map(Object.entries(value)) : value),
      z.map(z.string().min(1).max(LIMITS.nameLength), z.enum(BLAST_RADII)),
    )
    .optional(),
  transport: z.enum(['JSONRPC', 'HTTP+JSON']).optional(),
  /**
   * Whether a call the gateway waits for goes as `SendStreamingMessage` when the card declares
   * streaming (default), so the task's id is known before the answer; `false` keeps
   * `SendMessage`, for an agent whose streams misbehave.
   */
  preferStreaming: z.boolean().optional(),
});

/** One agent as configured. */
export type AgentConfig = z.infer<typeof agentConfigSchema>;

/** An agent config with its secrets resolved into headers. */
export interface AgentEntry {
  name: string;
  url: string;
  /** Request headers (auth) resolved from the environment variables the config names. */
  headers: Readonly<Record<string, string>>;
  /** Operator floors by skill id. */
  floors: ReadonlyMap<string, BlastRadius>;
  transport?: 'JSONRPC' | 'HTTP+JSON';
  /** `false`: calls the gateway waits for are never streamed (see the config's key). */
  preferStreaming?: false;
}

/** Resolves a secret by environment-variable name; only `service/` and `cli/` read the environment. */
export type SecretResolver = (envName: string) => string | undefined;

/** Formats zod issues as `path: message` lines under a base path. */
export function formatIssues(base: string, error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.reduce<string>(
      (acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : `${acc}.${String(key)}`),
      base,
    );
    return `${path}: ${issue.message}`;
  });
}

/**
 * Validates one agent config and resolves its secrets.
 *
 * @param where the config path of the entry, e.g. `agents[2]`, named in errors.
 * @throws FleetgateError `FLEETGATE_CONFIG_INVALID` listing every problem with its path.
 */
export function parseAgentConfig(
  value: unknown,
  where: string,
  secrets: SecretResolver,
): AgentEntry {
  const result = agentConfigSchema.safeParse(value);
  if (!result.success) {
    const problems = formatIssues(where, result.error);
    throw new FleetgateError('FLEETGATE_CONFIG_INVALID', problems.join('\n'), {
      details: { problems },
    });
  }
  const config = result.data;
  const headers: Record<string, string> = {};
  const missing: string[] = [];
  if (config.auth?.bearerEnv !== undefined) {
    const token = secrets(config.auth.bearerEnv);
    if (token === undefined || token === '')
      missing.push(`${where}.auth.bearerEnv: ${config.auth.bearerEnv} is not set`);
    else headers.authorization = `Bearer ${token}`;
  }
  for (const [header, env] of Object.entries(config.auth?.headersEnv ?? {})) {
    const value = secrets(env);
    if (value === undefined || value === '')
      missing.push(`${where}.auth.headersEnv.${header}: ${env} is not set`);
    else headers[header.toLowerCase()] = value;
  }
  if (missing.length > 0) {
    throw new FleetgateError('FLEETGATE_CONFIG_INVALID', missing.join('\n'), {
      details: { problems: missing },
    });
  }
  const entry: AgentEntry = {
    name: config.name,
    url: config.url.replace(/\/+$/, ''),
    headers,
    floors: new Map(config.floors),
  };
  if (config.transport !== undefined) entry.transport = config.transport;
  if (config.preferStreaming === false) entry.preferStreaming = false;
  return entry;
}
