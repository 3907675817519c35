import { describe, expect, it } from 'vitest';
import { normaliseHistoryQuery } from './history-query.js';
import { MemoryAuditLog } from './memory-audit-log.js';
import type { AuditRecord, HistoryQuery, NewAuditRecord } from './types.js';

/** A deterministic sequence of numbers in [0, 1). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

/** The fields of record `i` (of event `event`) that every shape shares; draws a domain and a path. */
function recordBase(next: () => number, i: number, event: number, recordedAt: number) {
  return {
    domain: ['ci', 'board', '', 'deploy'][Math.floor(next() * 4)]!,
    path: `data.p${Math.floor(next() * 30)}`,
    agent: `agent-${event % 3}`,
    skill: 'skill',
    taskId: `task-${event}`,
    eventId: `evt-${event}`,
    index: i % 7,
    time: '2026-11-30T05:00:00.000Z',
    recordedAt,
  };
}

/** Records of every shape the materialiser writes, and values that only look like its own. */
function records(
  count: number,
  seed: number,
  recordedAt: (i: number) => number,
): Omit<NewAuditRecord, 'status'>[] {
  const next = random(seed);
  const out: Omit<NewAuditRecord, 'status'>[] = [];
  for (let i = 0; i < count; i += 1) {
    const event = Math.floor(i / 7);
    const base = recordBase(next, i, event, recordedAt(event));
    switch (Math.floor(next() * 13)) {
      case 0:
        out.push({ ...base, op: 'inc', value: -0.5, previous: undefined, next: -0.5 });
        break;
      case 1:
        out.push({ ...base, op: 'inc', value: 2, previous: -0, next: 2, version: event + 1 });
        break;
      case 2: {
        const value = { state: 'green', n: i, list: [1, { deep: true }] };
        out.push({ ...base, op: 'set', value, previous: 'red', next: value, version: event });
        break;
      }
      case 3:
        out.push({
          ...base,
          op: 'push',
          value: { job: i },
          previous: { $summary: 'array', size: i },
          next: { $summary: 'array', size: i + 1 },
          version: event,
        });
        break;
      case 4:
        // Looks like a push's summary but is a value someone set (other key order, extra key).
        out.push({
          ...base,
          op: 'set',
          value: { size: 3, $summary: 'array' },
          previous: { $summary: 'array', size: 2, bytes: 10 },
          next: { $summary: 'array', size: 3 },
          version: event,
        });
        break;
      case 8:
        // An applied push whose sizes are not in the shape push records: kept as they are.
        out.push({
          ...base,
          op: 'push',
          value: 1,
          previous: { size: 2, $summary: 'array' },
          next: { $summary: 'array', size: 3, bytes: 4 },
          version: event,
        });
        break;
      case 5:
        out.push({
          ...base,
          op: 'delete',
          value: null,
          previous: undefined,
          next: undefined,
          reason: 'op must be set, inc or push (got "delete")',
        });
        break;
      case 6:
        out.push({
          ...base,
          op: 'push',
          value: 'x',
          previous: undefined,
          next: { $summary: 'array', size: 1 },
          version: Number.MAX_SAFE_INTEGER,
        });
        break;
      case 9:
        // Afters that do not follow from the befores: kept as they are, not derived.
        out.push({ ...base, op: 'inc', value: 2, previous: 5, next: 8, version: 2 ** 31 + event });
        break;
      case 10:
        out.push({ ...base, op: 'inc', value: 1, previous: 'text', next: NaN, version: -0 });
        break;
      case 11:
        out.push({
          ...base,
          op: 'push',
          value: 7,
          previous: { $summary: 'array', size: 4 },
          next: { $summary: 'array', size: 4 },
          version: event + 0.5,
        });
        break;
      case 12:
        // Afters that do follow: an inc onto nothing with -0, a push onto nothing.
        out.push(
          i % 2 === 0
            ? { ...base, op: 'inc', value: -0, previous: undefined, next: 0, version: event }
            : {
                ...base,
                op: 'push',
                value: [],
                previous: undefined,
                next: { $summary: 'array', size: 1 },
                version: event,
              },
        );
        break;
      default:
        out.push({
          ...base,
          op: 'inc',
          value: Number.POSITIVE_INFINITY,
          previous: undefined,
          next: undefined,
          reason: 'inc needs a finite number as value (got a number)',
        });
    }
  }
  return out;
}

