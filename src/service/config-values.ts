/**
 * The value syntaxes of `fleetgate.yaml` shared by every section: durations and sizes, as
 * functions and as schema parts.
 */
import { z } from 'zod';
import { parseDuration } from '../protocol/index.js';

export { parseDuration, parseSize } from '../protocol/index.js';

const DURATION_WORDS = 'must be a duration like 5s, 10m or 1h';

/** A duration key: `250ms`, `5s`, `10m`, `1h`, `2d` or milliseconds, read as milliseconds. */
export const duration = z
  .union([z.string(), z.number()], { error: DURATION_WORDS })
  .transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `${DURATION_WORDS} (got ${JSON.stringify(value)})`,
      });
      return z.NEVER;
    }
    return ms;
  });
