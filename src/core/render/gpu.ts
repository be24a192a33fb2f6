// GPUs in the terminal: sparklines over time and the frame `diagnose-gpu-utilization --watch`
// redraws — utilisation, SM activity, memory, clocks, power, temperature and clock reasons per GPU.
import type { GpuSample } from '../telemetry/index.js';
import { throttleReasonLabel } from '../telemetry/index.js';
import { paint } from './style.js';

const BARS = '▁▂▃▄▅▆▇█';

/**
 * One character per time bucket between fromMs and toMs: the bucket's mean value on a 0..max scale
 * as one of eight bar heights. A bucket between two samples (buckets narrower than the sampling
 * period) repeats the one before; buckets before the first sample and after the last are spaces.
 */
export function sparkline(
  points: readonly { tMs: number; value: number | null | undefined }[],
  fromMs: number,
  toMs: number,
  width: number,
  max = 100,
): string {
  const sums = new Float64Array(width);
  const counts = new Uint32Array(width);
  const span = Math.max(1e-9, toMs - fromMs);
  for (const p of points) {
    if (p.value === null || p.value === undefined || !Number.isFinite(p.value) || p.tMs < fromMs || p.tMs > toMs)
      continue;
    const i = Math.min(width - 1, Math.floor(((p.tMs - fromMs) / span) * width));
    sums[i] += p.value;
    counts[i]++;
  }
  let first = -1;
  let last = -1;
  for (let i = 0; i < width; i++) {
    if (counts[i] === 0) continue;
    if (first < 0) first = i;
    last = i;
  }
  let out = '';
  let held = ' ';
  for (let i = 0; i < width; i++) {
    if (counts[i] > 0) {
      const v = Math.max(0, Math.min(1, sums[i] / counts[i] / (max || 1)));
      held = BARS[Math.min(BARS.length - 1, Math.floor(v * BARS.length))];
    }
    out += i >= first && i <= last && first >= 0 ? held : ' ';
  }
  return out;
}

export interface WatchFrameOptions {
  /** Seconds of history the sparklines cover (default 60). */
  windowS?: number;
  width?: number;
  source: string;
  rateHz: number;
  devices: { index: number; name: string | null }[];
}

const gib = (b: number | null | undefined) => (b === null || b === undefined ? '?' : (b / 2 ** 30).toFixed(1));
const num = (v: number | null | undefined, digits = 0) => (v === null || v === undefined ? '?' : v.toFixed(digits));

/** The lines of one --watch frame, from every sample so far (times in ms since watching began). */
export function watchFrameLines(samples: readonly GpuSample[], elapsedMs: number, o: WatchFrameOptions): string[] {
  const windowMs = (o.windowS ?? 60) * 1000;
  const width = o.width ?? 40;
  const from = Math.max(0, elapsedMs - windowMs);
  const secs = Math.floor(elapsedMs / 1000);
  const lines = [
    paint.bold(
      `GPUs — ${o.source} at ${o.rateHz} Hz, ${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, '0')} watched`,
    ) + paint.dim(` (sparklines: last ${Math.round(windowMs / 1000)} s; Ctrl-C stops)`),
  ];
  for (const d of o.devices) {
    const mine = samples.filter((s) => s.index === d.index);
    const last = mine[mine.length - 1];
    lines.push(paint.bold(`GPU ${d.index}  ${d.name ?? ''}`.trimEnd()));
    if (!last) {
      lines.push(paint.dim('  no reading yet'));
      continue;
    }
    const recent = mine.filter((s) => s.tMs >= from);
    const mean = (f: (s: GpuSample) => number | null | undefined) => {
      const xs = recent.map(f).filter((v): v is number => typeof v === 'number');
      return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
    };
    const line = (
      label: string,
      now: string,
      f: (s: GpuSample) => number | null | undefined,
      max: number,
      avg: string,
    ) =>
      `  ${label.padEnd(8)}${now.padStart(7)}  ${sparkline(
        recent.map((s) => ({ tMs: s.tMs, value: f(s) })),
        from,
        Math.max(from + 1, elapsedMs),
        width,
        max,
      )}  ${paint.dim(avg)}`;
    // A percentage: its latest value, its sparkline on 0..100 and its mean over the window.
    const percentLine = (label: string, f: (s: GpuSample) => number | null | undefined) =>
      line(label, `${num(f(last))}%`, f, 100, `mean ${num(mean(f), 1)}%`);
    lines.push(percentLine('util', (s) => s.utilizationPct));
    if (mine.some((s) => s.smActivityPct !== undefined && s.smActivityPct !== null))
      lines.push(percentLine('SM act', (s) => s.smActivityPct));
    const total = last.memoryTotalBytes ?? 0;
    lines.push(
      line(
        'memory',
        `${gib(last.memoryUsedBytes)} GiB`,
        (s) => s.memoryUsedBytes,
        total || 1,
        `of ${gib(total)} ` +
          (`GiB` +
            (total && last.memoryUsedBytes !== null ? ` (${((last.memoryUsedBytes / total) * 100).toFixed(0)}%)` : '')),
      ),
    );
    const reasons = last.throttleReasons.filter((r) => r !== 'gpu_idle');
    lines.push(
      `  ${num(last.smClockMhz)} MHz  ${num(last.powerW)} W  ${num(last.temperatureC)} ` +
        (`°C` +
          (reasons.length ? `  ${paint.warn(`clocks held by: ${reasons.map(throttleReasonLabel).join(', ')}`)}` : '')),
    );
  }
  return lines;
}
