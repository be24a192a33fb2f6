// Per-bin mean and standard deviation of log-mel frames, for normalising features. Each add() takes
// one clip's exact two-pass mean and sum of squared deviations and folds it in with the pairwise
// update of Chan, Golub & LeVeque (1979, "Updating formulae and a pairwise algorithm for computing
// sample variances"); merge() uses the same update, so statistics gathered in worker threads (sent
// as plain state with toState()/fromState()) combine to what one pass over all frames gives.

export interface MelStatsResult {
  mean: Float32Array;
  /** Population standard deviation, floored at 1e-5 so that a constant bin cannot divide by zero. */
  std: Float32Array;
  frames: number;
}

/** Structured-clone-friendly state of a MelStats (for postMessage between threads). */
export interface MelStatsState {
  nMels: number;
  frames: number;
  mean: Float64Array;
  /** Sum of squared deviations from the mean, per bin. */
  m2: Float64Array;
}

export const MEL_STD_FLOOR = 1e-5;

export class MelStats {
  readonly nMels: number;
  private frames = 0;
  private readonly mean: Float64Array;
  private readonly m2: Float64Array;
  private readonly chunkMean: Float64Array;
  private readonly chunkM2: Float64Array;

  constructor(nMels: number) {
    if (!Number.isInteger(nMels) || nMels < 1)
      throw new RangeError(`MelStats: nMels ${nMels} is not a positive integer`);
    this.nMels = nMels;
    this.mean = new Float64Array(nMels);
    this.m2 = new Float64Array(nMels);
    this.chunkMean = new Float64Array(nMels);
    this.chunkM2 = new Float64Array(nMels);
  }

  static fromState(state: MelStatsState): MelStats {
    const s = new MelStats(state.nMels);
    s.frames = state.frames;
    s.mean.set(state.mean);
    s.m2.set(state.m2);
    return s;
  }

  toState(): MelStatsState {
    return {
      nMels: this.nMels,
      frames: this.frames,
      mean: Float64Array.from(this.mean),
      m2: Float64Array.from(this.m2),
    };
  }

  /** Frames added so far. */
  get count(): number {
    return this.frames;
  }

  /** Adds the first `frames` frames of a [frames, nMels] row-major mel. */
  add(mel: Float32Array, frames: number): void {
    const nMels = this.nMels;
    if (frames <= 0) return;
    if (mel.length < frames * nMels)
      throw new RangeError(`MelStats.add: ${mel.length} values cannot hold ${frames} frames of ${nMels} mels`);
    const mean = this.chunkMean;
    const m2 = this.chunkM2;
    mean.fill(0);
    m2.fill(0);
    for (let f = 0; f < frames; f++) for (let m = 0, o = f * nMels; m < nMels; m++) mean[m] += mel[o + m];
    for (let m = 0; m < nMels; m++) mean[m] /= frames;
    for (let f = 0; f < frames; f++)
      for (let m = 0, o = f * nMels; m < nMels; m++) {
        const d = mel[o + m] - mean[m];
        m2[m] += d * d;
      }
    this.combine(frames, mean, m2);
  }

  merge(other: MelStats | MelStatsState): void {
    if (other.nMels !== this.nMels) throw new RangeError(`MelStats.merge: ${other.nMels} mels into ${this.nMels}`);
    const state = other instanceof MelStats ? { frames: other.frames, mean: other.mean, m2: other.m2 } : other;
    if (state.frames === 0) return;
    this.combine(state.frames, state.mean, state.m2);
  }

  private combine(nB: number, meanB: Float64Array, m2B: Float64Array): void {
    const nA = this.frames;
    const n = nA + nB;
    for (let m = 0; m < this.nMels; m++) {
      const delta = meanB[m] - this.mean[m];
      this.mean[m] += (delta * nB) / n;
      this.m2[m] += m2B[m] + (delta * delta * nA * nB) / n;
    }
    this.frames = n;
  }

  finalize(): MelStatsResult {
    const std = new Float32Array(this.nMels);
    for (let m = 0; m < this.nMels; m++)
      std[m] = Math.max(MEL_STD_FLOOR, Math.sqrt(this.frames ? this.m2[m] / this.frames : 0));
    return { mean: Float32Array.from(this.mean), std, frames: this.frames };
  }
}
