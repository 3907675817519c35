/**
 * The configuration file and the store as the commands find them: `--config FILE`, else
 * `./fleetgate.yaml` when there is one; `--store URL`, else the configuration's store, else the
 * embedded default.
 */
import { existsSync } from 'node:fs';
import { FleetgateError } from '../protocol/index.js';
import { defined } from '../protocol/fields/index.js';
import type { FleetgateConfig, GatewayStore } from '../service/index.js';

/** The configuration file a command reads when `--config` is not given. */
export const DEFAULT_CONFIG = 'fleetgate.yaml';

/** The store when neither `--store` nor a configuration names one. */
export const DEFAULT_STORE = 'sqlite:./data/fleetgate.db';

/** Options of the commands that read a gateway's store. */
export interface StoreFlags {
  store?: string;
  config?: string;
}

/** Resolves an environment variable (only the CLI and the service read the environment). */
export const fromEnvironment = (name: string): string | undefined => process.env[name];

/**
 * The configuration of a command: `path`, else `./fleetgate.yaml`. With `required`, a missing
 * default file is a usage error; without, the defaults apply.
 *
 * @param secrets when given, agents' unset secrets are problems of the file too.
 */
export async function readConfig(
  path: string | undefined,
  options: { required: boolean; secrets?: (name: string) => string | undefined },
): Promise<FleetgateConfig> {
  if (path === undefined && !existsSync(DEFAULT_CONFIG)) {
    const { parseConfig } = await import('../service/index.js');
    if (!options.required) return parseConfig({});
    throw new FleetgateError(
      'FLEETGATE_USAGE',
      `no ${DEFAULT_CONFIG} in this directory: pass --url URL (or set FLEETGATE_URL) to ask a running gateway, or --config FILE to read a configuration (\`fleetgate init\` writes one)`,
    );
  }
  const { loadConfigFile } = await import('../service/index.js');
  return loadConfigFile(path ?? DEFAULT_CONFIG, defined({ secrets: options.secrets }));
}

/** The store URL a command uses. */
export async function storeUrl(flags: StoreFlags): Promise<string> {
  if (flags.store !== undefined) return flags.store;
  if (flags.config !== undefined || existsSync(DEFAULT_CONFIG)) {
    return (await readConfig(flags.config, { required: true })).store;
  }
  return DEFAULT_STORE;
}

/**
 * Opens the gateway's store for a command, never setting it up: a command only reads it
 * (`readOnly`) or writes into tables a gateway made. It is opened the way the gateway opens it
 * (`openGatewayStore`), so `postgres://…?schema=name` is the schema the gateway writes. A store
 * no gateway has initialised is `FLEETGATE_STORE_NOT_INITIALISED`.
 */
export async function withStore<T>(
  flags: StoreFlags,
  access: { readOnly: boolean },
  run: (store: GatewayStore) => Promise<T>,
): Promise<T> {
  const { openGatewayStore } = await import('../service/index.js');
  const store = await openGatewayStore(
    await storeUrl(flags),
    access.readOnly ? { readOnly: true } : { migrate: 'verify' },
  );
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}
