/**
 * Split and checked delta paths, kept per path text. Agents report the same few paths over and
 * over (`data.counters.c3`, `data.status.s12`); splitting each entry's path anew allocated its
 * segments and made every property lookup hash a fresh key, the largest cost of applying an entry.
 */
import { splitPath } from './apply.js';
import { remember } from '../protocol/caches/index.js';

/** Distinct paths kept before the cache starts over (a bound on its memory, not a tuning knob). */
const PATH_CACHE_SIZE = 2048;

/** Segments of delta paths by path text; one per materialiser. */
export class PathCache {
  readonly #segments = new Map<string, readonly string[]>();

  /** The segments of `path` (shared: never mutate them), or undefined when the path is invalid. */
  segments(path: string): readonly string[] | undefined {
    const cached = this.#segments.get(path);
    if (cached !== undefined) return cached;
    const segments = splitPath(path);
    return segments === undefined
      ? undefined
      : remember(this.#segments, PATH_CACHE_SIZE, path, segments);
  }
}
