/** Levenshtein distance (insert, delete, substitute all cost 1). */
export function editDistance(a: string, b: string): number {
  const prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length];
}

/**
 * The candidate closest to `input`, if it is close enough to be a plausible typo: within a third of
 * the longer word's length (at least 1, at most 3 edits), or the same word in another case/separator.
 */
export function didYouMean(input: string, candidates: readonly string[]): string | undefined {
  const squash = (s: string) => s.toLowerCase().replace(/[-_ ]/g, '');
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    if (squash(c) === squash(input)) return c;
    const d = editDistance(input.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  if (best === undefined) return undefined;
  const allowed = Math.min(3, Math.max(1, Math.floor(Math.max(input.length, best.length) / 3)));
  return bestDistance <= allowed ? best : undefined;
}
