/**
 * Split and checked delta paths, kept per path text. Agents report the same few paths over and
 * over (`data.counters.c3`, `data.status.s12`); splitting each entry's path anew allocated its
 * segments and made every property lookup hash a fresh key, the largest cost of applying an entry.
 */
import { splitPath } from './apply.js';

/** Distinct paths kept before the cache starts over (a bound on its memory, not a tuning knob). */
const PATH_CACHE_SIZE = 2048;

/** Segments of delta paths by path text; one per materialiser. */
export class PathCache {
  readonly #segments = new Map<string, readonly string[]>();

  /** The segments of `path` (shared: never mutate them), or undefined when the path is invalid. */
  segments(path: string): readonly string[] | undefined {
    let segments = this.#segments.get(path);
    if (segments === undefined) {
      segments = splitPath(path);
      if (segments === undefined) return undefined;
      if (this.#segments.size >= PATH_CACHE_SIZE) this.#segments.clear();
      this.#segments.set(path, segments);
    }
    return segments;
  }
}
