import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  costPayloadSchema,
  DELTA_OPS,
  LIMITS,
  parseCostPayload,
  parseDeltaEntry,
  worldStateDeltaEntrySchema,
  type CostPayload,
} from './index.js';
import { isRecord, preview } from './json-path.js';

/** The verdict of the schema alone, worded as `parseDeltaEntry` words it (the reference). */
function schemaDeltaVerdict(candidate: unknown): ReturnType<typeof parseDeltaEntry> {
  if (!isRecord(candidate)) {
    return { ok: false, reason: `entry must be an object (got ${preview(candidate)})` };
  }
  const result = worldStateDeltaEntrySchema().safeParse(candidate);
  if (!result.success) {
    const reason = result.error.issues
      .map((issue) => {
        const field = issue.path.map(String).join('.');
        return field === '' ? issue.message : `${field} ${issue.message}`;
      })
      .join('; ');
    return { ok: false, reason };
  }
  const { domain, path, op, value } = result.data;
  return { ok: true, entry: { domain, path, op, value } };
}

/** The verdict of the schema alone, shaped as `parseCostPayload` shapes it (the reference). */
function schemaCostVerdict(value: unknown): ReturnType<typeof parseCostPayload> {
  const result = costPayloadSchema().safeParse(value);
  if (!result.success) {
    const reason = result.error.issues
      .map((i) => `${i.path.length > 0 ? `${i.path.join('.')} ` : ''}${i.message}`)
      .join('; ');
    return { ok: false, reason };
  }
  const out: CostPayload = {};
  const { usage, durationMs, costUsd, success } = result.data;
  if (usage !== undefined) {
    const counters: NonNullable<CostPayload['usage']> = {};
    for (const [k, v] of Object.entries(usage)) if (v !== undefined) counters[k] = v;
    out.usage = counters;
  }
  if (durationMs !== undefined) out.durationMs = durationMs;
  if (costUsd !== undefined) out.costUsd = costUsd;
  if (success !== undefined) out.success = success;
  return { ok: true, payload: out };
}

/** `[1, <hole>, 3]`: a value JSON cannot carry, built without a sparse literal. */
const sparse: unknown[] = [1];
sparse[2] = 3;
const oddNumber = fc.constantFrom(0, -0, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53, 1e308);
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  oddNumber,
  fc.constantFrom(undefined, 'x'.repeat(LIMITS.deltaValueBytes), 'é'.repeat(40_000)),
  fc.constantFrom(new Date(0), sparse, Object.create(null) as unknown, BigInt(1)),
  // Not JSON, at the top or inside: each is refused, by the fast path and the schema alike.
  fc.constantFrom(() => 1, Symbol('s'), new Map([[1, 2]]), { x: Infinity }, [1, undefined]),
  fc.constantFrom({ a: { b: NaN } }, { f: () => 1 }, { when: new Date(0) }, [{ k: 1n }]),
);
const segment = fc.oneof(
  fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,6}$/),
  fc.constantFrom('', '__proto__', 'constructor', 'prototype', ' ', 'x'.repeat(1100)),
);
const domain = fc.oneof(
  fc.stringMatching(/^[a-z][a-z_]{0,15}$/),
  fc.constantFrom('', 'a.b', 'a b', '\u00a0', 'x'.repeat(LIMITS.nameLength)),
  fc.constantFrom('x'.repeat(LIMITS.nameLength + 1), 7, null, undefined),
  fc.string(),
);
const path = fc.oneof(
  fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('.')),
  fc.constantFrom(Array.from({ length: 33 }, () => 'a').join('.'), 1, undefined),
  fc.string(),
);
const op = fc.oneof(fc.constantFrom(...DELTA_OPS), fc.constantFrom('del', 'SET', 1, undefined));
/** Entries near the rules: most fields valid, some not, some keys absent, some prototypes odd. */
const entryLike = fc
  .record(
    { domain, path, op, value: fc.oneof(oddValue, fc.double()), extra: fc.jsonValue() },
    { requiredKeys: [] },
  )
  .chain((entry) =>
    fc.constantFrom(
      entry,
      Object.assign(Object.create(null) as object, entry),
      Object.assign(Object.create({ value: 1 }) as object, entry),
    ),
  );
