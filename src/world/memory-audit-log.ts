/**
 * The audit log of the in-memory world store, kept in columns of fixed-size chunks.
 *
 * The log is the bulk of the store's memory and every record survives, so what the garbage
 * collector pays for on each event is the number of objects (and object slots) the log keeps and
 * how often it copies them. Here a record is a position in a chunk, not an object of its own:
 * - numbers (seq, version, entry index, an `inc`'s operand and its before and after, a `push`'s
 *   array sizes) sit in typed arrays, which the collector never scans;
 * - the op, the status and the kind of each value are bits of one flag word;
 * - the domain is a small integer naming an interned string, the event's shared fields are one
 *   object per event and chunk;
 * - only the path and the values that are strings or objects take a slot, in one array per chunk.
 * Chunks never grow once allocated, so no array of millions of slots is ever copied to grow it.
 * A record is built as an object only when a reader asks for it.
 */
import { DELTA_OPS } from '../protocol/index.js';
import { copyJsonValue } from './json.js';
import type { NormalisedHistoryQuery } from './history-query.js';
import { matchesHistory } from './history-query.js';
import type { AuditRecord, NewAuditRecord } from './types.js';

/** The fields every audit record of one event shares, kept once per event (and chunk). */
interface EventFields {
  agent: string;
  skill: string;
  taskId: string;
  eventId: string;
  time: string;
  recordedAt: number;
}

/** Records per chunk. */
const CHUNK = 4096;

// The flag word of a record.
const APPLIED = 1;
/** Bits 1–2: the op. */
const OP_SHIFT = 1;
const OP_SET = 0;
const OP_INC = 1;
const OP_PUSH = 2;
/** Any other op text (rejected entries only): kept in the chunk's references. */
const OP_TEXT = 3;
/** Op codes are indexes into the protocol's op list. */
const OPS = DELTA_OPS;
/** Bits 3–5: how `value` is kept; bits 6–8: `previous`; bits 9–11: `next`. */
const VALUE_SHIFT = 3;
const PREVIOUS_SHIFT = 6;
const NEXT_SHIFT = 9;
const KIND_MASK = 7;
/** Absent (undefined). */
const K_NONE = 0;
/** A number, in the field's number column. */
const K_NUMBER = 1;
/** `{ $summary: 'array', size }` (what a `push` records), the size in the number column. */
const K_ARRAY_SIZE = 2;
/** Anything else, in the chunk's references. */
const K_REF = 3;
/** `next` only: the very value kept as `value` (a `set`'s new value is its operand). */
const K_SAME_AS_VALUE = 4;
/** Bit 12: a reason, in the chunk's references. */
const HAS_REASON = 1 << 12;
const NO_VERSION = -1;

/** A copy of a kept value for a reader: the store's own objects never leave it. */
function copyOut(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  // Kept values are plain JSON (copies the materialiser made): a JSON copy is enough and
  // cheaper than structuredClone; anything else still gets the general copy.
  return copyJsonValue(value) ?? structuredClone(value);
}

/**
 * The size of `value` when it is exactly `{ $summary: 'array', size }` (those keys, in that order,
 * on a plain object), else -1: such a value is kept as its size and rebuilt identical on read.
 */
function arraySizeOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return -1;
  if (Object.getPrototypeOf(value) !== Object.prototype) return -1;
  const summary = value as { $summary?: unknown; size?: unknown };
  if (summary.$summary !== 'array' || typeof summary.size !== 'number') return -1;
  let n = 0;
  for (const key in summary) {
    if (!Object.hasOwn(summary, key)) return -1;
    if ((n === 0 && key !== '$summary') || (n === 1 && key !== 'size') || n > 1) return -1;
    n += 1;
  }
  return n === 2 ? summary.size : -1;
}

/** How `value` is kept: its kind, and its number when the kind keeps one. */
function kindOf(value: unknown, numbers: boolean): number {
  if (value === undefined) return K_NONE;
  if (typeof value === 'number') return K_NUMBER;
  if (numbers && arraySizeOf(value) >= 0) return K_ARRAY_SIZE;
  return K_REF;
}

/** Bytes of a chunk's number columns. */
const CHUNK_BYTES = CHUNK * (5 * 8 + 3 * 4 + 2 * 2);
/** Most chunks carved from one buffer. */
const MAX_CHUNKS_PER_BUFFER = 16;

/**
 * One chunk of {@link CHUNK} records. Its number columns are views of a part of a larger buffer
 * several chunks share: the first write to freshly allocated memory is what it mostly costs, and
 * a few large buffers cost far less of it (and fewer allocations) than a small one per chunk.
 */
