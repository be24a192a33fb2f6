// Per-bin mean and standard deviation of log-mel frames, accumulated in parallel-safe pieces
// (Chan, Golub & LeVeque 1979 pairwise update), for normalising features.
export interface MelStatsResult {
  mean: Float32Array;
  std: Float32Array;
  frames: number;
}

export class MelStats {
  private n = 0;
  private readonly mean: Float64Array;
  private readonly m2: Float64Array;

  constructor(readonly nMels: number) {
    this.mean = new Float64Array(nMels);
    this.m2 = new Float64Array(nMels);
  }

  /** Add `frames` frames of a [frames, nMels] mel. */
  add(mel: Float32Array, frames: number): void {
    if (frames === 0) return;
    const other = new MelStats(this.nMels);
    const sum = new Float64Array(this.nMels);
    for (let f = 0; f < frames; f++) for (let m = 0; m < this.nMels; m++) sum[m] += mel[f * this.nMels + m];
    for (let m = 0; m < this.nMels; m++) other.mean[m] = sum[m] / frames;
    for (let f = 0; f < frames; f++)
      for (let m = 0; m < this.nMels; m++) {
        const d = mel[f * this.nMels + m] - other.mean[m];
        other.m2[m] += d * d;
      }
    other.n = frames;
    this.merge(other);
  }

  merge(other: MelStats): void {
    if (other.n === 0) return;
    const n = this.n + other.n;
    for (let m = 0; m < this.nMels; m++) {
      const delta = other.mean[m] - this.mean[m];
      this.mean[m] += (delta * other.n) / n;
      this.m2[m] += other.m2[m] + (delta * delta * this.n * other.n) / n;
    }
    this.n = n;
  }

  /** Population std, floored at 1e-5 so that a constant bin cannot divide by zero. */
  finalize(): MelStatsResult {
    const std = new Float32Array(this.nMels);
    for (let m = 0; m < this.nMels; m++) std[m] = Math.max(1e-5, Math.sqrt(this.n ? this.m2[m] / this.n : 0));
    return { mean: Float32Array.from(this.mean), std, frames: this.n };
  }
}