/** What the log must give back: the records as given, numbered, in the readers' shape. */
function expected(given: readonly NewAuditRecord[], firstSeq: number): AuditRecord[] {
  return given.map((r, i) => {
    const record: AuditRecord = {
      seq: firstSeq + i,
      domain: r.domain,
      path: r.path,
      op: r.op,
      value: r.value,
      previous: r.previous,
      next: r.next,
      status: r.reason === undefined ? 'applied' : 'rejected',
      agent: r.agent,
      skill: r.skill,
      taskId: r.taskId,
      eventId: r.eventId,
      index: r.index,
      time: r.time,
      recordedAt: r.recordedAt,
    };
    if (r.reason !== undefined) record.reason = r.reason;
    if (r.version !== undefined) record.version = r.version;
    return record;
  });
}

function withStatus(given: Omit<NewAuditRecord, 'status'>[]): NewAuditRecord[] {
  return given.map((r) => ({ ...r, status: r.reason === undefined ? 'applied' : 'rejected' }));
}

function history(log: MemoryAuditLog, domain: string, query: HistoryQuery = {}): AuditRecord[] {
  return log.history(domain, normaliseHistoryQuery({ limit: 10_000, ...query }));
}

describe('MemoryAuditLog', () => {
  // More records than several chunks hold, so every reader crosses chunk boundaries.
  const COUNT = 10_000;

  it('gives back every record as it was appended, across chunks, in both orders', () => {
    const log = new MemoryAuditLog();
    const given = withStatus(records(COUNT, 7, (event) => 1_000 + event));
    let seq = 0;
    for (let i = 0; i < given.length; i += 333) seq = log.append(given.slice(i, i + 333), seq);
    expect(seq).toBe(COUNT);
    expect(log.length).toBe(COUNT);
    const all = expected(given, 1);
    for (const domain of ['ci', 'board', '', 'deploy']) {
      const mine = all.filter((r) => r.domain === domain);
      expect(history(log, domain, { order: 'asc' })).toEqual(mine);
      expect(history(log, domain)).toEqual([...mine].reverse());
      expect(log.appliedOf(domain)).toEqual(mine.filter((r) => r.status === 'applied'));
    }
    // -0 stays -0, and what only looked like a push's summary keeps its own keys and order.
    const lookalike = all.find((r) => r.op === 'set' && (r.value as { size?: number }).size === 3);
    const read = history(log, lookalike!.domain, { afterSeq: lookalike!.seq - 1, order: 'asc' })[0];
    expect(Object.keys(read!.value as object)).toEqual(['size', '$summary']);
    expect(Object.keys(read!.previous as object)).toEqual(['$summary', 'size', 'bytes']);
    const odd = all.find((r) => r.op === 'push' && r.value === 1);
    const readOdd = history(log, odd!.domain, { afterSeq: odd!.seq - 1, order: 'asc' })[0];
    expect(Object.keys(readOdd!.previous as object)).toEqual(['size', '$summary']);
    expect(readOdd!.next).toEqual({ $summary: 'array', size: 3, bytes: 4 });
    const zero = all.find((r) => Object.is(r.previous, -0));
    const readZero = history(log, zero!.domain, { afterSeq: zero!.seq - 1, order: 'asc' })[0];
    expect(Object.is(readZero!.previous, -0)).toBe(true);
    // Numbers kept or derived exactly: -0 and NaN included, and versions past 32 bits.
    const read1 = (r: AuditRecord): AuditRecord =>
      history(log, r.domain, { afterSeq: r.seq - 1, order: 'asc' })[0]!;
    const minus = read1(all.find((r) => Object.is(r.version, -0))!);
    expect(Object.is(minus.version, -0)).toBe(true);
    expect(Number.isNaN(minus.next)).toBe(true);
    const sum = read1(all.find((r) => Object.is(r.value, -0))!);
    expect(Object.is(sum.next, 0)).toBe(true);
    expect(read1(all.find((r) => r.previous === 5)!)).toMatchObject({ next: 8, version: 2 ** 31 });
  });

  it('hands out copies: a reader changing a record changes nothing kept', () => {
    const log = new MemoryAuditLog();
    const value = { state: 'green', list: [1] };
    log.append(
      withStatus([
        {
          domain: 'ci',
          path: 'data.s',
          op: 'set',
          value,
          previous: { old: true },
          next: value,
          version: 1,
          agent: 'a',
          skill: 's',
          taskId: 't',
          eventId: 'e',
          index: 0,
          time: '2026-11-30T05:00:00.000Z',
          recordedAt: 1,
        },
      ]),
      0,
    );
    const [first] = history(log, 'ci');
    (first!.value as { list: number[] }).list.push(2);
    (first!.previous as { old: boolean }).old = false;
    expect(first!.next).not.toBe(first!.value);
    const [again] = history(log, 'ci');
    expect(again!.value).toEqual({ state: 'green', list: [1] });
    expect(again!.next).toEqual({ state: 'green', list: [1] });
    expect(again!.previous).toEqual({ old: true });
  });

  it('filters and pages history like the SQL store (path, since, afterSeq, status, limit)', () => {
    const log = new MemoryAuditLog();
    const given = withStatus(records(COUNT, 11, (event) => 1_000 + event));
    log.append(given, 0);
    const all = expected(given, 1).filter((r) => r.domain === 'ci');
    expect(history(log, 'ci', { path: 'data.p1', order: 'asc' })).toEqual(
      all.filter((r) => r.path === 'data.p1'),
    );
    expect(history(log, 'ci', { since: 1_500, status: 'rejected', order: 'asc' })).toEqual(
      all.filter((r) => r.recordedAt >= 1_500 && r.status === 'rejected'),
    );
    expect(history(log, 'ci', { afterSeq: 5_000, limit: 7, order: 'asc' })).toEqual(
      all.filter((r) => r.seq > 5_000).slice(0, 7),
    );
    expect(history(log, 'ci', { limit: 5 })).toEqual(all.slice(-5).reverse());
    expect(history(log, 'nowhere')).toEqual([]);
  });

  it('removes each domain up to its cut and keeps the rest, numbering and all', () => {
    const log = new MemoryAuditLog();
    const given = withStatus(records(COUNT, 13, (event) => event));
    log.append(given, 0);
    const all = expected(given, 1);
    const before = 700;
    const cut = log.cuts(before);
    const want = new Map<string, number>();
    for (const r of all) {
      if (r.recordedAt < before) want.set(r.domain, Math.max(want.get(r.domain) ?? 0, r.seq));
    }
    expect(cut).toEqual(want);
    const removed = log.removeUpTo(cut);
    const kept = all.filter((r) => r.seq > (want.get(r.domain) ?? 0));
    expect(removed).toBe(COUNT - kept.length);
    expect(log.length).toBe(kept.length);
    for (const domain of ['ci', 'board', '', 'deploy']) {
      expect(history(log, domain, { order: 'asc' })).toEqual(
        kept.filter((r) => r.domain === domain),
      );
    }
    // Appending goes on after the kept records, with the next numbers.
    const more = withStatus(records(10, 17, () => 9_999));
    expect(log.append(more, COUNT)).toBe(COUNT + 10);
    expect(history(log, more[9]!.domain, { limit: 1 })[0]).toEqual(expected(more, COUNT + 1)[9]);
  });
});