class Chunk {
  length = 0;
  readonly seq: Float64Array;
  readonly version: Float64Array;
  readonly valueNumber: Float64Array;
  readonly previousNumber: Float64Array;
  readonly nextNumber: Float64Array;
  readonly index: Int32Array;
  readonly domain: Uint32Array;
  /** Position of the record's first reference (its path) in {@link refs}. */
  readonly refStart: Uint32Array;
  readonly flags: Uint16Array;
  /** Position of the record's event in {@link events}. */
  readonly event: Uint16Array;
  readonly events: EventFields[] = [];
  /** Per record, in order: path, op text (OP_TEXT), value, previous, next, reason (when kept here). */
  readonly refs: unknown[] = [];

  constructor(buffer: ArrayBuffer, offset: number) {
    let at = offset;
    const f64 = (): Float64Array => {
      const view = new Float64Array(buffer, at, CHUNK);
      at += CHUNK * 8;
      return view;
    };
    this.seq = f64();
    this.version = f64();
    this.valueNumber = f64();
    this.previousNumber = f64();
    this.nextNumber = f64();
    this.index = new Int32Array(buffer, at, CHUNK);
    this.domain = new Uint32Array(buffer, (at += CHUNK * 4), CHUNK);
    this.refStart = new Uint32Array(buffer, (at += CHUNK * 4), CHUNK);
    this.flags = new Uint16Array(buffer, (at += CHUNK * 4), CHUNK);
    this.event = new Uint16Array(buffer, (at += CHUNK * 2), CHUNK);
  }
}

/** Hands out chunks, carving them from buffers that grow with the log up to a bound. */
class ChunkSource {
  #buffer: ArrayBuffer | undefined;
  #used = 0;
  #made = 0;

