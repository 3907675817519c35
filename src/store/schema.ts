/**
 * The store's database type: every table of every migration. Each table's row type is owned by
 * the domain that uses it (its "store port"); later issues add their tables here.
 */
import type { OutboxDatabase } from '../bus/outbox.js';
import type { FleetDatabase } from '../fleet/ratchet.js';
import type { WorldDatabase } from '../world/store-tables.js';
import type { AlertsDatabase } from '../alerts/store-tables.js';
import type { TasksDatabase } from '../tasks/task-records.js';
import type { DispatchDatabase } from '../dispatch/dispatch-records.js';
import type { PolicyDatabase } from '../policy/store-tables.js';

/** All Fleetgate tables. */
export interface FleetgateDatabase
  extends
    OutboxDatabase,
    FleetDatabase,
    WorldDatabase,
    AlertsDatabase,
    TasksDatabase,
    DispatchDatabase,
    PolicyDatabase {}
