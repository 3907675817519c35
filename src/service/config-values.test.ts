import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isFleetgateError } from '../protocol/index.js';
import {
  BUS_URL_OPTIONS,
  parseBusUrl,
  parseStoreTarget,
  readBusUrl,
  readStoreUrl,
  STORE_URL_OPTIONS,
  type UrlReading,
} from './config-values.js';

/** The problems of a reading, one message each (none when it reads). */
function problems(reading: UrlReading<unknown>): string[] {
  return reading.ok ? [] : reading.problems.map((p) => p.message);
}

describe('bus URLs', () => {
  it('reads the stream and the subject prefix of a nats:// URL, and memory', () => {
    expect(readBusUrl('memory')).toEqual({ ok: true, value: { kind: 'memory' } });
    expect(readBusUrl('nats://127.0.0.1:4222')).toEqual({
      ok: true,
      value: { kind: 'nats', servers: 'nats://127.0.0.1:4222' },
    });
    expect(parseBusUrl('nats://a:4222,nats://b:4222?stream=FG_B&prefix=fg-b')).toEqual({
      kind: 'nats',
      servers: 'nats://a:4222,nats://b:4222',
      stream: 'FG_B',
      prefix: 'fg-b',
    });
  });

  it('refuses an option it does not know, naming it, the one meant and the ones it takes', () => {
    expect(problems(readBusUrl('nats://h:4222?streem=X&prefx=y'))).toEqual([
      'unknown query option "streem"; did you mean "stream"? (allowed: stream, prefix)',
      'unknown query option "prefx"; did you mean "prefix"? (allowed: stream, prefix)',
    ]);
    expect(problems(readBusUrl('nats://h:4222?stream=A&stream=B&queue=q'))).toEqual([
      'query option "stream" is given twice',
      'unknown query option "queue" (allowed: stream, prefix)',
    ]);
  });

  it('refuses a stream name NATS or the bus would refuse, and a prefix of more than one subject token', () => {
    for (const stream of ['dw.bad', 'a*', 'a>', 'a b', 'a/b', 'a\\b', '', 'x'.repeat(256)]) {
      const [problem, ...more] = problems(
        readBusUrl(`nats://h:4222?stream=${encodeURIComponent(stream)}`),
      );
      expect(more).toEqual([]);
      expect(problem).toMatch(/^\?stream= must be a JetStream stream name: 1 to 255 letters/);
    }
    for (const prefix of ['dw.x', 'a*', 'a>', 'a b', '']) {
      expect(problems(readBusUrl(`nats://h:4222?prefix=${encodeURIComponent(prefix)}`))).toEqual([
        expect.stringMatching(/^\?prefix= must be one subject token/),
      ]);
    }
    expect(problems(readBusUrl('nats://h:4222?stream=dw.bad'))[0]).toContain('(got "dw.bad")');
  });

  it('refuses what is not memory or a NATS server', () => {
    for (const url of ['kafka://x', 'nats://', 'nats://?stream=A', 'memory?stream=A', '']) {
      expect(problems(readBusUrl(url))).toEqual(['must be memory or nats://host:port']);
    }
  });

  it('throws a coded configuration error without the password of the URL', () => {
    expect(() => parseBusUrl('nats://me:hunter2@h:4222?streem=X')).toThrow(
      expect.objectContaining({
        code: 'FLEETGATE_CONFIG_INVALID',
        message:
          'Bus URL nats://me:***@h:4222?streem=X: unknown query option "streem"; did you mean "stream"? (allowed: stream, prefix)',
      }),
    );
  });

  it('refuses every option name but stream and prefix (property)', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,11}$/), (name) => {
        const read = readBusUrl(`nats://h:4222?${name}=v`);
        if ((BUS_URL_OPTIONS as readonly string[]).includes(name)) return;
        expect(read.ok).toBe(false);
        expect(problems(read)[0]).toContain(`"${name}"`);
        expect(problems(read)[0]).toContain('(allowed: stream, prefix)');
      }),
    );
  });
});

