/**
 * Keeps `value` under `key` in `cache` and returns it; a cache that already holds `limit` entries
 * starts over first. For caches of values derived from text that peers or the fleet choose (topics,
 * delta paths, agent URLs): the bound keeps memory finite whatever arrives, and starting over
 * instead of evicting entry by entry keeps a hit to one `Map.get`, with no bookkeeping per read.
 *
 * @example
 * ```ts
 * return cache.get(topic) ?? remember(cache, 4_096, topic, trie.match(topic));
 * ```
 */
export function remember<K, V>(cache: Map<K, V>, limit: number, key: K, value: V): V {
  if (cache.size >= limit) cache.clear();
  cache.set(key, value);
  return value;
}
