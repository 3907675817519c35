/**
 * The audit log of the in-memory world store, kept in columns of fixed-size chunks.
 *
 * The log is the bulk of the store's memory and every record survives, so what the garbage
 * collector pays for on each event is the number of objects (and object slots) the log keeps and
 * how often it copies them. Here a record is a position in a chunk, not an object of its own:
 * - numbers (version, entry index, an `inc`'s operand and its value before, a `push`'s array size
 *   before) sit in typed arrays, which the collector never scans;
 * - what follows from the rest is not kept at all: a record's seq is its chunk's first seq plus its
 *   position (while the chunk's seqs run without a gap, as appending numbers them), an `inc`'s
 *   value after is the one before plus its operand, a `push`'s size after the one before plus one,
 *   a `set`'s value after its operand;
 * - the op, the status and the kind of each value are bits of one flag word;
 * - the domain is a small integer naming an interned string, the event's shared fields are one
 *   object per event and chunk;
 * - only the path and the values that are strings or objects take a slot, in one array per chunk.
 * Chunks never grow once allocated, so no array of millions of slots is ever copied to grow it.
 * A record is built as an object only when a reader asks for it.
 *
 * Why so few bytes matter: the log only grows, so every byte of it is memory the process touches
 * for the first time, and touching fresh pages (36 bytes of columns per record instead of 56) costs
 * more than all the writes into them.
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
/** `next` only: `previous` (0 when absent) plus `value`, both numbers (what an `inc` records). */
const K_SUM = 5;
/** `next` only: an array size one more than `previous`'s (0 when absent): what a `push` records. */
const K_SIZE_PLUS_ONE = 6;
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
const CHUNK_BYTES = CHUNK * (2 * 8 + 4 * 4 + 2 * 2);
/** Largest version kept in the 32-bit column; a larger one moves its chunk's versions to 64 bits. */
const MAX_NARROW_VERSION = 0x7fffffff;
/** Most chunks carved from one buffer. */
const MAX_CHUNKS_PER_BUFFER = 16;

/**
 * One chunk of {@link CHUNK} records. Its number columns are views of a part of a larger buffer
 * several chunks share: the first write to freshly allocated memory is what it mostly costs, and
 * a few large buffers cost far less of it (and fewer allocations) than a small one per chunk.
 */
