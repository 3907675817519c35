import { describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import {
  MAX_TOPIC_TOKENS,
  isValidPattern,
  isValidTopic,
  parsePattern,
  parseTopic,
  topicMatches,
} from './topic-pattern.js';

function codeOf(call: () => unknown): string | undefined {
  try {
    call();
  } catch (error) {
    return isFleetgateError(error) ? error.code : 'not a FleetgateError';
  }
  return undefined;
}

describe('topics', () => {
  it('accepts dotted tokens and returns them', () => {
    expect(parseTopic('world.state.delta')).toEqual(['world', 'state', 'delta']);
    expect(parseTopic('ops.alert.radius-violation')).toEqual(['ops', 'alert', 'radius-violation']);
  });

  it.each(['', '.', 'a.', '.a', 'a..b', 'a b', 'a\tb', 'a\u0000', 'a.*', '>', 'a.b>', 'a*'])(
    'rejects %j with FLEETGATE_TOPIC_INVALID',
    (topic) => {
      expect(codeOf(() => parseTopic(topic))).toBe('FLEETGATE_TOPIC_INVALID');
      expect(isValidTopic(topic)).toBe(false);
    },
  );

  it('names the reason and the topic in the error', () => {
    expect(() => parseTopic('a..b')).toThrow(/Invalid topic "a\.\.b": token 2 is empty/);
    expect(() => parseTopic('a.*')).toThrow(/wildcard/);
  });

  it('limits length and depth', () => {
    expect(isValidTopic(Array.from({ length: MAX_TOPIC_TOKENS }, () => 'a').join('.'))).toBe(true);
    expect(isValidTopic(Array.from({ length: MAX_TOPIC_TOKENS + 1 }, () => 'a').join('.'))).toBe(
      false,
    );
    expect(isValidTopic('a'.repeat(257))).toBe(false);
  });
});

describe('patterns', () => {
  it.each(['a', 'a.b', '*', 'a.*', '*.b', 'a.>', '>', '*.*.>', 'a.*.c'])('accepts %j', (p) => {
    expect(isValidPattern(p)).toBe(true);
  });

  it.each(['', 'a..b', 'a.>.b', '>.a', '>.>', 'a*', 'a.b>', '*a', 'a .b', '#', 'a.#', 'a. '])(
    'rejects %j with FLEETGATE_TOPIC_INVALID',
    (p) => {
      expect(codeOf(() => parsePattern(p))).toBe('FLEETGATE_TOPIC_INVALID');
    },
  );

  it("explains that '>' must be last", () => {
    expect(() => parsePattern('a.>.b')).toThrow(/'>' must be the last token/);
  });
});

describe('topicMatches (reference matcher)', () => {
  it.each([
    ['a.b', 'a.b', true],
    ['a.b', 'a.b.c', false],
    ['a.b', 'a', false],
    ['a.*', 'a.b', true],
    ['a.*', 'a', false],
    ['a.*', 'a.b.c', false],
    ['a.>', 'a.b', true],
    ['a.>', 'a.b.c.d', true],
    ['a.>', 'a', false],
    ['>', 'a', true],
    ['>', 'a.b.c', true],
    ['*', 'a', true],
    ['*', 'a.b', false],
    ['*.b.>', 'x.b.y', true],
    ['*.b.>', 'x.b', false],
    ['a.*.c', 'a.x.c', true],
    ['a.*.c', 'a.x.d', false],
  ] as const)('%s ~ %s → %s', (pattern, topic, expected) => {
    expect(topicMatches(pattern, topic)).toBe(expected);
  });

  it("rejects the reference bus's '#' wildcard loudly and points to '>'", () => {
    expect(() => topicMatches('world.#', 'world.state')).toThrow(/use '>'/);
    expect(isValidTopic('a.#')).toBe(false);
  });
});
