/**
 * The gateway's store: every domain's tables and migrations composed in one place, so the store
 * itself knows none of them. The composition root, the CLI, the tests and the benchmarks open the
 * gateway's store through {@link openGatewayStore}.
 */
import type { AlertsDatabase } from '../alerts/index.js';
import { ALERTS_MIGRATIONS } from '../alerts/index.js';
import type { OutboxDatabase } from '../bus/index.js';
import { OUTBOX_MIGRATIONS } from '../bus/index.js';
import type { DispatchDatabase } from '../dispatch/index.js';
import { DISPATCH_MIGRATIONS } from '../dispatch/index.js';
import type { FleetDatabase } from '../fleet/index.js';
import { FLEET_MIGRATIONS } from '../fleet/index.js';
import type { Store, StoreMigrations, StoreOptions } from '../store/index.js';
import { composeMigrations, openStore } from '../store/index.js';
import type { PolicyDatabase } from '../policy/index.js';
import { POLICY_MIGRATIONS } from '../policy/index.js';
import type { TasksDatabase } from '../tasks/index.js';
import { TASKS_MIGRATIONS } from '../tasks/index.js';
import type { WorldDatabase } from '../world/index.js';
import { WORLD_MIGRATIONS } from '../world/index.js';
import type { ServiceDatabase } from './card-lease.js';
import { SERVICE_MIGRATIONS } from './card-lease.js';
import type { ServiceMetaDatabase } from './deployment.js';
import { SERVICE_META_MIGRATIONS } from './deployment.js';
import type { ProxyDatabase } from './proxy/store-tables.js';
import { PROXY_MIGRATIONS } from './proxy/store-tables.js';
import { STORY_MIGRATIONS } from './story-indexes.js';
import { parseStoreTarget } from './config-values.js';
import { defined } from '../protocol/fields/index.js';

/** Every table of the gateway: each domain declares its own, the gateway joins them. */
export interface FleetgateDatabase
  extends
    OutboxDatabase,
    FleetDatabase,
    WorldDatabase,
    AlertsDatabase,
    TasksDatabase,
    DispatchDatabase,
    PolicyDatabase,
    ServiceDatabase,
    ServiceMetaDatabase,
    ProxyDatabase {}

/**
 * Every domain's migrations in one list, with the names and order they shipped under
 * (`0001_outbox` … `0005_dispatch`), so a store migrated by an earlier release runs nothing.
 * `0003_world` is the world's tables then the alerts' learned floors, as it always was.
 */
export const GATEWAY_MIGRATIONS: StoreMigrations = composeMigrations(
  OUTBOX_MIGRATIONS,
  FLEET_MIGRATIONS,
  WORLD_MIGRATIONS,
  ALERTS_MIGRATIONS,
  TASKS_MIGRATIONS,
  DISPATCH_MIGRATIONS,
  POLICY_MIGRATIONS,
  SERVICE_MIGRATIONS,
  PROXY_MIGRATIONS,
  STORY_MIGRATIONS,
  SERVICE_META_MIGRATIONS,
);

/** A store with every gateway table. */
export type GatewayStore = Store<FleetgateDatabase>;

/**
 * Opens the gateway's store at `url` and runs {@link GATEWAY_MIGRATIONS} (unless `migrate:
 * false`); other options go to `openStore`. The one way every part of Fleetgate opens it — the
 * gateway, the fleet runtime, the commands (`--store`, `--config`) — so a command reads the
 * schema its gateway writes: `postgres://…?schema=name` puts every table in that schema (unless
 * `options.schema` names one), and a query option the store does not take is refused.
 *
 * @throws FleetgateError `FLEETGATE_STORE_URL_INVALID`, and what `openStore` throws.
 * @example
 * ```ts
 * const store = await openGatewayStore('sqlite:./data/fleetgate.db');
 * const other = await openGatewayStore('postgres://fleetgate@db/fleetgate?schema=gw_b');
 * ```
 */
export async function openGatewayStore(
  url: string,
  options: Omit<StoreOptions, 'migrations'> & { migrations?: StoreMigrations } = {},
): Promise<GatewayStore> {
  const target = options.schema === undefined ? parseStoreTarget(url) : { url };
  return openStore<FleetgateDatabase>(target.url, {
    migrations: GATEWAY_MIGRATIONS,
    ...defined({ schema: target.schema }),
    ...options,
  });
}
