/**
 * The value syntaxes of `fleetgate.yaml` shared by every section: durations and sizes, as
 * functions and as schema parts.
 */
import { z } from 'zod';

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Parses `250ms`, `5s`, `10m`, `1h`, `2d` or a number of milliseconds. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(value.trim());
  if (match === null) return undefined;
  return Math.round(Number(match[1]) * UNITS[match[2]!]!);
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
};

/** Parses `512KiB`, `4MiB`, `1MB`, `300B` or a number of bytes (whole bytes, ≥ 0). */
export function parseSize(value: string | number): number | undefined {
  if (typeof value === 'number')
    return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  const match = /^(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)$/i.exec(value.trim());
  if (match === null) return undefined;
  return Math.round(Number(match[1]) * SIZE_UNITS[match[2]!.toLowerCase()]!);
}

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
