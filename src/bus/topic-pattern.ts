/**
 * Topic and pattern syntax, the same for every bus backend: NATS subjects. Tokens are split on
 * `.`; in a pattern `*` matches exactly one token and `>` matches one or more trailing tokens and
 * may only be the last token. A published topic never contains a wildcard.
 *
 * Validation is strict on purpose: the reference bus silently matched nothing on a bad pattern,
 * which hid typos for weeks. Every invalid topic or pattern throws `FLEETGATE_TOPIC_INVALID` at
 * the call that passed it.
 */
import { FleetgateError } from '../protocol/index.js';

/** Longest topic or pattern accepted, in characters. */
export const MAX_TOPIC_LENGTH = 256;
/** Most tokens a topic or pattern may have. */
export const MAX_TOPIC_TOKENS = 16;

// Whitespace, control characters and DEL are never valid in a NATS subject token.
// eslint-disable-next-line no-control-regex
const FORBIDDEN_CHAR = /[\s\u0000-\u001f\u007f]/u;

function invalid(kind: 'topic' | 'pattern', value: string, reason: string): FleetgateError {
  return new FleetgateError(
    'FLEETGATE_TOPIC_INVALID',
    `Invalid ${kind} ${JSON.stringify(value)}: ${reason}`,
    { details: { [kind]: value, reason } },
  );
}

function splitChecked(kind: 'topic' | 'pattern', value: unknown): string[] {
  if (typeof value !== 'string') {
    throw invalid(kind, String(value), 'must be a string');
  }
  if (value.length === 0) throw invalid(kind, value, 'is empty');
  if (value.length > MAX_TOPIC_LENGTH) {
    throw invalid(kind, value, `is longer than ${MAX_TOPIC_LENGTH} characters`);
  }
  if (FORBIDDEN_CHAR.test(value)) {
    throw invalid(kind, value, 'contains whitespace or a control character');
  }
  const tokens = value.split('.');
  if (tokens.length > MAX_TOPIC_TOKENS) {
    throw invalid(kind, value, `has more than ${MAX_TOPIC_TOKENS} tokens`);
  }
  tokens.forEach((token, index) => {
    if (token.length === 0) throw invalid(kind, value, `token ${index + 1} is empty`);
    // The reference bus had a '#' wildcard no broker knows; a ported pattern must fail loudly
    // instead of silently matching nothing (and a topic with a '#' token could never be matched).
    if (token === '#') {
      throw invalid(kind, value, `'#' is not a wildcard here; use '>' for the rest of a topic`);
    }
  });
  return tokens;
}

/**
 * Checks a topic to publish on and returns its tokens.
 *
 * @throws FleetgateError `FLEETGATE_TOPIC_INVALID` on an empty token, whitespace or a wildcard.
 */
export function parseTopic(topic: string): string[] {
  const tokens = splitChecked('topic', topic);
  tokens.forEach((token, index) => {
    if (token.includes('*') || token.includes('>')) {
      throw invalid('topic', topic, `token ${index + 1} contains a wildcard; publish to a topic`);
    }
  });
  return tokens;
}

/**
 * Checks a subscription pattern and returns its tokens.
 *
 * @throws FleetgateError `FLEETGATE_TOPIC_INVALID` on an empty token, whitespace, `>` anywhere but
 * the last token, or a wildcard mixed into a token (`a*`, `b>`).
 */
export function parsePattern(pattern: string): string[] {
  const tokens = splitChecked('pattern', pattern);
  tokens.forEach((token, index) => {
    if (token === '>') {
      if (index !== tokens.length - 1) {
        throw invalid(
          'pattern',
          pattern,
          `'>' must be the last token (found at token ${index + 1})`,
        );
      }
    } else if (token !== '*' && (token.includes('*') || token.includes('>'))) {
      throw invalid(
        'pattern',
        pattern,
        `token ${index + 1} mixes a wildcard with other characters`,
      );
    }
  });
  return tokens;
}

/** True when `parse` accepts `text`. */
function parses(parse: (text: string) => unknown, text: string): boolean {
  try {
    parse(text);
    return true;
  } catch {
    return false;
  }
}

/** True when `topic` is a valid topic to publish on. */
export function isValidTopic(topic: string): boolean {
  return parses(parseTopic, topic);
}

/** True when `pattern` is a valid subscription pattern. */
export function isValidPattern(pattern: string): boolean {
  return parses(parsePattern, pattern);
}

/**
 * True when `topic` matches `pattern` on the NATS rules. Both are validated first (throws on an
 * invalid one). This is the simple reference matcher; buses use the token trie.
 *
 * @example
 * ```ts
 * topicMatches('ops.alert.>', 'ops.alert.radius') // true
 * topicMatches('ops.*', 'ops.alert.radius')       // false
 * ```
 */
export function topicMatches(pattern: string, topic: string): boolean {
  return tokensMatch(parsePattern(pattern), parseTopic(topic));
}

/** {@link topicMatches} on already-split, already-validated tokens. */
export function tokensMatch(pattern: readonly string[], topic: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i += 1) {
    const p = pattern[i];
    if (p === '>') return topic.length > i;
    if (i >= topic.length) return false;
    if (p !== '*' && p !== topic[i]) return false;
  }
  return pattern.length === topic.length;
}
