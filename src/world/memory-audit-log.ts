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
import type { RecordBase } from './parse-event.js';
import type { AuditRecord, AuditStatus, NewAuditRecord } from './types.js';

/** Records per chunk. */
const CHUNK = 4096;

// The flag word of a record, from bit 0 up: applied (1 bit), the op (2 bits), how `value`,
// `previous` and `next` are kept (a kind of 3 bits each), whether there is a reason (1 bit).
const APPLIED = 1;
const OP_SHIFT = 1;
const OP_MASK = 3;
const KIND_BITS = 3;
const KIND_MASK = (1 << KIND_BITS) - 1;
const VALUE_SHIFT = OP_SHIFT + 2;
const PREVIOUS_SHIFT = VALUE_SHIFT + KIND_BITS;
const NEXT_SHIFT = PREVIOUS_SHIFT + KIND_BITS;
/** A reason, in the chunk's references. */
const HAS_REASON = 1 << (NEXT_SHIFT + KIND_BITS);

/** Op codes are indexes into the protocol's op list. */
const OPS = DELTA_OPS;
const OP_SET = 0;
const OP_INC = 1;
const OP_PUSH = 2;
/** Any other op text (rejected entries only): kept in the chunk's references. */
const OP_TEXT = 3;

// How a value is kept (its kind).
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

const NO_VERSION = -1;

/** The kind in the flag bits at `shift` (that of `value`, `previous` or `next`). */
function kindAt(flags: number, shift: number): number {
  return (flags >> shift) & KIND_MASK;
}

function statusOf(flags: number): AuditStatus {
  return (flags & APPLIED) !== 0 ? 'applied' : 'rejected';
}

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

/** A typed array that can be a view of `length` elements of a buffer, from `byteOffset`. */
interface Column<T> {
  new (buffer: ArrayBuffer, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
}

/** Bytes of a chunk's number columns (two of 8 bytes, four of 4, two of 2: see {@link Chunk}). */
const CHUNK_BYTES = CHUNK * (2 * 8 + 4 * 4 + 2 * 2);
/** Largest version kept in the 32-bit column; a larger one moves its chunk's versions to 64 bits. */
const MAX_NARROW_VERSION = 0x7fffffff;
/** Most chunks carved from one buffer. */
const MAX_CHUNKS_PER_BUFFER = 16;

/** A 64-bit column for a chunk whose records before `length` hold what `at` gives for them. */
function wideColumn(length: number, at: (i: number) => number): Float64Array {
  const column = new Float64Array(CHUNK);
  for (let i = 0; i < length; i += 1) column[i] = at(i);
  return column;
}

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
  readonly events: RecordBase[] = [];
  /** Per record, in order: path, op text (OP_TEXT), value, previous, next, reason (when kept here). */
  readonly refs: unknown[] = [];

  constructor(buffer: ArrayBuffer, offset: number) {
    let at = offset;
    const carve = <T>(column: Column<T>): T => {
      const view = new column(buffer, at, CHUNK);
      at += CHUNK * column.BYTES_PER_ELEMENT;
      return view;
    };
    this.valueNumber = carve(Float64Array);
    this.previousNumber = carve(Float64Array);
    this.#versions = carve(Int32Array);
    this.index = carve(Int32Array);
    this.domain = carve(Uint32Array);
    this.refStart = carve(Uint32Array);
    this.flags = carve(Uint16Array);
    this.event = carve(Uint16Array);
  }

  /**
   * Starts the next record with the numbers every record has and returns its position; its
   * references follow it into {@link refs}, its flags and value numbers are the caller's to write.
   */
  add(seq: number, version: number, index: number, domain: number, event: number): number {
    const i = this.length;
    this.#setSeq(i, seq);
    this.#setVersion(i, version);
    this.index[i] = index;
    this.domain[i] = domain;
    this.event[i] = event;
    this.refStart[i] = this.refs.length;
    this.length = i + 1;
    return i;
  }

  seqAt(i: number): number {
    return this.#seqs === undefined ? this.firstSeq + i : this.#seqs[i]!;
  }

