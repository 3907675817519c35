/**
 * The relay's handover on a SQLite store: the rows the writers' units committed, told by
 * `insertOutboxRows` (`tapOutbox`), so that a round publishes them without reading them back.
 * Buys ~4% of `proxy-vs-direct`'s `gateway_cpu_ms_per_call`: the round's read costs ~0.1 ms on a
 * connection whose caches the calls' own work has just cooled (five times the same read warm), and
 * under that load a round ran for every second or third call; a call made alone after a pause
 * (`single_call_p50_ms_proxied`) ran between three and four rounds, ~8% of its gateway CPU.
 *
 * The table stays the truth. The handover only says which rows a round takes: the rows from `next`
 * on, when it holds each of them. `next` is the position below which every row was marked sent,
 * parked or taken by the round running; a row written another way (through kysely), a round that
 * left a row unsent, a handover that overflowed or began before the relay did: each leaves a gap or
 * no `next`, and the round reads the table instead, which puts `next` right again. So a row is never
 * skipped, and one taken twice (handed over, then read by a round that came first) is dropped.
 */
import type { OutboxRow } from './outbox-direct.js';

/** Rows held at most; past it the handover is dropped and the rounds read until they catch up. */
const HELD_ROWS = 10_000;

/** See the file comment. */
export class OutboxHandover {
  #rows: OutboxRow[] = [];
  /** The first row not yet taken by a round; undefined when unknown (the next round reads). */
  #next: number | undefined;

  /** Rows a unit committed, in `seq` order. */
  add(rows: readonly OutboxRow[]): void {
    if (this.#rows.length + rows.length > HELD_ROWS) {
      this.#rows = [];
      this.#next = undefined;
      return;
    }
    for (const row of rows) this.#rows.push(row);
  }

  /**
   * Up to `max` rows for the next round, when they are known without a read: every row from
   * `next` on, without a gap. Undefined when the round must read the table.
   */
  take(max: number): OutboxRow[] | undefined {
    const next = this.#next;
    if (next === undefined) return undefined;
    const rows = this.#rows;
    let start = 0;
    while (start < rows.length && rows[start]!.seq < next) start += 1;
    if (start === rows.length || rows[start]!.seq !== next) {
      this.#rows = rows.slice(start);
      return undefined;
    }
    let end = start + 1;
    while (end < rows.length && end - start < max && rows[end]!.seq === rows[end - 1]!.seq + 1) {
      end += 1;
    }
    this.#rows = rows.slice(end);
    return rows.slice(start, end);
  }

  /**
   * A round ended with `rows` (taken or read, in `seq` order): `complete` when each was marked
   * sent or parked. One that left a row unsent makes the next round read.
   */
  ended(rows: readonly OutboxRow[], complete: boolean): void {
    if (!complete) {
      this.#next = undefined;
      return;
    }
    const last = rows.at(-1);
    if (last !== undefined) this.#next = last.seq + 1;
  }

  /** Forgets everything held (the relay stopped). */
  clear(): void {
    this.#rows = [];
    this.#next = undefined;
  }
}
