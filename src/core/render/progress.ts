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

  update(done: number, total: number, elapsedMs: number): void {
    if (!this.enabled) return;
    const now = performance.now();
    if (now - this.lastDraw < 100 && done < total) return;
    this.lastDraw = now;
    this.active = true;
    const width = 24;
    const filled = total ? Math.round((done / total) * width) : 0;
    const rate = elapsedMs > 0 ? done / (elapsedMs / 1000) : 0;
    const eta = rate > 0 ? (total - done) / rate : 0;
    const etaText = eta >= 60 ? `${Math.floor(eta / 60)} min ${Math.round(eta % 60)} s` : `${eta.toFixed(0)} s`;
    this.stream.write(
      `\r${this.label} ` +
        (`[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ` +
          paint.dim(`${rate.toFixed(0)} ${this.unit}/s, ETA ${etaText}`) +
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
