// Small helpers every benchmark uses: medians, a timer and the one-line machine-readable summary.
import { spawnSync } from 'node:child_process';

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** Wall time of a child process in ms (spawn to exit). */
export function timeProcess(cmd: string, args: string[], cwd: string): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd, stdio: 'ignore' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
  return ms;
}

export function report(name: string, figures: Record<string, unknown>): void {
  console.log(`BENCH_JSON ${JSON.stringify({ bench: name, ...figures })}`);
}