  #setSeq(i: number, seq: number): void {
    if (this.#seqs === undefined) {
      if (i === 0) this.firstSeq = seq;
      if (seq === this.firstSeq + i) return;
      this.#seqs = wideColumn(i, (k) => this.firstSeq + k);
    }
    this.#seqs[i] = seq;
  }

  versionAt(i: number): number {
    return this.#wideVersions === undefined ? this.#versions[i]! : this.#wideVersions[i]!;
  }

  #setVersion(i: number, version: number): void {
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
      const versions = this.#versions;
      this.#wideVersions = wideColumn(i, (k) => versions[k]!);
    }
    this.#wideVersions[i] = version;
  }

  eventAt(i: number): RecordBase {
    return this.events[this.event[i]!]!;
  }

  /** Position of `fields` in {@link events}: the last one when it is that object, else a new one. */
  eventOf(fields: RecordBase): number {
    const last = this.events.length - 1;
    if (last >= 0 && this.events[last] === fields) return last;
    return this.events.push(fields) - 1;
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

  #domainName(chunk: Chunk, i: number): string {
    return this.#domainNames[chunk.domain[i]!]!;
  }

  #addChunk(): Chunk {
    const chunk = this.#source.next();
    this.#chunks.push(chunk);
    return chunk;
  }

  /** Appends the records of one unit of work, numbering them from `seq + 1`; returns the last seq. */
  append(records: readonly NewAuditRecord[], seq: number): number {
    let event: RecordBase | undefined;
    let chunk = this.#chunks[this.#chunks.length - 1];
    for (const r of records) {
      if (chunk === undefined || chunk.length === CHUNK) {
        chunk = this.#addChunk();
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
    const i = chunk.add(seq, r.version ?? NO_VERSION, r.index, domain, event);
    const refs = chunk.refs;
    refs.push(r.path);
    const applied = r.status === 'applied';
    const op =
      r.op === 'set' ? OP_SET : r.op === 'inc' ? OP_INC : r.op === 'push' ? OP_PUSH : OP_TEXT;
    if (op === OP_TEXT) refs.push(r.op);
    // Array sizes are what an applied push records; a value of another record that looks the
    // same is kept as it is.
    const sizes = applied && op === OP_PUSH;
    const valueKind = keep(r.value, false, chunk.valueNumber, i, refs);
    const previousKind = keep(r.previous, sizes, chunk.previousNumber, i, refs);
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
    this.#length += 1;
  }

  /** Record `i` of `chunk` as readers see it (the SQL store's field order), its values copied. */
  #record(chunk: Chunk, i: number): AuditRecord {
    const flags = chunk.flags[i]!;
    const refs = chunk.refs;
    let ref = chunk.refStart[i]!;
    const path = refs[ref++] as string;
    const opCode = (flags >> OP_SHIFT) & OP_MASK;
    const op = opCode === OP_TEXT ? (refs[ref++] as string) : OPS[opCode]!;
    const valueKind = kindAt(flags, VALUE_SHIFT);
    const value = field(valueKind, chunk.valueNumber[i]!, refs, ref);
    if (valueKind === K_REF) ref += 1;
    const previousKind = kindAt(flags, PREVIOUS_SHIFT);
    const previousNumber = chunk.previousNumber[i]!;
    const previous = field(previousKind, previousNumber, refs, ref);
    if (previousKind === K_REF) ref += 1;
    const nextKind = kindAt(flags, NEXT_SHIFT);
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
    const e = chunk.eventAt(i);
    const record: AuditRecord = {
      seq: chunk.seqAt(i),
      domain: this.#domainName(chunk, i),
      path,
      op,
      value: copyOut(value),
      previous: copyOut(previous),
      next: copyOut(next),
      status: statusOf(flags),
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
          recordedAt: chunk.eventAt(i).recordedAt,
          seq: chunk.seqAt(i),
          status: statusOf(chunk.flags[i]!),
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
      if (chunk.eventAt(i).recordedAt < before) {
        const name = this.#domainName(chunk, i);
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
    for (const [source, i] of this.#cursors()) {
      const name = this.#domainName(source, i);
      const maxSeq = cut.get(name);
      if (maxSeq !== undefined && source.seqAt(i) <= maxSeq) continue;
      if (chunk === undefined || chunk.length === CHUNK) chunk = kept.#addChunk();
      kept.#copy(source, i, chunk, chunk.eventOf(source.eventAt(i)), kept.#domainId(name));
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
    const j = chunk.add(source.seqAt(i), source.versionAt(i), source.index[i]!, domain, event);
    chunk.flags[j] = source.flags[i]!;
    chunk.valueNumber[j] = source.valueNumber[i]!;
    chunk.previousNumber[j] = source.previousNumber[i]!;
    const end = i + 1 < source.length ? source.refStart[i + 1]! : source.refs.length;
    for (let r = source.refStart[i]!; r < end; r += 1) chunk.refs.push(source.refs[r]);
    this.#length += 1;
  }

  *#cursors(): Generator<Cursor> {
    for (const chunk of this.#chunks) {
      for (let i = 0; i < chunk.length; i += 1) yield [chunk, i];
    }
  }
}

/**
 * Keeps `value` as record `i`'s value or previous and returns its kind: a number in `column`, an
 * array size there too when `sizes` allows it ({@link K_ARRAY_SIZE}), anything else but undefined
 * in `refs`.
 */
function keep(
  value: unknown,
  sizes: boolean,
  column: Float64Array,
  i: number,
  refs: unknown[],
): number {
  if (value === undefined) return K_NONE;
  if (typeof value === 'number') {
    column[i] = value;
    return K_NUMBER;
  }
  const size = sizes ? arraySizeOf(value) : -1;
  if (size >= 0) {
    column[i] = size;
    return K_ARRAY_SIZE;
  }
  refs.push(value);
  return K_REF;
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
