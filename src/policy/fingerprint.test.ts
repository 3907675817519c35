import { describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import { callFingerprint, canonicalJson, normaliseInput, policyVersion } from './fingerprint.js';
import { DEFAULT_POLICY_RULES } from './types.js';

describe('canonicalJson', () => {
  it('sorts keys by code unit, drops whitespace and undefined members', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], c: undefined, A: { z: 0, y: -0 } })).toBe(
      '{"A":{"y":0,"z":0},"a":[true,null,"x"],"b":1}',
    );
  });

  it('writes numbers in their shortest round-trip form (RFC 8785 examples)', () => {
    expect(canonicalJson([1e21, 1e-7, 0.1, 123456789012345680000, 4.5, 1.0])).toBe(
      '[1e+21,1e-7,0.1,123456789012345680000,4.5,1]',
    );
  });

  it('escapes strings as JSON does and sorts non-ASCII keys by UTF-16', () => {
    expect(canonicalJson({ '\u20ac': 1, '\r': 2, é: 3 })).toBe('{"\\r":2,"é":3,"€":1}');
  });

  it('refuses what JSON cannot carry', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [Number.NaN, Infinity, 1n, cyclic]) {
      expect(() => canonicalJson(bad)).toThrow();
      try {
        canonicalJson(bad);
      } catch (e) {
        expect(isFleetgateError(e, 'FLEETGATE_LIMIT_EXCEEDED')).toBe(true);
      }
    }
  });
});

describe('callFingerprint', () => {
  const base = {
    agent: 'ops',
    skill: 'pr_review',
    input: normaliseInput({ text: 'merge PR 42', data: { repo: 'a', pr: 42 } }),
    radius: 'repo' as const,
    policyVersion: policyVersion(DEFAULT_POLICY_RULES),
  };

  it('is stable across key order of the data', () => {
    const again = {
      ...base,
      input: normaliseInput({ text: 'merge PR 42', data: { pr: 42, repo: 'a' } }),
    };
    expect(callFingerprint(again)).toBe(callFingerprint(base));
    expect(callFingerprint(base)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes with one byte of input, the radius, the skill or the policy', () => {
    const fp = callFingerprint(base);
    expect(
      callFingerprint({
        ...base,
        input: normaliseInput({ text: 'merge PR 43', data: { repo: 'a', pr: 42 } }),
      }),
    ).not.toBe(fp);
    expect(callFingerprint({ ...base, radius: 'fleet' })).not.toBe(fp);
    expect(callFingerprint({ ...base, skill: 'sitrep' })).not.toBe(fp);
    expect(
      callFingerprint({
        ...base,
        policyVersion: policyVersion({ ...DEFAULT_POLICY_RULES, approvalAtOrAbove: 'fleet' }),
      }),
    ).not.toBe(fp);
  });
});
