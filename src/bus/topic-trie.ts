/**
 * A token trie of subscription patterns. Matching a topic walks at most the exact child, the `*`
 * child and the `>` set at each level, so its cost grows with the topic's depth (and the number of
 * matches), not with the number of subscriptions.
 */
import { parsePattern, parseTopic } from './topic-pattern.js';

interface TrieNode<T> {
  /** Children by literal token. */
  readonly exact: Map<string, TrieNode<T>>;
  /** Child for a `*` token. */
  star: TrieNode<T> | undefined;
  /** Values whose pattern ends here with `>` (match one or more further tokens). */
  readonly rest: Set<T>;
  /** Values whose pattern ends exactly here. */
  readonly here: Set<T>;
}

function node<T>(): TrieNode<T> {
  return { exact: new Map(), star: undefined, rest: new Set(), here: new Set() };
}

/**
 * Maps subscription patterns (NATS syntax) to values and finds every value whose pattern matches
 * a topic. A value appears at most once per `match()`, because each pattern is one path and a
 * topic reaches each trie node by at most one path.
 *
 * @example
 * ```ts
 * const trie = new TopicTrie<string>();
 * trie.add('ops.alert.>', 'alerts');
 * trie.match('ops.alert.radius'); // ['alerts']
 * ```
 */
export class TopicTrie<T> {
  readonly #root: TrieNode<T> = node();
  #size = 0;

  /** Number of (pattern, value) entries. */
  get size(): number {
    return this.#size;
  }

  /** Adds `value` under `pattern` (validated; throws `FLEETGATE_TOPIC_INVALID`). */
  add(pattern: string, value: T): void {
    const tokens = parsePattern(pattern);
    let at = this.#root;
    for (const token of tokens) {
      if (token === '>') {
        if (!at.rest.has(value)) this.#size += 1;
        at.rest.add(value);
        return;
      }
      if (token === '*') {
        at.star ??= node();
        at = at.star;
      } else {
        let next = at.exact.get(token);
        if (next === undefined) {
          next = node();
          at.exact.set(token, next);
        }
        at = next;
      }
    }
    if (!at.here.has(value)) this.#size += 1;
    at.here.add(value);
  }

  /** Removes `value` from `pattern`; prunes emptied nodes. Returns false when it was not there. */
  remove(pattern: string, value: T): boolean {
    const tokens = parsePattern(pattern);
    const path: { parent: TrieNode<T>; token: string }[] = [];
    let at = this.#root;
    let removed = false;
    for (const token of tokens) {
      if (token === '>') {
        removed = at.rest.delete(value);
        break;
      }
      const next = token === '*' ? at.star : at.exact.get(token);
      if (next === undefined) return false;
      path.push({ parent: at, token });
      at = next;
    }
    if (tokens[tokens.length - 1] !== '>') removed = at.here.delete(value);
    if (!removed) return false;
    this.#size -= 1;
    // Prune from the leaf up while nodes are empty, so churn does not grow the trie.
    for (let i = path.length - 1; i >= 0; i -= 1) {
      const { parent, token } = path[i]!;
      const child = token === '*' ? parent.star : parent.exact.get(token);
      if (child === undefined || !isEmpty(child)) break;
      if (token === '*') parent.star = undefined;
      else parent.exact.delete(token);
    }
    return true;
  }

  /** Every value whose pattern matches `topic` (validated; throws `FLEETGATE_TOPIC_INVALID`). */
  match(topic: string): T[] {
    return this.matchTokens(parseTopic(topic));
  }

  /** {@link match} on already-validated topic tokens. */
  matchTokens(tokens: readonly string[]): T[] {
    const out: T[] = [];
    collect(this.#root, tokens, 0, out);
    return out;
  }
}

function isEmpty<T>(n: TrieNode<T>): boolean {
  return n.exact.size === 0 && n.star === undefined && n.rest.size === 0 && n.here.size === 0;
}

function collect<T>(at: TrieNode<T>, tokens: readonly string[], index: number, out: T[]): void {
  if (index === tokens.length) {
    for (const v of at.here) out.push(v);
    return;
  }
  // `>` needs at least one more token, which holds here because index < tokens.length.
  for (const v of at.rest) out.push(v);
  const exact = at.exact.get(tokens[index]!);
  if (exact !== undefined) collect(exact, tokens, index + 1, out);
  if (at.star !== undefined) collect(at.star, tokens, index + 1, out);
}
