import { describe, expect, it } from 'vitest';
import { checkDeltaDomain, checkDeltaPath } from './delta.js';
import { FORBIDDEN_PATH_SEGMENTS } from './limits.js';

describe('delta domain and path rules', () => {
  it('refuse every prototype-reaching name, as a domain and as any segment of a path', () => {
    for (const name of FORBIDDEN_PATH_SEGMENTS) {
      expect(checkDeltaDomain(name)).toBe(`must not be ${JSON.stringify(name)}`);
      for (const path of [name, `data.${name}`, `${name}.x`, `a.${name}.b`]) {
        expect(checkDeltaPath(path)).toBe(`must not contain the segment ${JSON.stringify(name)}`);
      }
    }
  });

  it('accept names that only resemble them', () => {
    for (const name of [
      '__proto_',
      '_proto__',
      'constructors',
      'Prototype',
      'proto',
      'construct',
    ]) {
      expect(checkDeltaDomain(name)).toBeUndefined();
      expect(checkDeltaPath(`data.${name}`)).toBeUndefined();
    }
  });
});
