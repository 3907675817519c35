/** Did-you-mean for a word a person typed: a configuration key, a route of the HTTP API. */

/** Edit distance with swapped neighbours counting once (`nmae` → `name`), for did-you-mean. */
export function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) =>
    Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= x.length; i += 1) {
    for (let j = 1; j <= y.length; j += 1) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) {
        best = Math.min(best, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = best;
    }
  }
  return d[x.length]![y.length]!;
}

/** The known key closest to `key`, when it is close enough to be a typo. */
export function didYouMean(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const candidate of known) {
    const d = editDistance(key, candidate);
    if (best === undefined || d < best.d) best = { key: candidate, d };
  }
  if (best === undefined) return undefined;
  const limit = Math.max(1, Math.floor(Math.max(key.length, best.key.length) / 3));
  return best.d <= limit ? best.key : undefined;
}
