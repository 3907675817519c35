import { describe, expect, it } from 'vitest';
import { FleetgateError } from '../protocol/index.js';
import { normaliseHistoryQuery } from './history-query.js';

describe('normaliseHistoryQuery', () => {
  it('refuses a path no delta could have, naming the path and why', () => {
    const cases: [string, RegExp][] = [
      ['data..blockedPRs', /path "data\.\.blockedPRs" has an empty segment/],
      ['data.', /path "data\." has an empty segment/],
      ['', /path "" must not be empty/],
      ['data.__proto__', /path "data\.__proto__" must not contain the segment "__proto__"/],
    ];
    for (const [path, message] of cases) {
      let caught: unknown;
      try {
        normaliseHistoryQuery({ path });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(FleetgateError);
      expect(caught).toMatchObject({ code: 'FLEETGATE_WORLD_QUERY_INVALID', details: { path } });
      expect((caught as Error).message).toMatch(message);
    }
  });

  it('takes a path a delta could have, and no path at all', () => {
    expect(normaliseHistoryQuery({ path: 'data.failures.0.job' }).path).toBe('data.failures.0.job');
    expect(normaliseHistoryQuery({}).path).toBeUndefined();
  });
});
