/**
 * Durations and sizes as written in `fleetgate.yaml` and on the command line, as plain functions
 * (pure: the service's configuration schema and the CLI's flags read them alike).
 */

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
