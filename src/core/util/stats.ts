// Summary statistics used by every measurement xtts reports (pipeline stages, step times).

export interface Summary {
  n: number;
  mean: number;
  std: number;
  /** Coefficient of variation: std / mean (0 when the mean is 0). */
  cv: number;
  min: number;
  p50: number;
  p95: number;
  max: number;
  total: number;
}

/** Nearest-rank percentile of sorted values. */
function rank(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function summarize(values: readonly number[]): Summary {
  const n = values.length;
  if (n === 0) return { n: 0, mean: 0, std: 0, cv: 0, min: 0, p50: 0, p95: 0, max: 0, total: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const total = values.reduce((a, b) => a + b, 0);
  const mean = total / n;
  const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / n);
  return {
    n,
    mean,
    std,
    cv: mean === 0 ? 0 : std / mean,
    min: sorted[0],
    p50: rank(sorted, 50),
    p95: rank(sorted, 95),
    max: sorted[n - 1],
    total,
  };
}
