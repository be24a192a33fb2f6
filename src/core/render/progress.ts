// A one-line progress bar on stderr (only when it is a terminal): count, rate, ETA.
import { paint } from './style.js';

export class ProgressLine {
  private lastDraw = 0;
  private active = false;

  constructor(
    private readonly label: string,
    private readonly unit = 'rows',
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {}

  get enabled(): boolean {
    return Boolean(this.stream.isTTY);
  }

  /**
   * Draw `done` of `total`. The rate is the mean since the start (`elapsedMs`) unless `secondsPerUnit` is given: the
   * trainer passes its last logged step time, so that the bar's ETA is the one its log line printed.
   */
  update(done: number, total: number, elapsedMs: number, secondsPerUnit?: number): void {
    if (!this.enabled) return;
    const now = performance.now();
    if (now - this.lastDraw < 100 && done < total) return;
    this.lastDraw = now;
    this.active = true;
    const width = 24;
    const filled = total ? Math.round((done / total) * width) : 0;
    const perS = secondsPerUnit !== undefined && secondsPerUnit > 0 ? 1 / secondsPerUnit : done / (elapsedMs / 1000);
    const rate = Number.isFinite(perS) && perS > 0 ? perS : 0;
    const eta = rate > 0 ? (total - done) / rate : 0;
    this.stream.write(
      `\r${this.label} ` +
        (`[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ` +
          paint.dim(`${rateText(rate, this.unit)}, ETA ${etaText(eta)}`) +
          `\x1b[K`),
    );
  }

  /** Take the bar off its line (so that a log line can be written there); the next update draws it again. */
  clear(): void {
    if (this.active) this.stream.write('\r\x1b[K');
    this.active = false;
    this.lastDraw = 0;
  }

  finish(): void {
    if (this.active) this.stream.write('\n');
    this.active = false;
  }
}

/**
 * A rate a person can read at any speed: "12 steps/s", "2.5 steps/s", and below one a second the time each takes,
 * "4.3 s/step" (not "0 steps/s").
 */
export function rateText(perS: number, unit: string): string {
  if (!(perS > 0)) return `– ${unit}/s`;
  if (perS >= 1) return `${perS.toFixed(perS >= 10 ? 0 : 1)} ${unit}/s`;
  return `${(1 / perS).toFixed(1)} s/${unit.replace(/s$/, '')}`;
}

/** Seconds left as the bar and the trainer's log line both print them: "42 s", "18 min 58 s". */
export function etaText(seconds: number): string {
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}
