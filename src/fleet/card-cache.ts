import type { Kysely } from 'kysely';

/** The last good card of an agent, as persisted. */
export interface CachedCard {
  agent: string;
  /** The agent URL the card was fetched for; a card for another URL is not reused. */
  url: string;
  text: string;
  digest: string;
  etag: string | null;
  lastModified: string | null;
  fetchedAt: number;
  changedAt: number;
}

/** The consecutive failed refreshes of an agent's card, as persisted. */
export interface CardFailures {
  agent: string;
  /** The agent URL that failed; a count for another URL is not reused. */
  url: string;
  failures: number;
  lastError: { code: string; message: string };
  lastAttemptAt: number;
}

/**
 * Where the broker keeps last good cards across restarts, so a gateway that restarts while an
 * agent is down still knows its declarations, and an unchanged card costs a 304 after a restart.
 * The failure counts live beside them, so an agent failing across runs (each `fleetgate agents`
 * is a run) becomes stale as it would in one long-running gateway.
 */
export interface CardCache {
  load(): Promise<CachedCard[]>;
  save(card: CachedCard): Promise<void>;
  /** Marks a cached card as fetched again, unchanged. */
  touch(agent: string, fetchedAt: number): Promise<void>;
  /** Forgets the card and the failure count of an agent. */
  delete(agent: string): Promise<void>;
  /** The persisted failure counts (a cache without them starts every count at 0). */
  loadFailures?(): Promise<CardFailures[]>;
  /** Records the count after a failed refresh. */
  saveFailures?(record: CardFailures): Promise<void>;
  /** Clears the count after a good refresh. */
  clearFailures?(agent: string): Promise<void>;
}

/** The table of {@link createStoreCardCache} (migration `0002_fleet`). */
export interface AgentCardTable {
  agent: string;
  url: string;
  card: string;
  digest: string;
  etag: string | null;
  last_modified: string | null;
  fetched_at: number;
  changed_at: number;
}

/** The failure counts of {@link createStoreCardCache} (migration `0101_fleet_card_failures`). */
export interface CardFailureTable {
  agent: string;
  url: string;
  failures: number;
  last_error_code: string;
  last_error_message: string;
  last_attempt_at: number;
}

/** The card cache's tables. */
export interface CardCacheDatabase {
  fleetgate_agent_card: AgentCardTable;
  fleetgate_card_failure: CardFailureTable;
}

/** A {@link CardCache} in the store (SQLite or PostgreSQL). */
export function createStoreCardCache<DB extends CardCacheDatabase>(
  database: Kysely<DB>,
): CardCache {
  // kysely's types are invariant in DB; the constraint guarantees the table exists.
  const db = database as unknown as Kysely<CardCacheDatabase>;
  return {
    async load() {
      const rows = await db.selectFrom('fleetgate_agent_card').selectAll().execute();
      return rows.map((r) => ({
        agent: r.agent,
        url: r.url,
        text: r.card,
        digest: r.digest,
        etag: r.etag,
        lastModified: r.last_modified,
        fetchedAt: Number(r.fetched_at),
        changedAt: Number(r.changed_at),
      }));
    },
    save: (card) =>
      upsertByAgent(db, 'fleetgate_agent_card', {
        agent: card.agent,
        url: card.url,
        card: card.text,
        digest: card.digest,
        etag: card.etag,
        last_modified: card.lastModified,
        fetched_at: card.fetchedAt,
        changed_at: card.changedAt,
      }),
    async touch(agent, fetchedAt) {
      await db
        .updateTable('fleetgate_agent_card')
        .set({ fetched_at: fetchedAt })
        .where('agent', '=', agent)
        .execute();
    },
    async delete(agent) {
      await db.deleteFrom('fleetgate_agent_card').where('agent', '=', agent).execute();
      await db.deleteFrom('fleetgate_card_failure').where('agent', '=', agent).execute();
    },
    async loadFailures() {
      const rows = await db.selectFrom('fleetgate_card_failure').selectAll().execute();
      return rows.map((r) => ({
        agent: r.agent,
        url: r.url,
        failures: Number(r.failures),
        lastError: { code: r.last_error_code, message: r.last_error_message },
        lastAttemptAt: Number(r.last_attempt_at),
      }));
    },
    saveFailures: (record) =>
      upsertByAgent(db, 'fleetgate_card_failure', {
        agent: record.agent,
        url: record.url,
        failures: record.failures,
        last_error_code: record.lastError.code,
        last_error_message: record.lastError.message,
        last_attempt_at: record.lastAttemptAt,
      }),
    async clearFailures(agent) {
      await db.deleteFrom('fleetgate_card_failure').where('agent', '=', agent).execute();
    },
  };
}

/** Inserts `row` into `table`, or overwrites the stored row of its agent (both tables' key) with it. */
async function upsertByAgent<T extends keyof CardCacheDatabase>(
  db: Kysely<CardCacheDatabase>,
  table: T,
  row: CardCacheDatabase[T],
): Promise<void> {
  const { agent: _agent, ...update }: CardCacheDatabase[keyof CardCacheDatabase] = row;
  // kysely types a statement on either table, not on one a type parameter names.
  await db
    .insertInto<keyof CardCacheDatabase>(table)
    .values(row)
    .onConflict((oc) => oc.column('agent').doUpdateSet(update))
    .execute();
}
