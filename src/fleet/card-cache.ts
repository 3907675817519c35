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

/**
 * Where the broker keeps last good cards across restarts, so a gateway that restarts while an
 * agent is down still knows its declarations, and an unchanged card costs a 304 after a restart.
 */
export interface CardCache {
  load(): Promise<CachedCard[]>;
  save(card: CachedCard): Promise<void>;
  /** Marks a cached card as fetched again, unchanged. */
  touch(agent: string, fetchedAt: number): Promise<void>;
  delete(agent: string): Promise<void>;
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

/** The card cache's table. */
export interface CardCacheDatabase {
  fleetgate_agent_card: AgentCardTable;
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
    async save(card) {
      const row: AgentCardTable = {
        agent: card.agent,
        url: card.url,
        card: card.text,
        digest: card.digest,
        etag: card.etag,
        last_modified: card.lastModified,
        fetched_at: card.fetchedAt,
        changed_at: card.changedAt,
      };
      const { agent: _agent, ...update } = row;
      await db
        .insertInto('fleetgate_agent_card')
        .values(row)
        .onConflict((oc) => oc.column('agent').doUpdateSet(update))
        .execute();
    },
    async touch(agent, fetchedAt) {
      await db
        .updateTable('fleetgate_agent_card')
        .set({ fetched_at: fetchedAt })
        .where('agent', '=', agent)
        .execute();
    },
    async delete(agent) {
      await db.deleteFrom('fleetgate_agent_card').where('agent', '=', agent).execute();
    },
  };
}