  next(): Chunk {
    if (this.#buffer === undefined || this.#used + CHUNK_BYTES > this.#buffer.byteLength) {
      // A small log gets a small buffer; a growing one up to MAX_CHUNKS_PER_BUFFER chunks at once.
      const chunks = Math.min(MAX_CHUNKS_PER_BUFFER, Math.max(1, this.#made));
      this.#buffer = new ArrayBuffer(chunks * CHUNK_BYTES);
      this.#used = 0;
    }
    const chunk = new Chunk(this.#buffer, this.#used);
    this.#used += CHUNK_BYTES;
    this.#made += 1;
    return chunk;
  }
}

/** Where a record is: its chunk and its position there. */
type Cursor = [chunk: Chunk, i: number];

/**
 * The audit log of a {@link MemoryWorldStore}: records appended in log order, read back as
 * {@link AuditRecord} objects with their values copied.
 */
export class MemoryAuditLog {
  #chunks: Chunk[] = [];
  #source = new ChunkSource();
  #length = 0;
  #domainIds = new Map<string, number>();
  #domainNames: string[] = [];

  get length(): number {
    return this.#length;
  }

  #domainId(name: string): number {
    let id = this.#domainIds.get(name);
    if (id === undefined) {
      id = this.#domainNames.length;
      this.#domainNames.push(name);
      this.#domainIds.set(name, id);
    }
    return id;
  }

  /** Appends the records of one unit of work, numbering them from `seq + 1`; returns the last seq. */
  append(records: readonly NewAuditRecord[], seq: number): number {
    let event: EventFields | undefined;
    let chunk = this.#chunks[this.#chunks.length - 1];
    for (const r of records) {
      if (chunk === undefined || chunk.length === CHUNK) {
        chunk = this.#source.next();
        this.#chunks.push(chunk);
        event = undefined;
      }
      if (
        event === undefined ||
        event.eventId !== r.eventId ||
        event.recordedAt !== r.recordedAt ||
        event.agent !== r.agent ||
        event.skill !== r.skill ||
        event.taskId !== r.taskId ||
        event.time !== r.time
      ) {
        event = {
          agent: r.agent,
          skill: r.skill,
          taskId: r.taskId,
          eventId: r.eventId,
          time: r.time,
          recordedAt: r.recordedAt,
        };
        chunk.events.push(event);
      }
      seq += 1;
      this.#put(chunk, seq, chunk.events.length - 1, this.#domainId(r.domain), r);
    }
    return seq;
  }

  /** Writes `r` as the next record of `chunk`. */
  #put(chunk: Chunk, seq: number, event: number, domain: number, r: NewAuditRecord): void {
    const i = chunk.length;
    const refs = chunk.refs;
    chunk.seq[i] = seq;
    chunk.version[i] = r.version ?? NO_VERSION;
    chunk.index[i] = r.index;
    chunk.domain[i] = domain;
    chunk.event[i] = event;
    chunk.refStart[i] = refs.length;
    refs.push(r.path);
    const applied = r.status === 'applied';
    const op =
      r.op === 'set' ? OP_SET : r.op === 'inc' ? OP_INC : r.op === 'push' ? OP_PUSH : OP_TEXT;
    if (op === OP_TEXT) refs.push(r.op);
    // Array sizes are what an applied push records; a value of another record that looks the
    // same is kept as it is.
    const sizes = applied && op === OP_PUSH;
    const valueKind = kindOf(r.value, false);
    if (valueKind === K_NUMBER) chunk.valueNumber[i] = r.value as number;
    else if (valueKind === K_REF) refs.push(r.value);
    const previousKind = kindOf(r.previous, sizes);
    if (previousKind === K_NUMBER) chunk.previousNumber[i] = r.previous as number;
    else if (previousKind === K_ARRAY_SIZE) chunk.previousNumber[i] = arraySizeOf(r.previous);
    else if (previousKind === K_REF) refs.push(r.previous);
    let nextKind = K_SAME_AS_VALUE;
    if (valueKind !== K_REF || r.next !== r.value) {
      nextKind = kindOf(r.next, sizes);
      if (nextKind === K_NUMBER) chunk.nextNumber[i] = r.next as number;
      else if (nextKind === K_ARRAY_SIZE) chunk.nextNumber[i] = arraySizeOf(r.next);
      else if (nextKind === K_REF) refs.push(r.next);
    }
    let flags =
      (applied ? APPLIED : 0) |
      (op << OP_SHIFT) |
      (valueKind << VALUE_SHIFT) |
      (previousKind << PREVIOUS_SHIFT) |
      (nextKind << NEXT_SHIFT);
    if (r.reason !== undefined) {
      refs.push(r.reason);
      flags |= HAS_REASON;
    }
    chunk.flags[i] = flags;
    chunk.length = i + 1;
    this.#length += 1;
  }

  /** Record `i` of `chunk` as readers see it (the SQL store's field order), its values copied. */
  #record(chunk: Chunk, i: number): AuditRecord {
    const flags = chunk.flags[i]!;
    const refs = chunk.refs;
    let ref = chunk.refStart[i]!;
    const path = refs[ref++] as string;
    const opCode = (flags >> OP_SHIFT) & 3;
    const op = opCode === OP_TEXT ? (refs[ref++] as string) : OPS[opCode]!;
    const valueKind = (flags >> VALUE_SHIFT) & KIND_MASK;
    const value =
      valueKind === K_NUMBER
        ? chunk.valueNumber[i]!
        : valueKind === K_REF
          ? refs[ref++]
          : undefined;
    const previous = field(
      (flags >> PREVIOUS_SHIFT) & KIND_MASK,
      chunk.previousNumber[i]!,
      refs,
      ref,
    );
    if (((flags >> PREVIOUS_SHIFT) & KIND_MASK) === K_REF) ref += 1;
    const nextKind = (flags >> NEXT_SHIFT) & KIND_MASK;
    const next =
      nextKind === K_SAME_AS_VALUE ? value : field(nextKind, chunk.nextNumber[i]!, refs, ref);
    if (nextKind === K_REF) ref += 1;
    const e = chunk.events[chunk.event[i]!]!;
    const record: AuditRecord = {
      seq: chunk.seq[i]!,
      domain: this.#domainNames[chunk.domain[i]!]!,
      path,
      op,
      value: copyOut(value),
      previous: copyOut(previous),
      next: copyOut(next),
      status: (flags & APPLIED) !== 0 ? 'applied' : 'rejected',
      agent: e.agent,
      skill: e.skill,
      taskId: e.taskId,
      eventId: e.eventId,
      index: chunk.index[i]!,
      time: e.time,
      recordedAt: e.recordedAt,
    };
    if ((flags & HAS_REASON) !== 0) record.reason = refs[ref] as string;
    const version = chunk.version[i]!;
    if (version !== NO_VERSION) record.version = version;
    return record;
  }

