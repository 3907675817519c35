/**
 * Retention's delete loop, shared by every room that prunes its own tables.
 */
import type { DeleteResult } from 'kysely';

/**
 * Runs `deleteBatch` until one batch deletes fewer than `batchSize` rows, and resolves how many
 * rows were deleted in all. Each batch is one statement deleting at most the `batchSize` rows it
 * is given: one huge delete would hold its locks (and grow the log) for long. A batch of several
 * statements resolves the result of the one that counts.
 *
 * @example
 * ```ts
 * const pruned = await deleteInBatches(1_000, (limit) =>
 *   db
 *     .deleteFrom('fleetgate_outbox')
 *     .where('seq', 'in', (eb) =>
 *       eb.selectFrom('fleetgate_outbox').select('seq').where('sent_at', '<', before).limit(limit),
 *     )
 *     .executeTakeFirst(),
 * );
 * ```
 */
export async function deleteInBatches(
  batchSize: number,
  deleteBatch: (limit: number) => Promise<Pick<DeleteResult, 'numDeletedRows'>>,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = Number((await deleteBatch(batchSize)).numDeletedRows);
    total += n;
    if (n < batchSize) return total;
  }
}
