/** Shared output helpers for benchmarks: one JSON line per figure on stdout, nothing else. */

/** One figure of a benchmark. */
export interface Figure {
  bench: string;
  metric: string;
  value: number;
  unit: string;
  target?: string;
}

/** Prints one figure as a JSON line on stdout. */
export function report(figure: Figure): void {
  const value = Number.isInteger(figure.value) ? figure.value : Number(figure.value.toPrecision(4));
  process.stdout.write(`${JSON.stringify({ ...figure, value })}\n`);
}

/** Progress and diagnostics for humans, on stderr so stdout stays machine-readable. */
export function note(message: string): void {
  process.stderr.write(`  ${message}\n`);
}

/** The p-th percentile (0..100) of a list of numbers. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}