  /** The records of `domain` that pass `q`, in its order, at most `q.limit`. */
  history(domain: string, q: NormalisedHistoryQuery): AuditRecord[] {
    const out: AuditRecord[] = [];
    const id = this.#domainIds.get(domain);
    if (id === undefined) return out;
    const asc = q.order === 'asc';
    const chunks = this.#chunks;
    for (let c = asc ? 0 : chunks.length - 1; c >= 0 && c < chunks.length; c += asc ? 1 : -1) {
      const chunk = chunks[c]!;
      for (
        let i = asc ? 0 : chunk.length - 1;
        i >= 0 && i < chunk.length && out.length < q.limit;
        i += asc ? 1 : -1
      ) {
        if (chunk.domain[i] !== id) continue;
        const filter = {
          path: chunk.refs[chunk.refStart[i]!] as string,
          recordedAt: chunk.events[chunk.event[i]!]!.recordedAt,
          seq: chunk.seq[i]!,
          status: (chunk.flags[i]! & APPLIED) !== 0 ? ('applied' as const) : ('rejected' as const),
        };
        if (matchesHistory(filter, q)) out.push(this.#record(chunk, i));
      }
      if (out.length >= q.limit) break;
    }
    return out;
  }

  /** The applied records of `domain`, in log order (optionally only up to `maxSeq`). */
  appliedOf(domain: string, maxSeq = Number.POSITIVE_INFINITY): AuditRecord[] {
    const out: AuditRecord[] = [];
    const id = this.#domainIds.get(domain);
    if (id === undefined) return out;
    for (const [chunk, i] of this.#cursors()) {
      if (chunk.domain[i] === id && (chunk.flags[i]! & APPLIED) !== 0 && chunk.seq[i]! <= maxSeq) {
        out.push(this.#record(chunk, i));
      }
    }
    return out;
  }

  /** Per domain, the largest seq of its records recorded before `before`. */
  cuts(before: number): Map<string, number> {
    const cut = new Map<string, number>();
    for (const [chunk, i] of this.#cursors()) {
      if (chunk.events[chunk.event[i]!]!.recordedAt < before) {
        const name = this.#domainNames[chunk.domain[i]!]!;
        cut.set(name, Math.max(cut.get(name) ?? 0, chunk.seq[i]!));
      }
    }
    return cut;
  }

  /** Removes each domain's records up to its seq in `cut`; returns how many went. */
  removeUpTo(cut: ReadonlyMap<string, number>): number {
    if (cut.size === 0) return 0;
    const kept = new MemoryAuditLog();
    let chunk: Chunk | undefined;
    let event = -1;
    let from: EventFields | undefined;
    for (const [source, i] of this.#cursors()) {
      const name = this.#domainNames[source.domain[i]!]!;
      const maxSeq = cut.get(name);
      if (maxSeq !== undefined && source.seq[i]! <= maxSeq) continue;
      if (chunk === undefined || chunk.length === CHUNK) {
        chunk = kept.#source.next();
        kept.#chunks.push(chunk);
        from = undefined;
      }
      const fields = source.events[source.event[i]!]!;
      if (fields !== from) {
        from = fields;
        chunk.events.push(fields);
        event = chunk.events.length - 1;
      }
      kept.#copy(source, i, chunk, event, kept.#domainId(name));
    }
    const removed = this.#length - kept.#length;
    this.#chunks = kept.#chunks;
    this.#source = kept.#source;
    this.#length = kept.#length;
    this.#domainIds = kept.#domainIds;
    this.#domainNames = kept.#domainNames;
    return removed;
  }

  /** Copies record `i` of `source` as the next record of `chunk`. */
  #copy(source: Chunk, i: number, chunk: Chunk, event: number, domain: number): void {
    const j = chunk.length;
    chunk.seq[j] = source.seq[i]!;
    chunk.version[j] = source.version[i]!;
    chunk.index[j] = source.index[i]!;
    chunk.domain[j] = domain;
    chunk.event[j] = event;
    chunk.flags[j] = source.flags[i]!;
    chunk.valueNumber[j] = source.valueNumber[i]!;
    chunk.previousNumber[j] = source.previousNumber[i]!;
    chunk.nextNumber[j] = source.nextNumber[i]!;
    chunk.refStart[j] = chunk.refs.length;
    const end = i + 1 < source.length ? source.refStart[i + 1]! : source.refs.length;
    for (let r = source.refStart[i]!; r < end; r += 1) chunk.refs.push(source.refs[r]);
    chunk.length = j + 1;
    this.#length += 1;
  }

  *#cursors(): Generator<Cursor> {
    for (const chunk of this.#chunks) {
      for (let i = 0; i < chunk.length; i += 1) yield [chunk, i];
    }
  }
}

/** A value of kind `kind` (not {@link K_SAME_AS_VALUE}), its number `n` or its reference at `ref`. */
function field(kind: number, n: number, refs: readonly unknown[], ref: number): unknown {
  switch (kind) {
    case K_NUMBER:
      return n;
    case K_ARRAY_SIZE:
      return { $summary: 'array', size: n };
    case K_REF:
      return refs[ref];
    default:
      return undefined;
  }
}