/** True when `value` has an own `__proto__` key at some depth (fast-check generates such keys). */
function hasOwnProtoKey(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (!Array.isArray(value) && Object.hasOwn(value, '__proto__')) return true;
  return Object.values(value).some(hasOwnProtoKey);
}

const validEntry = fc
  .record({
    domain: fc.stringMatching(/^[a-z][a-z_]{0,15}$/),
    path: fc
      .array(fc.stringMatching(/^[a-z][a-z0-9_]{0,6}$/), { minLength: 1, maxLength: 5 })
      .filter((s) => !s.some((x) => ['constructor', 'prototype'].includes(x)))
      .map((s) => s.join('.')),
    op: fc.constantFrom(...DELTA_OPS),
    // The rule refuses an own `__proto__` key at any depth: such a value is not valid.
    value: fc.jsonValue({ maxDepth: 2 }).filter((v) => !hasOwnProtoKey(v)),
    inc: fc.double({ noNaN: true, noDefaultInfinity: true }),
  })
  .map(({ inc, ...e }) => ({ ...e, value: e.op === 'inc' ? inc : e.value }));

const count = fc.oneof(fc.nat(), oddNumber, fc.constantFrom('1', null, undefined));
const amount = fc.oneof(fc.double(), oddNumber, fc.constantFrom('1', null, undefined));
const usageLike = fc.oneof(
  fc.record(
    { input_tokens: count, output_tokens: count, cached_tokens: fc.jsonValue(), x: oddValue },
    { requiredKeys: [] },
  ),
  fc.constantFrom(null, [], 'u', JSON.parse('{"__proto__": {"a": 1}, "b": 2}') as unknown),
  fc.constantFrom(Object.assign(Object.create(null) as object, { input_tokens: 3 })),
);
const costLike = fc.oneof(
  fc.record(
    {
      usage: usageLike,
      durationMs: amount,
      costUsd: amount,
      success: fc.oneof(fc.boolean(), fc.constantFrom('true', 0, undefined)),
      extra: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
  fc.constantFrom(new Date(0), [], Object.create(null) as unknown),
);

afterEach(() => vi.restoreAllMocks());

describe('the hand-written fast paths agree with the zod schemas', () => {
  it('parseDeltaEntry gives the verdict and reason of worldStateDeltaEntrySchema', () => {
    fc.assert(
      fc.property(fc.oneof(entryLike, validEntry, fc.anything()), (candidate) => {
        expect(parseDeltaEntry(candidate)).toStrictEqual(schemaDeltaVerdict(candidate));
      }),
      { numRuns: 3000 },
    );
  });

  it('parseCostPayload gives the verdict and reason of costPayloadSchema', () => {
    fc.assert(
      fc.property(fc.oneof(costLike, fc.anything()), (value) => {
        const verdict = parseCostPayload(value);
        expect(verdict).toStrictEqual(schemaCostVerdict(value));
        // An own `__proto__` counter must not become the prototype of the usage object.
        if (verdict.ok && verdict.payload.usage !== undefined) {
          expect(Object.getPrototypeOf(verdict.payload.usage)).toBe(Object.prototype);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts valid delta entries and cost payloads without running the schemas', () => {
    const deltaSchema = vi.spyOn(worldStateDeltaEntrySchema(), 'safeParse');
    const costSchema = vi.spyOn(costPayloadSchema(), 'safeParse');
    fc.assert(
      fc.property(validEntry, (entry) => {
        expect(parseDeltaEntry(entry)).toStrictEqual({ ok: true, entry });
      }),
      { numRuns: 300 },
    );
    const payload = { usage: { input_tokens: 120, output_tokens: 40, cached: 3 }, costUsd: 0.002 };
    expect(parseCostPayload(payload)).toStrictEqual({ ok: true, payload });
    expect(deltaSchema).not.toHaveBeenCalled();
    expect(costSchema).not.toHaveBeenCalled();
  });
});
