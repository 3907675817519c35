import type { z } from 'zod';
import type { CostPayload } from './cost-accept.js';
import { acceptCostPayload } from './cost-accept.js';

export type { CostPayload } from './cost-accept.js';
import { lazySchema } from './lazy-zod.js';

/** zod schema of a cost-v1 payload; unknown usage counters are kept (built on first use). */
export const costPayloadSchema = lazySchema((z) => {
  const count = z.number().int().nonnegative();
  return z.object({
    usage: z
      .looseObject({
        input_tokens: count.optional(),
        output_tokens: count.optional(),
      })
      .optional(),
    durationMs: z.number().nonnegative().finite().optional(),
    costUsd: z.number().nonnegative().finite().optional(),
    success: z.boolean().optional(),
  });
});

/** Validates a cost-v1 payload; never throws. */
export function parseCostPayload(
  value: unknown,
): { ok: true; payload: CostPayload } | { ok: false; reason: string } {
  const accepted = acceptCostPayload(value);
  if (accepted !== undefined) return { ok: true, payload: accepted };
  const result = costPayloadSchema().safeParse(value);
  if (result.success) return { ok: true, payload: stripUndefined(result.data) };
  return {
    ok: false,
    reason: result.error.issues
      .map((i) => `${i.path.length > 0 ? `${i.path.join('.')} ` : ''}${i.message}`)
      .join('; '),
  };
}

function stripUndefined(data: z.infer<ReturnType<typeof costPayloadSchema>>): CostPayload {
  const out: CostPayload = {};
  if (data.usage !== undefined) {
    const usage: NonNullable<CostPayload['usage']> = {};
    for (const [k, v] of Object.entries(data.usage)) if (v !== undefined) usage[k] = v;
    out.usage = usage;
  }
  if (data.durationMs !== undefined) out.durationMs = data.durationMs;
  if (data.costUsd !== undefined) out.costUsd = data.costUsd;
  if (data.success !== undefined) out.success = data.success;
  return out;
}
