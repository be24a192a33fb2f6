// Statistics over a window of GPU samples, per GPU: what the profiler and `train`'s summary quote.
import { summarize, type Summary } from '../util/index.js';
import type { GpuSample } from './gpu-sample.js';

export interface GpuWindowSummary {
  index: number;
  samples: number;
  /** First and last sample time in the window (ms, the samples' clock). */
  fromMs: number;
  toMs: number;
  /** Each is over the samples that reported the value; null when none did. */
  utilizationPct: Summary | null;
  smActivityPct: Summary | null;
  smOccupancyPct: Summary | null;
  tensorActivityPct: Summary | null;
  powerW: Summary | null;
  smClockMhz: Summary | null;
  memoryPeakBytes: number | null;
  memoryTotalBytes: number | null;
  /** memoryPeakBytes / memoryTotalBytes. */
  memoryPeakShare: number | null;
  temperaturePeakC: number | null;
  /** Share of samples in which each clocks-event reason was active (reasons never seen are absent). */
  throttleShares: Record<string, number>;
}

function stat(values: (number | null | undefined)[]): Summary | null {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return xs.length ? summarize(xs) : null;
}

function peak(values: (number | null | undefined)[]): number | null {
  let m: number | null = null;
  for (const v of values) if (typeof v === 'number' && Number.isFinite(v) && (m === null || v > m)) m = v;
  return m;
}

/** One summary per GPU seen in `samples` within [fromMs, toMs], ordered by index. */
export function summarizeGpuSamples(
  samples: readonly GpuSample[],
  window: { fromMs?: number; toMs?: number } = {},
): GpuWindowSummary[] {
  const from = window.fromMs ?? -Infinity;
  const to = window.toMs ?? Infinity;
  const byIndex = new Map<number, GpuSample[]>();
  for (const s of samples) {
    if (s.tMs < from || s.tMs > to) continue;
    let list = byIndex.get(s.index);
    if (!list) byIndex.set(s.index, (list = []));
    list.push(s);
  }
  return [...byIndex.keys()]
    .sort((a, b) => a - b)
    .map((index) => {
      const xs = byIndex.get(index)!;
      const memoryPeakBytes = peak(xs.map((s) => s.memoryUsedBytes));
      const memoryTotalBytes = peak(xs.map((s) => s.memoryTotalBytes));
      const counts: Record<string, number> = {};
      for (const s of xs) for (const r of s.throttleReasons) counts[r] = (counts[r] ?? 0) + 1;
      const throttleShares: Record<string, number> = {};
      for (const [r, n] of Object.entries(counts)) throttleShares[r] = n / xs.length;
      return {
        index,
        samples: xs.length,
        fromMs: xs.reduce((m, s) => Math.min(m, s.tMs), Infinity),
        toMs: xs.reduce((m, s) => Math.max(m, s.tMs), -Infinity),
        utilizationPct: stat(xs.map((s) => s.utilizationPct)),
        smActivityPct: stat(xs.map((s) => s.smActivityPct)),
        smOccupancyPct: stat(xs.map((s) => s.smOccupancyPct)),
        tensorActivityPct: stat(xs.map((s) => s.tensorActivityPct)),
        powerW: stat(xs.map((s) => s.powerW)),
        smClockMhz: stat(xs.map((s) => s.smClockMhz)),
        memoryPeakBytes,
        memoryTotalBytes,
        memoryPeakShare: memoryPeakBytes !== null && memoryTotalBytes ? memoryPeakBytes / memoryTotalBytes : null,
        temperaturePeakC: peak(xs.map((s) => s.temperatureC)),
        throttleShares,
      };
    });
}
