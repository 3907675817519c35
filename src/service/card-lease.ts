/**
 * Replicas share the card refresh through a lease in the store: one replica at a time holds it
 * and fetches cards from the agents (writing them to the store's card cache); the others read the
 * cards the holder wrote. The holder renews the lease every third of its time to live; when it
 * dies, another replica takes it over within that time and its next refresh goes to the agents.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { CardCache, CardCacheDatabase, CardSource } from '../fleet/index.js';
import { storedValidators } from '../fleet/index.js';
import { FleetgateError } from '../protocol/index.js';
import type { StoreMigration } from '../store/index.js';
import { processRuns } from './host/index.js';

/** The lease table (migration `0200_service_leases`). */
export interface ServiceLeaseTable {
  name: string;
  holder: string;
  /** Epoch milliseconds. */
  expires_at: number;
}

/** The service room's tables. */
export interface ServiceDatabase {
  fleetgate_service_lease: ServiceLeaseTable;
}

/** The service room's migrations. */
export const SERVICE_MIGRATIONS: Readonly<Record<string, StoreMigration>> = {
  '0200_service_leases': {
    tables: {
      fleetgate_service_lease: {
        columns: {
          name: 'text primary key',
          holder: 'text not null',
          expires_at: 'bigint not null',
        },
      },
    },
  },
};

/** A lease this process may hold. */
export interface Lease {
  readonly name: string;
  /** This process's identity as a holder. */
  readonly holder: string;
  /** True while this process holds the lease (as of its last renewal). */
  held(): boolean;
  /** Takes or renews the lease when free or already ours; resolves to whether we hold it. */
  renew(): Promise<boolean>;
  /** Renews every third of the time to live until `stop`. */
  start(): void;
  /** Stops renewing and gives the lease up, so another replica takes it at once. */
  stop(): Promise<void>;
}

/** Options of {@link createStoreLease}. */
export interface StoreLeaseOptions<DB extends ServiceDatabase> {
  db: Kysely<DB>;
  name: string;
  ttlMs: number;
  /** This process's identity as a holder (default: host, pid and a random tag). */
  holder?: string;
  now?: () => number;
  /** Told when this process takes or loses the lease. */
  onChange?: (held: boolean) => void;
  onError: (error: unknown) => void;
}

/** A lease kept in the store's `fleetgate_service_lease` table. */
export function createStoreLease<DB extends ServiceDatabase>(
  options: StoreLeaseOptions<DB>,
): Lease {
  // kysely's types are invariant in DB; the constraint guarantees the table exists.
  const db = options.db as unknown as Kysely<ServiceDatabase>;
  const now = options.now ?? Date.now;
  const holder = options.holder ?? newInstanceId();
  let held = false;
  let timer: ReturnType<typeof setInterval> | undefined;
  let renewing: Promise<boolean> | undefined;

  const set = (value: boolean): void => {
    if (value !== held) {
      held = value;
      options.onChange?.(value);
    }
  };

  const renew = (): Promise<boolean> => {
    renewing ??= (async () => {
      try {
        const at = now();
        // One statement: insert, or take over when the lease is ours or has run out.
        await sql`
          insert into fleetgate_service_lease (name, holder, expires_at)
          values (${options.name}, ${holder}, ${at + options.ttlMs})
          on conflict (name) do update
            set holder = excluded.holder, expires_at = excluded.expires_at
            where fleetgate_service_lease.holder = excluded.holder
               or fleetgate_service_lease.expires_at < ${at}`.execute(db);
        const row = await db
          .selectFrom('fleetgate_service_lease')
          .select(['holder'])
          .where('name', '=', options.name)
          .executeTakeFirst();
        set(row?.holder === holder);
      } catch (error) {
        // A lease that cannot be renewed is not held: better no refresh for a moment than two.
        set(false);
        options.onError(error);
      } finally {
        renewing = undefined;
      }
      return held;
    })();
    return renewing;
  };

  return {
    name: options.name,
    holder,
    held: () => held,
    renew,
    start() {
      timer ??= setInterval(() => void renew(), Math.max(100, Math.floor(options.ttlMs / 3)));
      timer.unref();
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await renewing;
      if (!held) return;
      set(false);
      await db
        .deleteFrom('fleetgate_service_lease')
        .where('name', '=', options.name)
        .where('holder', '=', holder)
        .execute()
        .catch(options.onError);
    },
  };
}

