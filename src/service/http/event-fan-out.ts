/**
 * The live-event hub's fan-out: clients grouped by filter, each group's matched frames written to
 * all its clients at once in flushes, and the budget of what all clients' queues hold together.
 */
import { TopicTrie } from '../../bus/index.js';
import type { SseClient } from './sse-client.js';
import { SharedBytes } from './sse-client.js';
import { remember } from '../../protocol/caches/index.js';

/** Distinct topics whose match a group remembers. */
const MATCH_CACHE_LIMIT = 1024;

/** A filter shared by every client with the same patterns. */
export interface Group {
  key: string;
  all: boolean;
  trie: TopicTrie<true>;
  /** Topic → matches, so a repeated topic is not walked through the trie again. */
  matched: Map<string, boolean>;
  clients: Set<SseClient>;
  /** Frames matched since the last flush: written to every client in one chunk. */
  pending: Buffer[];
}

/**
 * Longest time frames wait for a flush while the hub is busy writing (see `#schedule`), in
 * milliseconds: the most a busy hub adds to an event's latency.
 */
const MAX_COALESCE_MS = 20;

/** True when the group's filter takes `topic`. */
export function matches(group: Group, topic: string): boolean {
  if (group.all) return true;
  return (
    group.matched.get(topic) ??
    remember(group.matched, MATCH_CACHE_LIMIT, topic, group.trie.match(topic).length > 0)
  );
}

/**
 * The live clients of one hub by filter group, and the flushes that write to them.
 *
 * Frames go out in flushes: per filter group, the frames since the last flush are joined into
 * one buffer, encoded and framed once, and written to each of its clients in one write (a
 * thousand clients would otherwise cost a thousand writes per event). A flush runs in the turn
 * of the event loop after the events came, unless the hub is busy: then it waits until as long
 * after the previous flush as that flush took (at most MAX_COALESCE_MS), so writing takes at
 * most about half of the loop and a flush carries more frames per write as the rate grows.
 */
export class FanOut {
  /** The groups by key (their sorted patterns). */
  readonly groups = new Map<string, Group>();
  /** Most bytes queued for all clients together (`events.bufferBytes`). */
  readonly #bufferBytes: number;
  #delivered = 0;
  #queuedBytes = 0;
  #flushScheduled: { immediate: NodeJS.Immediate } | { timeout: NodeJS.Timeout } | undefined;
  #lastFlushEnd = 0;
  #lastFlushCost = 0;

  constructor(bufferBytes: number) {
    this.#bufferBytes = bufferBytes;
  }

  /** Frames written to clients (each client counts). */
  get delivered(): number {
    return this.#delivered;
  }

  /** Bytes queued for clients that are behind. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** Told by each client of every change of the bytes queued for it. */
  readonly onQueued = (delta: number): void => void (this.#queuedBytes += delta);

  /** The group of these patterns, made when it is the first. */
  groupOf(patterns: readonly string[]): Group {
    const sorted = [...new Set(patterns)].sort();
    const key = sorted.join(',');
    let group = this.groups.get(key);
    if (group === undefined) {
      const trie = new TopicTrie<true>();
      for (const p of sorted) trie.add(p, true);
      group = {
        key,
        all: sorted.includes('>'),
        trie,
        matched: new Map(),
        clients: new Set(),
        pending: [],
      };
      this.groups.set(key, group);
    }
    return group;
  }

  /** Queues a frame for each group with clients whose filter takes `topic`. */
  push(topic: string, bytes: Buffer): void {
    for (const group of this.groups.values()) {
      if (group.clients.size === 0 || !matches(group, topic)) continue;
      group.pending.push(bytes);
      this.#schedule();
    }
  }

  /** A comment line to every client that has nothing waiting. */
  heartbeat(bytes: SharedBytes): void {
    for (const group of this.groups.values())
      for (const client of group.clients) client.heartbeat(bytes);
  }

  /** Writes every group's pending frames to its clients now. */
  readonly flush = (): void => {
    if (this.#flushScheduled !== undefined) {
      if ('immediate' in this.#flushScheduled) clearImmediate(this.#flushScheduled.immediate);
      else clearTimeout(this.#flushScheduled.timeout);
      this.#flushScheduled = undefined;
    }
    const started = performance.now();
    let wrote = false;
    for (const group of this.groups.values()) {
      const events = group.pending.length;
      if (events === 0) continue;
      const bytes = new SharedBytes(
        events === 1 ? group.pending[0]! : Buffer.concat(group.pending),
        events,
      );
      group.pending.length = 0;
      this.#delivered += events * group.clients.size;
      for (const client of [...group.clients]) client.send(bytes);
      wrote = true;
    }
    this.#enforceBudget();
    if (!wrote) return;
    this.#lastFlushEnd = performance.now();
    this.#lastFlushCost = this.#lastFlushEnd - started;
  };

  #schedule(): void {
    if (this.#flushScheduled !== undefined) return;
    const wait = Math.min(
      MAX_COALESCE_MS,
      this.#lastFlushEnd + this.#lastFlushCost - performance.now(),
    );
    this.#flushScheduled =
      wait <= 0
        ? { immediate: setImmediate(this.flush) }
        : { timeout: setTimeout(this.flush, wait) };
  }

  /**
   * Past the sum of all clients' budget, the clients furthest behind are cut until the rest fits:
   * however many clients there are, what waits for them stays bounded.
   */
  #enforceBudget(): void {
    while (this.#queuedBytes > this.#bufferBytes) {
      let furthest: SseClient | undefined;
      for (const group of this.groups.values()) {
        for (const client of group.clients) {
          if (furthest === undefined || client.queuedBytes > furthest.queuedBytes)
            furthest = client;
        }
      }
      if (furthest === undefined || furthest.queuedBytes === 0) return;
      furthest.cut(
        'buffer-bytes',
        `The gateway's live-event clients had more than ${this.#bufferBytes} bytes waiting (events.bufferBytes) and this client was the furthest behind`,
      );
    }
  }
}
