/**
 * The value syntaxes of `fleetgate.yaml` shared by every section: durations and sizes, as
 * functions and as schema parts.
 */
import { z } from 'zod';
import { parseDuration, parseSize } from '../protocol/index.js';

export { parseDuration, parseSize } from '../protocol/index.js';

const DURATION_WORDS = 'must be a duration like 5s, 10m or 1h';

/**
 * True while a configuration *file* is checked: a file writes every duration with its unit, so a
 * bare number there (`vetoWindow: 60`) is refused instead of read as 60 ms. An object handed to
 * the library keeps numbers as milliseconds (its type says so). Schemas take no parse context,
 * and a parse is synchronous, so the file checker sets this around its one parse.
 */
let unitsRequired = false;

/** Runs `check` with durations as a file must write them: with a unit. */
export function withDurationUnits<T>(check: () => T): T {
  const before = unitsRequired;
  unitsRequired = true;
  try {
    return check();
  } finally {
    unitsRequired = before;
  }
}

/**
 * A duration key: `250ms`, `5s`, `10m`, `1h`, `2d`, or (from code, not from a file) milliseconds,
 * read as milliseconds.
 */
export const duration = z
  .union([z.string(), z.number()], { error: DURATION_WORDS })
  .transform((value, ctx) => {
    if (typeof value === 'number' && unitsRequired) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a duration with its unit, like ${value}s or ${value}m`,
      });
      return z.NEVER;
    }
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

const SIZE_WORDS = 'must be a size like 512KiB, 4MiB or 1GiB, or a number of bytes';

/** A size key: `512KiB`, `4MiB`, `1MB` or a number of bytes, read as bytes. */
export const size = z
  .union([z.string(), z.number()], { error: SIZE_WORDS })
  .transform((value, ctx) => {
    const bytes = parseSize(value);
    if (bytes === undefined) {
      ctx.addIssue({ code: 'custom', message: `${SIZE_WORDS} (got ${JSON.stringify(value)})` });
      return z.NEVER;
    }
    return bytes;
  });

/** A duration above zero (a window or a lifetime that zero would make meaningless). */
export const positiveDuration = duration.refine((ms) => ms > 0, {
  message: 'must be a duration above zero, like 30s or 1h',
});
