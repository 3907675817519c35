/**
 * Splitting an event that grows with what an agent reports (`world.state.delta`, its rejections)
 * into parts that each fit the largest event the outbox and the bus accept.
 */

/** Where one part sits among the parts of an event that was split; absent when not split. */
export interface EventPart {
  /** 0 for the first part. */
  index: number;
  count: number;
}

/** Options of {@link splitBySize}. */
export interface SplitBySizeOptions {
  /** Bytes of the payload besides the items (other fields, the envelope). */
  baseBytes?: number;
  /**
   * The most bytes one item can take as JSON, when known (a validated delta entry is bounded):
   * when every item at that size fits, nothing is measured.
   */
  itemBound?: number;
}

function jsonLength(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? 'null', 'utf8');
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * Consecutive runs of `items` whose JSON (each item's bytes plus a separator, plus `baseBytes`)
 * stays within `maxBytes`. Order is kept; a run holds at least one item, so an item that is larger
 * than `maxBytes` on its own is a run of its own (the caller decides what to do with it). One run
 * (the items themselves) when everything fits.
 *
 * @example
 * ```ts
 * splitBySize(deltas, 512 * 1024, { baseBytes: 300 }); // [[…], […]] — each part under 512 KiB
 * ```
 */
export function splitBySize<T>(
  items: readonly T[],
  maxBytes: number,
  options: SplitBySizeOptions = {},
): T[][] {
  const base = options.baseBytes ?? 0;
  if (items.length === 0) return [[]];
  if (
    options.itemBound !== undefined &&
    base + items.length * (options.itemBound + 1) <= maxBytes
  ) {
    return [items.slice()];
  }
  const sizes = items.map((item) => jsonLength(item) + 1);
  let total = base;
  for (const size of sizes) total += size;
  if (total <= maxBytes) return [items.slice()];
  const runs: T[][] = [];
  let run: T[] = [];
  let bytes = base;
  for (let i = 0; i < items.length; i += 1) {
    const size = sizes[i]!;
    if (run.length > 0 && bytes + size > maxBytes) {
      runs.push(run);
      run = [];
      bytes = base;
    }
    run.push(items[i]!);
    bytes += size;
  }
  runs.push(run);
  return runs;
}

/** The id of part `index` of an event split in parts: the event's own id for the first part. */
export function partEventId(id: string, index: number): string {
  return index === 0 ? id : `${id}.part${index}`;
}
