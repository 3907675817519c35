import type { Kysely } from 'kysely';
import type { CardCacheDatabase } from './card-cache.js';
import type { BlastRadius, HitlMode } from '../protocol/index.js';
import { compareHitlMode, compareRadius, isBlastRadius, isHitlMode } from '../protocol/index.js';

/** Which declaration a ratchet row guards. */
export type RatchetKind = 'blast' | 'hitl';

/** The value type of each ratchet kind. */
export interface RatchetValues {
  blast: BlastRadius;
  hitl: HitlMode;
}

/** One guarded declaration: the level the gate uses, and a narrower one waiting for an operator. */
export interface RatchetRow {
  agent: string;
  skill: string;
  kind: RatchetKind;
  /** The level in force: never narrower than the card's declaration. */
  accepted: string;
  /** A narrower level the card declares, waiting for `acknowledge`. */
  pending: string | null;
  updatedAt: number;
  acknowledgedAt: number | null;
  acknowledgedBy: string | null;
}

/** Where ratchet rows persist; {@link createStoreRatchetPersistence} is the store's. */
export interface RatchetPersistence {
  load(): Promise<RatchetRow[]>;
  save(row: RatchetRow): Promise<void>;
  /**
   * Saves several rows at once, all or none (a card's declarations are observed together). When
   * missing, each row is saved with {@link save}, in order.
   */
  saveMany?(rows: readonly RatchetRow[]): Promise<void>;
}

/** The table of {@link createStoreRatchetPersistence} (migration `0002_fleet`). */
export interface RatchetTable {
  agent: string;
  skill: string;
  kind: string;
  accepted: string;
  pending: string | null;
  updated_at: number;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
}

/** The fleet's tables. */
export interface FleetDatabase extends CardCacheDatabase {
  fleetgate_declaration_ratchet: RatchetTable;
}