class Chunk {
  length = 0;
  /** Seq of record 0; record `i`'s is `firstSeq + i` until a gap makes {@link #seqs}. */
  firstSeq = 0;
  /** Every record's seq, once one did not follow the one before (only a pruned log has gaps). */
  #seqs: Float64Array | undefined;
  /** Versions ({@link NO_VERSION} for none) while they fit 31 bits, then {@link #wideVersions}. */
  readonly #versions: Int32Array;
  #wideVersions: Float64Array | undefined;
  readonly valueNumber: Float64Array;
  readonly previousNumber: Float64Array;
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
    this.valueNumber = f64();
    this.previousNumber = f64();
    this.#versions = new Int32Array(buffer, at, CHUNK);
    this.index = new Int32Array(buffer, (at += CHUNK * 4), CHUNK);
    this.domain = new Uint32Array(buffer, (at += CHUNK * 4), CHUNK);
    this.refStart = new Uint32Array(buffer, (at += CHUNK * 4), CHUNK);
    this.flags = new Uint16Array(buffer, (at += CHUNK * 4), CHUNK);
    this.event = new Uint16Array(buffer, (at += CHUNK * 2), CHUNK);
  }

  seqAt(i: number): number {
    return this.#seqs === undefined ? this.firstSeq + i : this.#seqs[i]!;
  }

  setSeq(i: number, seq: number): void {
    if (this.#seqs === undefined) {
      if (i === 0) this.firstSeq = seq;
      if (seq === this.firstSeq + i) return;
      this.#seqs = new Float64Array(CHUNK);
      for (let k = 0; k < i; k += 1) this.#seqs[k] = this.firstSeq + k;
    }
    this.#seqs[i] = seq;
  }

  versionAt(i: number): number {
    return this.#wideVersions === undefined ? this.#versions[i]! : this.#wideVersions[i]!;
  }

  setVersion(i: number, version: number): void {
    if (this.#wideVersions === undefined) {
      const narrow =
        Number.isInteger(version) &&
        version >= NO_VERSION &&
        version <= MAX_NARROW_VERSION &&
        !Object.is(version, -0);
      if (narrow) {
        this.#versions[i] = version;
        return;
      }
      this.#wideVersions = new Float64Array(CHUNK);
      for (let k = 0; k < i; k += 1) this.#wideVersions[k] = this.#versions[k]!;
    }
    this.#wideVersions[i] = version;
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
    chunk.setSeq(i, seq);
    chunk.setVersion(i, r.version ?? NO_VERSION);
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
    const nextKind = nextKindOf(r, valueKind, previousKind, chunk.previousNumber[i]!, sizes);
    if (nextKind === K_REF) refs.push(r.next);
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
    const previousKind = (flags >> PREVIOUS_SHIFT) & KIND_MASK;
    const previousNumber = chunk.previousNumber[i]!;
    const previous = field(previousKind, previousNumber, refs, ref);
    if (previousKind === K_REF) ref += 1;
    const nextKind = (flags >> NEXT_SHIFT) & KIND_MASK;
    let next: unknown;
    if (nextKind === K_SAME_AS_VALUE) next = value;
    else if (nextKind === K_SUM)
      next = (previousKind === K_NUMBER ? previousNumber : 0) + (value as number);
    else if (nextKind === K_SIZE_PLUS_ONE)
      next = field(
        K_ARRAY_SIZE,
        (previousKind === K_ARRAY_SIZE ? previousNumber : 0) + 1,
        refs,
        ref,
      );
    else next = field(nextKind, 0, refs, ref);
    if (nextKind === K_REF) ref += 1;
    const e = chunk.events[chunk.event[i]!]!;
    const record: AuditRecord = {
      seq: chunk.seqAt(i),
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
    const version = chunk.versionAt(i);
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
          seq: chunk.seqAt(i),
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
      if (chunk.domain[i] === id && (chunk.flags[i]! & APPLIED) !== 0 && chunk.seqAt(i) <= maxSeq) {
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
        cut.set(name, Math.max(cut.get(name) ?? 0, chunk.seqAt(i)));
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
      if (maxSeq !== undefined && source.seqAt(i) <= maxSeq) continue;
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
    chunk.setSeq(j, source.seqAt(i));
    chunk.setVersion(j, source.versionAt(i));
    chunk.index[j] = source.index[i]!;
    chunk.domain[j] = domain;
    chunk.event[j] = event;
    chunk.flags[j] = source.flags[i]!;
    chunk.valueNumber[j] = source.valueNumber[i]!;
    chunk.previousNumber[j] = source.previousNumber[i]!;
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

/**
 * How `r.next` is kept, given how its value and previous are: derived from them when it follows
 * from them exactly (see {@link K_SAME_AS_VALUE}, {@link K_SUM}, {@link K_SIZE_PLUS_ONE}), else
 * absent or in the chunk's references (a number too: it takes no column of its own).
 */
function nextKindOf(
  r: NewAuditRecord,
  valueKind: number,
  previousKind: number,
  previousNumber: number,
  sizes: boolean,
): number {
  const next = r.next;
  if (next === undefined) return K_NONE;
  if (valueKind !== K_NONE && Object.is(next, r.value)) return K_SAME_AS_VALUE;
  if (typeof next === 'number') {
    if (valueKind === K_NUMBER && (previousKind === K_NUMBER || previousKind === K_NONE)) {
      const before = previousKind === K_NUMBER ? previousNumber : 0;
      if (Object.is(next, before + (r.value as number))) return K_SUM;
    }
    return K_REF;
  }
  if (sizes && (previousKind === K_ARRAY_SIZE || previousKind === K_NONE)) {
    const before = previousKind === K_ARRAY_SIZE ? previousNumber : 0;
    if (Object.is(arraySizeOf(next), before + 1)) return K_SIZE_PLUS_ONE;
  }
  return K_REF;
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
