/**
 * Edit distance with adjacent transpositions (optimal string alignment): insert, delete, substitute and
 * swap two neighbouring characters all cost 1, so the common typo `trian` is one edit from `train`.
 */
export function editDistance(a: string, b: string): number {
  // Three rows: the one before the previous is where a swap of a[i-2..i-1] with b[j-2..j-1] comes from.
  let before = new Array<number>(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1);
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j], before[j - 2] + 1);
    }
    [before, prev] = [prev, row];
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

/** `arg` as a POSIX shell reads it back: as it is where it is plain, else in single quotes. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}

/** "1 row", "3 rows" (`many` where the plural is not `one` + s). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