describe('store URLs', () => {
  it('takes ?schema= out for the store and leaves the driver its own parameters', () => {
    expect(readStoreUrl('sqlite:./data/fleetgate.db')).toEqual({
      ok: true,
      value: { url: 'sqlite:./data/fleetgate.db' },
    });
    expect(parseStoreTarget('postgres://u@h:5432/db?schema=gw_b')).toEqual({
      url: 'postgres://u@h:5432/db',
      schema: 'gw_b',
    });
    expect(
      parseStoreTarget('postgres://u@h/db?sslmode=verify-full&schema=gw_b&sslrootcert=/ca.crt'),
    ).toEqual({
      url: 'postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fca.crt',
      schema: 'gw_b',
    });
    // Without a schema, server settings may still go to the driver (a search path included).
    expect(parseStoreTarget('postgres://u@h/db?options=-c%20search_path%3Dgw_b')).toEqual({
      url: 'postgres://u@h/db?options=-c+search_path%3Dgw_b',
    });
  });

  it('refuses an option the driver would drop, naming it, the one meant and the ones it takes', () => {
    const allowed = `(allowed: ${STORE_URL_OPTIONS.join(', ')})`;
    expect(problems(readStoreUrl('postgres://u@h/db?shema=gw_b&sslpassword=x'))).toEqual([
      `unknown query option "shema"; did you mean "schema"? ${allowed}`,
      `unknown query option "sslpassword": the driver reads no key passphrase from the URL; give sslkey a key without one ${allowed}`,
    ]);
    expect(problems(readStoreUrl('postgres://u@h/db?statement_timeout=5'))).toEqual([
      `unknown query option "statement_timeout": set storeTimeouts.statement in the configuration instead ${allowed}`,
    ]);
    expect(problems(readStoreUrl('postgres://u@h/db?schema=a&options=-c%20x%3D1'))).toEqual([
      expect.stringMatching(/^\?options= cannot go with \?schema=/),
    ]);
  });

  it('refuses a schema name the store would refuse, with the rule', () => {
    for (const schema of ['Bad-Schema;drop', 'Upper', '1st', '', 'a'.repeat(64), 'a b']) {
      expect(
        problems(readStoreUrl(`postgres://u@h/db?schema=${encodeURIComponent(schema)}`)),
      ).toEqual([
        expect.stringMatching(
          /^\?schema= must be a schema name the store takes: 1 to 63 of a-z, 0-9 and _, not starting with a digit \(got "/,
        ),
      ]);
    }
    expect(problems(readStoreUrl('postgres://u@h/db?schema=Bad-Schema;drop'))[0]).toContain(
      '(got "Bad-Schema;drop")',
    );
    expect(readStoreUrl(`postgres://u@h/db?schema=_${'a'.repeat(62)}`).ok).toBe(true);
  });

  it('refuses a query on a sqlite: URL, which would be read as part of the file name', () => {
    expect(problems(readStoreUrl('sqlite:./data/fg.db?schema=gw'))).toEqual([
      'a sqlite: store takes no query options: "?schema=gw" would be read as part of the file name (?schema= is for postgres://)',
    ]);
  });

  it('throws FLEETGATE_STORE_URL_INVALID without the password of the URL', () => {
    let caught: unknown;
    try {
      parseStoreTarget('postgres://postgres:secret@h/db?shema=gw');
    } catch (error) {
      caught = error;
    }
    expect(isFleetgateError(caught, 'FLEETGATE_STORE_URL_INVALID')).toBe(true);
    expect((caught as Error).message).toMatch(
      /^Store URL postgres:\/\/postgres:\*\*\*@h\/db\?shema=gw: unknown query option "shema"/,
    );
    expect(JSON.stringify(caught)).not.toContain('secret');
  });
});