/** Options of {@link createLeasedCardSource}. */
export interface LeasedCardSourceOptions<DB extends CardCacheDatabase> {
  lease: Pick<Lease, 'held'>;
  /** Where the holder fetches cards. */
  source: CardSource;
  db: Kysely<DB>;
  /** A card the holder last fetched longer ago than this counts as a failed refresh here. */
  staleAfterMs: number;
  now?: () => number;
}

interface CachedRow {
  url: string;
  card: string;
  digest: string;
  etag: string | null;
  last_modified: string | null;
  fetched_at: number | string;
}

/**
 * The card source of a replica: the agents while it holds the lease, otherwise the cards the
 * holder wrote to the store (an agent the holder has not fetched yet is fetched here once).
 */
export function createLeasedCardSource<DB extends CardCacheDatabase>(
  options: LeasedCardSourceOptions<DB>,
): CardSource {
  const now = options.now ?? Date.now;
  const db = options.db as unknown as Kysely<{
    fleetgate_agent_card: CachedRow & { agent: string };
  }>;
  return {
    async fetch(target, previous, signal) {
      if (options.lease.held()) return options.source.fetch(target, previous, signal);
      const row = await db
        .selectFrom('fleetgate_agent_card')
        .selectAll()
        .where('agent', '=', target.name)
        .executeTakeFirst();
      if (row === undefined || row.url !== target.url) {
        return options.source.fetch(target, previous, signal);
      }
      const age = now() - Number(row.fetched_at);
      if (age > options.staleAfterMs) {
        throw new FleetgateError(
          'FLEETGATE_CARD_FETCH_FAILED',
          `${target.url}: the replica holding the card-refresh lease last fetched this card ${Math.round(age / 1000)} s ago`,
          { details: { agent: target.name, ageMs: age } },
        );
      }
      return {
        status: 'fetched',
        url: row.url,
        text: row.card,
        digest: row.digest,
        validators: storedValidators(row.etag, row.last_modified),
      };
    },
  };
}

/** The card cache of a replica: written only while it holds the lease (the holder's cards). */
export function leasedCardCache(cache: CardCache, lease: Pick<Lease, 'held'>): CardCache {
  return {
    load: () => cache.load(),
    save: (card) => (lease.held() ? cache.save(card) : Promise.resolve()),
    touch: (agent, at) => (lease.held() ? cache.touch(agent, at) : Promise.resolve()),
    delete: (agent) => (lease.held() ? cache.delete(agent) : Promise.resolve()),
  };
}

/** A fresh id for this process as a holder: host, pid and a random tag. */
export function newInstanceId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** The name of the lease that says gateway instance `id` still runs. */
export function instanceLeaseName(id: string): string {
  return `instance:${id}`;
}

/**
 * Whether gateway instance `id` (a {@link newInstanceId}) still runs: its instance lease has not
 * run out — or, for an instance of this host whose process is gone, false at once (a gateway
 * killed and restarted on one machine takes its calls back without waiting out the lease).
 */
export async function instanceAlive<DB extends ServiceDatabase>(
  database: Kysely<DB>,
  id: string,
  at: number,
): Promise<boolean> {
  const [host, pid] = id.split(':');
  if (
    host === hostname() &&
    pid !== undefined &&
    /^\d+$/.test(pid) &&
    Number(pid) !== process.pid
  ) {
    if (!processRuns(Number(pid))) return false;
  }
  const db = database as unknown as Kysely<ServiceDatabase>;
  const row = await db
    .selectFrom('fleetgate_service_lease')
    .select(['expires_at'])
    .where('name', '=', instanceLeaseName(id))
    .executeTakeFirst();
  return row !== undefined && Number(row.expires_at) >= at;
}

/**
 * Whether a gateway instance other than `id` runs on this store: an instance lease of another
 * holder has not run out (replicas share the store).
 */
export async function otherInstanceRuns<DB extends ServiceDatabase>(
  database: Kysely<DB>,
  id: string,
  at: number,
): Promise<boolean> {
  const db = database as unknown as Kysely<ServiceDatabase>;
  const row = await db
    .selectFrom('fleetgate_service_lease')
    .select(['name'])
    .where('name', 'like', `${instanceLeaseName('')}%`)
    .where('name', '!=', instanceLeaseName(id))
    .where('expires_at', '>=', at)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
