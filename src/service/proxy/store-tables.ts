/**
 * The A2A proxy's tables: the proxy's tasks (the gateway's task id — the dispatch's, whose record
 * holds the agent's own task id — the client's message id for idempotency, the task as the client
 * sees it) and the clients' push configurations with their deliveries. The composition root hands the migration to the store
 * (migration names are permanent).
 */
import { sql, type Kysely, type TableMetadata } from 'kysely';
import type { StoreKind, StoreMigration } from '../../store/index.js';

/**
 * One task of the proxy (`fleetgate_proxy_task`): the client's view of its dispatch. The agent's
 * own task id is the dispatch's (`fleetgate_dispatch.task_id`), kept there only (the table's
 * `agent_task_id` column, from before, is left null).
 */
export interface ProxyTaskTable {
  /** The proxy's task id: the id of the dispatch that carries the call. */
  id: string;
  agent: string;
  /** Who called (the token's name): a message id is unique per agent and caller. */
  caller: string;
  message_id: string;
  context_id: string;
  /** The state the client sees (`submitted`, `input-required`, `completed`, …). */
  state: string;
  /** The task as the client sees it, v1.0 wire JSON. */
  task: string;
  /** `1.0` or `0.3`: the protocol of the client that sent the message (push bodies follow it). */
  protocol: string;
  created_at: number;
  updated_at: number;
}

/** A client's push-notification configuration (`fleetgate_proxy_push`). */
export interface ProxyPushTable {
  task_id: string;
  config_id: string;
  /** The configuration, v1.0 wire JSON (`url`, `token`, `authentication`). */
  config: string;
  protocol: string;
  created_at: number;
}

/** One push delivery of one task update to one configuration (`fleetgate_proxy_push_delivery`). */
export interface ProxyPushDeliveryTable {
  task_id: string;
  config_id: string;
  /** The update delivered: the task's state, so each state reaches a client once. */
  state: string;
  status: 'sending' | 'delivered' | 'dead';
  /** Tries taken so far (the one in flight included). */
  attempts: number;
  last_error: string | null;
  updated_at: number;
  /**
   * While `sending`: when the delivery is next due — the end of the lease of the try in flight, or
   * the time of the next try. A replica that finds it past takes the delivery over. Null on rows
   * recorded before leases (due at once).
   */
  next_at: number | null;
  /** The task as sent (v1.0 wire JSON), so whichever replica tries next sends the same body. */
  task: string | null;
}

/** The proxy's tables. */
export interface ProxyDatabase {
  fleetgate_proxy_task: ProxyTaskTable;
  fleetgate_proxy_push: ProxyPushTable;
  fleetgate_proxy_push_delivery: ProxyPushDeliveryTable;
}

/** The proxy's migrations, by name. */
export const PROXY_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0500_proxy': {
    tables: {
      fleetgate_proxy_task: {
        columns: {
          id: 'text primary key',
          agent: 'text not null',
          caller: 'text not null',
          message_id: 'text not null',
          context_id: 'text not null',
          agent_task_id: 'text',
          state: 'text not null',
          task: 'text not null',
          protocol: 'text not null',
          created_at: 'bigint not null',
          updated_at: 'bigint not null',
        },
        unique: { fleetgate_proxy_task_message: ['agent', 'caller', 'message_id'] },
      },
      fleetgate_proxy_push: {
        columns: {
          task_id: 'text not null',
          config_id: 'text not null',
          config: 'text not null',
          protocol: 'text not null',
          created_at: 'bigint not null',
        },
        primaryKey: ['task_id', 'config_id'],
      },
      fleetgate_proxy_push_delivery: {
        columns: {
          task_id: 'text not null',
          config_id: 'text not null',
          state: 'text not null',
          status: 'text not null',
          attempts: 'integer not null',
          last_error: 'text',
          updated_at: 'bigint not null',
        },
        primaryKey: ['task_id', 'config_id', 'state'],
      },
    },
    indexes: {
      fleetgate_proxy_task_by_agent_task: 'fleetgate_proxy_task (agent, agent_task_id)',
    },
  },
  '0501_proxy_push_lease': {
    addColumns: { fleetgate_proxy_push_delivery: { next_at: 'bigint', task: 'text' } },
    indexes: {
      fleetgate_proxy_push_delivery_due: 'fleetgate_proxy_push_delivery (status, next_at)',
    },
  },
  '0502_proxy_task_list': {
    // ListTasks: one caller's tasks of an agent, newest update first (an admin's list uses the
    // agent prefix).
    indexes: {
      fleetgate_proxy_task_list: 'fleetgate_proxy_task (agent, caller, updated_at, id)',
    },
  },
  '0800_proxy_task_agent_id': {
    // The agent's task id is the dispatch's: the index on the proxy's copy goes (no query used
    // it). The column stays, unused and null in new rows: migrations only add, so a replica of an
    // earlier release that still writes it keeps running against this store during a roll.
    dropIndexes: ['fleetgate_proxy_task_by_agent_task'],
    async down(db, kind) {
      // A store that ran this migration when it still dropped the column gets it back.
      const proxyTask = (await ownTables(db, kind)).find((t) => t.name === 'fleetgate_proxy_task');
      if (proxyTask !== undefined && !proxyTask.columns.some((c) => c.name === 'agent_task_id')) {
        await db.schema
          .alterTable('fleetgate_proxy_task')
          .addColumn('agent_task_id', 'text')
          .execute();
      }
      await db.schema
        .createIndex('fleetgate_proxy_task_by_agent_task')
        .ifNotExists()
        .on('fleetgate_proxy_task')
        .columns(['agent', 'agent_task_id'])
        .execute();
    },
  },
};

/**
 * The tables of the store's own schema. Kysely's introspection lists the tables of every
 * PostgreSQL schema in the database: a store kept in a schema beside another gateway's would
 * otherwise read (and act on) the other's tables. SQLite has one schema.
 */
async function ownTables(db: Kysely<unknown>, kind: StoreKind): Promise<TableMetadata[]> {
  const tables = await db.introspection.getTables();
  if (kind === 'sqlite') return tables;
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return tables.filter((t) => t.schema === rows[0]?.schema);
}
