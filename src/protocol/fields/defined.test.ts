import { describe, expect, expectTypeOf, it } from 'vitest';
import { defined } from './defined.js';

interface Options {
  name: string;
  schema?: string;
  limit?: number | null;
}

describe('defined', () => {
  it('drops undefined values and keeps null, 0, empty string and false', () => {
    const out = defined({ gone: undefined, none: null, zero: 0, empty: '', no: false });
    expect(out).toStrictEqual({ none: null, zero: 0, empty: '', no: false });
    expect(Object.keys(out)).not.toContain('gone');
  });

  it('returns a new object and leaves its input alone', () => {
    const input = { a: 1, b: undefined };
    const out = defined(input);
    expect(out).not.toBe(input);
    expect(input).toStrictEqual({ a: 1, b: undefined });
    expect('b' in input).toBe(true);
  });

  it('types possibly undefined fields as optional, as exactOptionalPropertyTypes wants', () => {
    const schema = undefined as string | undefined;
    const limit = 5 as number | null | undefined;
    const out = defined({ name: 'fleet', schema, limit });
    expectTypeOf(out).toEqualTypeOf<{ name: string; schema?: string; limit?: number | null }>();
    // Fails to compile if `schema` were typed `string | undefined`.
    const options: Options = out;
    expect(options).toStrictEqual({ name: 'fleet', limit: 5 });
    // @ts-expect-error `name` is required and `defined` never makes it up.
    const missing: Options = defined({ schema });
    expect(missing).toStrictEqual({});
  });
});
