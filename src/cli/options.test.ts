import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { integerFlag, waitFlag } from './options.js';

describe('waitFlag', () => {
  it('reads a duration with its unit as milliseconds, up to 24d', () => {
    expect(waitFlag('1s')).toBe(1000);
    expect(waitFlag('1.5s')).toBe(1500);
    expect(waitFlag('10m')).toBe(600_000);
    expect(waitFlag('24d')).toBe(24 * 86_400_000);
  });

  it('refuses a bare number, asking for its unit, instead of reading it as milliseconds', () => {
    expect(() => waitFlag('30')).toThrow(
      new InvalidArgumentError('must be a duration with its unit, like 30s or 30m'),
    );
  });

  it('refuses a wait longer than a timer runs instead of giving up at once', () => {
    expect(() => waitFlag('25d')).toThrow(new InvalidArgumentError('must be at most 24d'));
    expect(() => waitFlag('99999999999h')).toThrow(new InvalidArgumentError('must be at most 24d'));
  });

  it('refuses zero and what is not a duration', () => {
    for (const value of ['0s', '0.0001ms', 'soon', '-5s', '']) {
      expect(() => waitFlag(value), value).toThrow(/must be a duration above zero/);
    }
  });
});

describe('integerFlag', () => {
  it('takes only decimal digits: no fraction, hex, exponent or trailing text', () => {
    const port = integerFlag(0, 65_535);
    expect(port('0')).toBe(0);
    expect(port('7433')).toBe(7433);
    for (const value of ['1.5', '0x1F00', '7433abc', '1e3', '-1', '65536', '']) {
      expect(() => port(value), value).toThrow(/must be a whole number from 0 to 65535/);
    }
  });
});