/** Persists ratchet rows in the store (SQLite or PostgreSQL). */
export function createStoreRatchetPersistence<DB extends FleetDatabase>(
  database: Kysely<DB>,
): RatchetPersistence {
  // kysely's types are invariant in DB: a Kysely<AppDatabase> that includes our table is not a
  // Kysely<FleetDatabase>. The constraint above guarantees the table exists.
  const db = database as unknown as Kysely<FleetDatabase>;
  return {
    async load() {
      const rows = await db.selectFrom('fleetgate_declaration_ratchet').selectAll().execute();
      return rows.flatMap((r): RatchetRow[] =>
        r.kind === 'blast' || r.kind === 'hitl'
          ? [
              {
                agent: r.agent,
                skill: r.skill,
                kind: r.kind,
                accepted: r.accepted,
                pending: r.pending,
                updatedAt: Number(r.updated_at),
                acknowledgedAt: r.acknowledged_at === null ? null : Number(r.acknowledged_at),
                acknowledgedBy: r.acknowledged_by,
              },
            ]
          : [],
      );
    },
    save: (row) => upsert([row]),
    saveMany: (rows) => upsert(rows),
  };

  /** One statement per chunk of rows: a card's declarations are one write, not one per skill. */
  async function upsert(rows: readonly RatchetRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += RATCHET_CHUNK) {
      await db
        .insertInto('fleetgate_declaration_ratchet')
        .values(
          rows.slice(i, i + RATCHET_CHUNK).map((row): RatchetTable => ({
            agent: row.agent,
            skill: row.skill,
            kind: row.kind,
            accepted: row.accepted,
            pending: row.pending,
            updated_at: row.updatedAt,
            acknowledged_at: row.acknowledgedAt,
            acknowledged_by: row.acknowledgedBy,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['agent', 'skill', 'kind']).doUpdateSet((eb) => ({
            accepted: eb.ref('excluded.accepted'),
            pending: eb.ref('excluded.pending'),
            updated_at: eb.ref('excluded.updated_at'),
            acknowledged_at: eb.ref('excluded.acknowledged_at'),
            acknowledged_by: eb.ref('excluded.acknowledged_by'),
          })),
        )
        .execute();
    }
  }
}

/** Rows per upsert: 8 parameters each, far below SQLite's and PostgreSQL's limits. */
const RATCHET_CHUNK = 200;

function key(kind: RatchetKind, agent: string, skill: string): string {
  // `join` builds one flat string; a template literal this long builds a rope of cons strings,
  // which a Map flattens on every lookup and keeps (~100 bytes a key against ~40).
  return [kind, agent, skill].join('\u0000');
}

/** In-memory persistence (tests, or a gateway that accepts losing acknowledgements on restart). */
export function createMemoryRatchetPersistence(): RatchetPersistence & {
  rows: Map<string, RatchetRow>;
} {
  const rows = new Map<string, RatchetRow>();
  // Kept as given: the ratchet never changes a row it saved (a change is a new row).
  const saveMany = (many: readonly RatchetRow[]): Promise<void> => {
    for (const row of many) rows.set(key(row.kind, row.agent, row.skill), row);
    return Promise.resolve();
  };
  return {
    rows,
    load: () => Promise.resolve([...rows.values()].map((r) => ({ ...r }))),
    save: (row) => saveMany([row]),
    saveMany,
  };
}

/** One declaration of a card, for {@link DeclarationRatchet.observeAll}. */
export interface RatchetObservation<K extends RatchetKind = RatchetKind> {
  kind: K;
  skill: string;
  /** The value the card declares now. */
  declared: RatchetValues[K];
  /** The value its previous card declared (undefined: first sight or undeclared). */
  previous: RatchetValues[K] | undefined;
}

/** What a card refresh did to one guarded declaration. */
export interface RatchetChange<K extends RatchetKind = RatchetKind> {
  agent: string;
  skill: string;
  kind: K;
  /** The declared value before this refresh (undefined: first sight or undeclared). */
  before: RatchetValues[K] | undefined;
  /** The declared value now. */
  after: RatchetValues[K];
  widened: boolean;
  narrowed: boolean;
  /** The level in force after this refresh. */
  accepted: RatchetValues[K];
}

const COMPARE: { [K in RatchetKind]: (a: RatchetValues[K], b: RatchetValues[K]) => number } = {
  blast: compareRadius,
  hitl: compareHitlMode,
};

const IS_VALUE: { [K in RatchetKind]: (v: unknown) => v is RatchetValues[K] } = {
  blast: isBlastRadius,
  hitl: isHitlMode,
};

/**
 * The narrowing ratchet: an agent may widen its own radius (or make a mode more gated) at once,
 * but a narrower declaration only takes effect once an operator acknowledges it. Until then the
 * accepted (wider) level stays in force. The first declaration seen for a skill is accepted as is.
 * State persists, so a restart neither forgets a pending narrowing nor an acknowledgement.
 */
export class DeclarationRatchet {
  readonly #rows = new Map<string, RatchetRow>();
  readonly #persistence: RatchetPersistence;
  readonly #now: () => number;
  #version = 0;

  /** Increases on every change; lets readers cache what they derive from the ratchet. */
  get version(): number {
    return this.#version;
  }

  private constructor(persistence: RatchetPersistence, now: () => number) {
    this.#persistence = persistence;
    this.#now = now;
  }

  /** Loads the persisted rows. */
  static async open(
    persistence: RatchetPersistence,
    now: () => number = Date.now,
  ): Promise<DeclarationRatchet> {
    const ratchet = new DeclarationRatchet(persistence, now);
    for (const row of await persistence.load()) {
      ratchet.#rows.set(key(row.kind, row.agent, row.skill), row);
    }
    return ratchet;
  }

  /** The level in force for a skill, or undefined when none was ever accepted. */
  readonly accepted = this.#levelReader('accepted');

  /** The narrower level waiting for acknowledgement, if any. */
  readonly pending = this.#levelReader('pending');

  /** Reads one level of a skill's row: a value of the row's kind, or undefined. */
  #levelReader(level: 'accepted' | 'pending') {
    return <K extends RatchetKind>(
      kind: K,
      agent: string,
      skill: string,
    ): RatchetValues[K] | undefined =>
      levelOf(kind, this.#rows.get(key(kind, agent, skill)), level);
  }

  /** True when `value` is the level in force and nothing narrower waits: observing it again changes nothing. */
  holds<K extends RatchetKind>(kind: K, agent: string, skill: string, value: string): boolean {
    const row = this.#rows.get(key(kind, agent, skill));
    return levelOf(kind, row, 'accepted') === value && levelOf(kind, row, 'pending') === undefined;
  }

  /** Every row with a pending narrowing. */
  pendingRows(): RatchetRow[] {
    return [...this.#rows.values()].filter((r) => r.pending !== null).map((r) => ({ ...r }));
  }

  /**
   * Records what a fresh card declares for a skill. Returns the change when the declaration
   * differs from what the ratchet held, or undefined when nothing changed.
   */
  async observe<K extends RatchetKind>(
    kind: K,
    agent: string,
    skill: string,
    declared: RatchetValues[K],
    previous: RatchetValues[K] | undefined,
  ): Promise<RatchetChange<K> | undefined> {
    const [change] = await this.observeAll(agent, [{ kind, skill, declared, previous }]);
    // The one observation is of kind K, so its change is too.
    return change as RatchetChange<K> | undefined;
  }

  /**
   * {@link observe} for every declaration of one card at once (one observation per kind and
   * skill): the rows that change are saved in one write (all or none), and the changes come back
   * in the order of `observations` (those that changed nothing are left out).
   */
  async observeAll(
    agent: string,
    observations: readonly RatchetObservation[],
  ): Promise<RatchetChange[]> {
    const rows: RatchetRow[] = [];
    const keys: string[] = [];
    const changes: RatchetChange[] = [];
    for (const o of observations)
      this.#decide(o.kind, agent, o.skill, o.declared, o.previous, rows, keys, changes);
    if (rows.length > 0) await this.#save(rows, keys);
    return changes;
  }

  /**
   * What observing `declared` does: the row to save goes to `rows` (its key to `keys`, built once
   * per observation), the change to `changes`.
   */
  #decide<K extends RatchetKind>(
    kind: K,
    agent: string,
    skill: string,
    declared: RatchetValues[K],
    previous: RatchetValues[K] | undefined,
    rows: RatchetRow[],
    keys: string[],
    changes: RatchetChange<K>[],
  ): void {
    const k = key(kind, agent, skill);
    const row = this.#rows.get(k);
    const compare = COMPARE[kind];
    const accepted = levelOf(kind, row, 'accepted');
    const before = previous ?? levelOf(kind, row, 'pending') ?? accepted;
    if (accepted === undefined || compare(declared, accepted) >= 0) {
      // First sight, same level or wider: takes effect at once.
      if (row === undefined || row.accepted !== declared || row.pending !== null) {
        keys.push(k);
        rows.push({
          agent,
          skill,
          kind,
          accepted: declared,
          pending: null,
          updatedAt: this.#now(),
          acknowledgedAt: row?.acknowledgedAt ?? null,
          acknowledgedBy: row?.acknowledgedBy ?? null,
        });
      }
      if (before === undefined || before === declared) return;
      changes.push({
        agent,
        skill,
        kind,
        before,
        after: declared,
        widened: compare(declared, before) > 0,
        narrowed: compare(declared, before) < 0,
        accepted: declared,
      });
      return;
    }
    // Narrower than the accepted level: keep the accepted level until acknowledged.
    if (row?.pending === declared) return;
    keys.push(k);
    rows.push({ ...row!, pending: declared, updatedAt: this.#now() });
    changes.push({
      agent,
      skill,
      kind,
      before: before ?? accepted,
      after: declared,
      widened: false,
      narrowed: true,
      accepted,
    });
  }

  /**
   * An operator accepts the pending narrower level of a skill. Returns the new accepted value, or
   * undefined when nothing was pending.
   */
  async acknowledge<K extends RatchetKind>(
    kind: K,
    agent: string,
    skill: string,
    by = 'operator',
  ): Promise<RatchetValues[K] | undefined> {
    const row = this.#rows.get(key(kind, agent, skill));
    const pending = this.pending(kind, agent, skill);
    if (row === undefined || pending === undefined) return undefined;
    const now = this.#now();
    const rows = [
      {
        ...row,
        accepted: pending,
        pending: null,
        updatedAt: now,
        acknowledgedAt: now,
        acknowledgedBy: by,
      },
    ];
    await this.#save(rows, [key(kind, agent, skill)]);
    return pending;
  }

  /**
   * Persists the rows (in one write when the persistence can, else one by one in order), then
   * holds them under their keys: readers see them from now on.
   */
  async #save(rows: readonly RatchetRow[], keys: readonly string[]): Promise<void> {
    const persistence = this.#persistence;
    if (persistence.saveMany !== undefined) await persistence.saveMany(rows);
    else for (const row of rows) await persistence.save(row);
    for (let i = 0; i < rows.length; i += 1) this.#rows.set(keys[i]!, rows[i]!);
    this.#version += 1;
  }
}

/** The accepted or pending level of `row`, when it is a value of `kind`. */
function levelOf<K extends RatchetKind>(
  kind: K,
  row: RatchetRow | undefined,
  level: 'accepted' | 'pending',
): RatchetValues[K] | undefined {
  const value = row?.[level];
  return IS_VALUE[kind](value) ? value : undefined;
}
