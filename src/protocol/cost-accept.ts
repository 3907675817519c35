/**
 * The hand-written fast path of the cost-v1 payload rules. Internal to `protocol/`:
 * `parseCostPayload` is the public form (it falls back on the schema, which words the reasons);
 * the task extractor calls this first so a valid payload costs no verdict object.
 */

/** What an agent reports about one call's usage and cost (cost-v1 part payload). */
export interface CostPayload {
  usage?: { input_tokens?: number; output_tokens?: number; [counter: string]: unknown };
  durationMs?: number;
  costUsd?: number;
  success?: boolean;
}

/** A plain JSON object: reading its keys reads its own properties (no getters, no class). */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isAmount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * The payload when it passes every rule of `costPayloadSchema`, checked by hand; `undefined`
 * when it does not, or when it is not a plain JSON object — then the schema decides and words the
 * reason. It accepts only what the schema accepts and returns what `parseCostPayload` returns
 * through the schema (`delta-cost.property.test.ts` holds them together). Why: the cost part of
 * every skill call passes here, on the client's critical path.
 */
export function acceptCostPayload(value: unknown): CostPayload | undefined {
  if (!isPlainRecord(value)) return undefined;
  const { usage, durationMs, costUsd, success } = value;
  const out: CostPayload = {};
  if (usage !== undefined) {
    if (!isPlainRecord(usage)) return undefined;
    const counters: NonNullable<CostPayload['usage']> = {};
    const { input_tokens: inputTokens, output_tokens: outputTokens } = usage;
    if (inputTokens !== undefined) {
      if (!isCount(inputTokens)) return undefined;
      counters.input_tokens = inputTokens;
    }
    if (outputTokens !== undefined) {
      if (!isCount(outputTokens)) return undefined;
      counters.output_tokens = outputTokens;
    }
    // Other counters are kept as they are, like the schema's loose object (which walks `for…in`
    // and never copies `__proto__`).
    for (const key in usage) {
      if (key === 'input_tokens' || key === 'output_tokens' || key === '__proto__') continue;
      const counter = usage[key];
      if (counter !== undefined) counters[key] = counter;
    }
    out.usage = counters;
  }
  if (durationMs !== undefined) {
    if (!isAmount(durationMs)) return undefined;
    out.durationMs = durationMs;
  }
  if (costUsd !== undefined) {
    if (!isAmount(costUsd)) return undefined;
    out.costUsd = costUsd;
  }
  if (success !== undefined) {
    if (typeof success !== 'boolean') return undefined;
    out.success = success;
  }
  return out;
}
