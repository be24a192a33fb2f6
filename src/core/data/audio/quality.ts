// Objective vocoder-quality scores that need no ASR: how far a resynthesis (Griffin-Lim, a neural
// vocoder) is from the real waveform it was made from.
// - LSD, the log-spectral distance used in audio super-resolution papers (Kuleshov et al. 2017,
//   NU-Wave, AudioSR): the RMS over frequency of the dB difference of two power spectra, averaged over
//   frames. It sees every bin the same, so it catches phase smearing, noise floors and lost highs.
// - MCD, mel-cepstral distortion (Kubichek 1993, "Mel-cepstral distance measure for objective speech
//   quality assessment"): (10 / ln 10)·sqrt(2·Σ_d (c_d − c'_d)²) over mel cepstra c1..c24, averaged
//   over frames. Leaving out c0 makes it blind to overall gain; it measures the spectral envelope,
//   which is what listeners hear as timbre. The cepstra are MFCCs (orthonormal DCT-II of the log mel
//   *power*), as in many TTS papers, not SPTK's mel-cepstra of the log magnitude: figures follow papers
//   that use mcep in trend, not digit for digit (log power alone doubles every c_d).
// - F0 RMSE and V/UV error from YIN (de Cheveigné & Kawahara 2002, "YIN, a fundamental frequency
//   estimator for speech and music"): pitch errors and voicing flips are what a vocoder adds that the
//   two spectral scores average away.
// All math is in double precision on plain arrays; nothing here needs tfjs.
import { XttsError } from '../../errors.js';
import { RealFft } from './fft.js';
import { melFilterbank, reflect, stftWindow, type MelFilter } from './mel.js';

/** The rate the frame sizes below are quoted at; other rates scale them. */
const REFERENCE_RATE_HZ = 22050;
/** LSD's window, 2048 samples at 22.05 kHz (0.0929 s): the n_fft of the super-resolution papers. */
const LSD_WINDOW_S = 2048 / REFERENCE_RATE_HZ;
/** Floor of the power spectra in LSD (as in the super-resolution papers' code). */
const LSD_POWER_FLOOR = 1e-10;
const MEL_BANDS = 40;
const CEPSTRAL_COEFFICIENTS = 24;
const LOG_MEL_FLOOR = 1e-10;
/** 10 / ln 10 · sqrt(2): Kubichek's dB scale for a Euclidean distance of natural-log cepstra. */
const MCD_SCALE = (10 / Math.LN10) * Math.SQRT2;
/**
 * DTW keeps one direction byte per cell: 4e7 cells is 40 MB and a second or two, about 75 s of audio
 * on each side at 22.05 kHz. Longer clips should be compared time-aligned or in pieces.
 */
export const MAX_DTW_CELLS = 4e7;
const F0_MIN_HZ = 50;
const F0_MAX_HZ = 500;
/** YIN's absolute threshold on the cumulative mean normalised difference (the paper's value). */
const YIN_THRESHOLD = 0.1;
/** Frames this far below the loudest one are unvoiced whatever YIN says: noise has no pitch. */
const F0_SILENCE_DB = 40;

export type AudioAlignment = 'time' | 'dtw';

export interface MelCepstraOptions {
  /** Mel bands of the filterbank (40). */
  melBands?: number;
  /** Cepstral coefficients kept, c1..cN (24); c0 is always dropped. */
  coefficients?: number;
  /** Highest frequency of the filterbank (default: Nyquist). */
  fmaxHz?: number;
}

/**
 * Scores over a band: `fmaxHz` limits LSD's bins and MCD's filterbank (default: the whole band). A vocoder
 * given mels that end at the features' fmax_hz has nothing to go on above it: scoring up to fmax_hz measures
 * what it does with what it was given, the whole band also what it invents above.
 */
export interface BandOptions {
  fmaxHz?: number;
}

export interface MelCepstra {
  frames: number;
  coefficients: number;
  /** [frames, coefficients] row-major: c1..cN of each frame. */
  values: Float64Array;
  /** Samples between frames (n_fft / 4); f0Track uses the same grid. */
  hopLength: number;
}

export interface MelCepstralDistortion {
  mcdDb: number;
  /** Frame pairs averaged over: the shorter clip's frames ('time') or the DTW path's length. */
  frames: number;
}

export interface AudioComparison {
  lsdDb: number;
  mcdDb: number;
  /** Over frames voiced in both; null when there is none. */
  f0RmseHz: number | null;
  f0RmseCents: number | null;
  /** Share of the compared frames voiced in exactly one of the two; null when no frame was compared. */
  vuvError: number | null;
  /** Compared frames voiced in both. */
  voicedFrames: number;
  /** Frame pairs compared (as MelCepstralDistortion.frames). */
  frames: number;
  align: AudioAlignment;
}

/** Log-spectral distance in dB between two clips of the same waveform (time-aligned, cut to the shorter). */
export function logSpectralDistance(
  ref: Float32Array,
  test: Float32Array,
  sampleRateHz: number,
  band: BandOptions = {},
): number {
  checkRate(sampleRateHz);
  const n = Math.min(ref.length, test.length);
  const nFft = nextPowerOfTwo(LSD_WINDOW_S * sampleRateHz);
  const hop = nFft / 4;
  const refDb = powerFramesDb(ref.subarray(0, n), nFft, hop);
  const testDb = powerFramesDb(test.subarray(0, n), nFft, hop);
  const bins = nFft / 2 + 1;
  // Bins up to fmaxHz (bin k is at k·rate/n_fft).
  const used = Math.min(bins, Math.floor(((band.fmaxHz ?? sampleRateHz / 2) * nFft) / sampleRateHz) + 1);
  const frames = refDb.length / bins;
  let total = 0;
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let k = f * bins; k < f * bins + used; k++) sum += (refDb[k] - testDb[k]) ** 2;
    total += Math.sqrt(sum / used);
  }
  return total / frames;
}

/** Mel cepstra c1..c24 per frame: Hann STFT, power, 40 Slaney mel bands over 0..Nyquist, ln, orthonormal DCT-II. */
export function melCepstra(samples: Float32Array, sampleRateHz: number, opts: MelCepstraOptions = {}): MelCepstra {
  checkRate(sampleRateHz);
  const melBands = opts.melBands ?? MEL_BANDS;
  const coefficients = opts.coefficients ?? CEPSTRAL_COEFFICIENTS;
  if (!(Number.isInteger(melBands) && Number.isInteger(coefficients) && coefficients >= 1 && coefficients < melBands))
    throw new XttsError(
      'AUDIO_BAD_SETTINGS',
      `mel cepstra: ${coefficients} coefficients of ${melBands} mel bands (need 1 <= coefficients < bands)`,
      { suggestions: [`use the defaults: ${CEPSTRAL_COEFFICIENTS} coefficients of ${MEL_BANDS} bands`] },
    );
  const nFft = cepstralFftSize(sampleRateHz);
  const hop = nFft / 4;
  const filters = melFilterbank({
    sample_rate_hz: sampleRateHz,
    n_fft: nFft,
    n_mels: melBands,
    fmin_hz: 0,
    fmax_hz: Math.min(opts.fmaxHz ?? sampleRateHz / 2, sampleRateHz / 2),
    mel_scale: 'slaney',
    mel_norm: 'slaney',
  });
  const dct = dctRows(melBands, coefficients);
  const frames = framesFor(samples.length, hop);
  const values = new Float64Array(frames * coefficients);
  const logMel = new Float64Array(melBands);
  forEachPowerFrame(samples, nFft, hop, (f, power) => {
    melLog(power, filters, logMel);
    for (let c = 0; c < coefficients; c++) {
      let acc = 0;
      for (let m = 0; m < melBands; m++) acc += dct[c * melBands + m] * logMel[m];
      values[f * coefficients + c] = acc;
    }
  });
  return { frames, coefficients, values, hopLength: hop };
}

/** Mel-cepstral distortion in dB (Kubichek 1993), time-aligned or along a DTW path of the cepstra. */
export function melCepstralDistortion(
  ref: Float32Array,
  test: Float32Array,
  sampleRateHz: number,
  { align, fmaxHz }: { align: AudioAlignment } & BandOptions,
): MelCepstralDistortion {
  const { mcdDb, path } = cepstralAlignment(ref, test, sampleRateHz, align, { fmaxHz });
  return { mcdDb, frames: path.ref.length };
}

/**
 * F0 per frame by YIN, in Hz, 0 where unvoiced; frames on melCepstra's grid (centred, hop n_fft / 4)
 * so that a cepstral alignment path indexes both.
 */
export function f0Track(samples: Float32Array, sampleRateHz: number): Float64Array {
  checkRate(sampleRateHz);
  const nFft = cepstralFftSize(sampleRateHz);
  const hop = nFft / 4;
  // The integration window is half the frame, as librosa.yin's win_length; the lags reach one
  // period of the lowest f0 beyond it.
  const window = nFft / 2;
  const minLag = Math.max(2, Math.floor(sampleRateHz / F0_MAX_HZ));
  const maxLag = Math.ceil(sampleRateHz / F0_MIN_HZ);
  const span = window + maxLag;
  const frames = framesFor(samples.length, hop);
  const segment = new Float64Array(span);
  // Centred like melCepstra's frames: the whole span (window and lags) around sample f·hop.
  const fill = (f: number): number => {
    const start = f * hop - Math.floor(span / 2);
    let energy = 0;
    for (let i = 0; i < span; i++) {
      const x = reflect(samples, start + i);
      segment[i] = x;
      energy += x * x;
    }
    return Math.sqrt(energy / span);
  };
  const rms = Float64Array.from({ length: frames }, (_, f) => fill(f));
  const loudest = rms.reduce((a, b) => Math.max(a, b), 0);
  const f0 = new Float64Array(frames);
  if (loudest === 0) return f0;
  const quietest = loudest * 10 ** (-F0_SILENCE_DB / 20);
  const yin = new YinFrame(window, maxLag);
  for (let f = 0; f < frames; f++) {
    if (rms[f] <= quietest) continue;
    fill(f);
    const lag = yin.period(segment, minLag);
    if (lag > 0) f0[f] = sampleRateHz / lag;
  }
  return f0;
}

/**
 * LSD, MCD, F0 RMSE and V/UV error of `test` against `ref` (same rate). LSD is always time-aligned:
 * it is meant for a resynthesis of the same waveform. With align 'dtw' the F0 frames follow the
 * cepstral DTW path, so a clip with pauses of other lengths is still compared sound for sound.
 */
export function compareAudio(
  ref: Float32Array,
  test: Float32Array,
  sampleRateHz: number,
  { align = 'time', fmaxHz }: { align?: AudioAlignment } & BandOptions = {},
): AudioComparison {
  const lsdDb = logSpectralDistance(ref, test, sampleRateHz, { fmaxHz });
  const n = Math.min(ref.length, test.length);
  const [r, t] = align === 'time' ? [ref.subarray(0, n), test.subarray(0, n)] : [ref, test];
  const { mcdDb, path } = cepstralAlignment(r, t, sampleRateHz, align, { fmaxHz });
  const f0Ref = f0Track(r, sampleRateHz);
  const f0Test = f0Track(t, sampleRateHz);
  let voicedFrames = 0;
  let flips = 0;
  let squaredHz = 0;
  let squaredCents = 0;
  for (let p = 0; p < path.ref.length; p++) {
    const a = f0Ref[path.ref[p]];
    const b = f0Test[path.test[p]];
    if (a > 0 && b > 0) {
      voicedFrames++;
      squaredHz += (a - b) ** 2;
      squaredCents += (1200 * Math.log2(b / a)) ** 2;
    } else if (a > 0 || b > 0) flips++;
  }
  const frames = path.ref.length;
  return {
    lsdDb,
    mcdDb,
    f0RmseHz: voicedFrames > 0 ? Math.sqrt(squaredHz / voicedFrames) : null,
    f0RmseCents: voicedFrames > 0 ? Math.sqrt(squaredCents / voicedFrames) : null,
    vuvError: frames > 0 ? flips / frames : null,
    voicedFrames,
    frames,
    align,
  };
}

/** Pairs of frame indices, ref[p] with test[p]. */
interface AlignmentPath {
  ref: Int32Array;
  test: Int32Array;
}

function cepstralAlignment(
  ref: Float32Array,
  test: Float32Array,
  sampleRateHz: number,
  align: AudioAlignment,
  band: BandOptions,
): { mcdDb: number; path: AlignmentPath } {
  checkRate(sampleRateHz);
  const hop = cepstralFftSize(sampleRateHz) / 4;
  // Refused before any spectrum is computed: the frame counts follow from the lengths.
  if (align === 'dtw') checkDtwSize(framesFor(ref.length, hop), framesFor(test.length, hop));
  const a = melCepstra(ref, sampleRateHz, band);
  const b = melCepstra(test, sampleRateHz, band);
  const d = a.coefficients;
  const distance = (i: number, j: number): number => {
    let sum = 0;
    for (let c = 0; c < d; c++) sum += (a.values[i * d + c] - b.values[j * d + c]) ** 2;
    return Math.sqrt(sum);
  };
  let path: AlignmentPath;
  if (align === 'dtw') path = dtwPath(a.frames, b.frames, distance);
  else {
    const frames = Math.min(a.frames, b.frames);
    const diagonal = Int32Array.from({ length: frames }, (_, i) => i);
    path = { ref: diagonal, test: diagonal };
  }
  let total = 0;
  for (let p = 0; p < path.ref.length; p++) total += distance(path.ref[p], path.test[p]);
  return { mcdDb: (MCD_SCALE * total) / path.ref.length, path };
}

function checkDtwSize(refFrames: number, testFrames: number): void {
  const cells = refFrames * testFrames;
  if (cells <= MAX_DTW_CELLS) return;
  throw new XttsError(
    'AUDIO_DTW_TOO_LONG',
    `DTW of ${refFrames.toLocaleString('en-US')} × ${testFrames.toLocaleString('en-US')} frames needs ` +
      `${cells.toLocaleString('en-US')} cells, over the ${MAX_DTW_CELLS.toLocaleString('en-US')} it may use`,
    {
      suggestions: [
        "use align 'time' for a resynthesis of the same waveform (it needs no alignment)",
        'cut the clips into pieces of about a minute or less and compare those',
      ],
    },
  );
}

/**
 * The minimum-cost monotonic path from (0, 0) to (n-1, m-1) with steps (1,0), (0,1), (1,1), each cell
 * costing distance(i, j). Two rows of costs and a byte of direction per cell; ties go diagonal.
 */
function dtwPath(n: number, m: number, distance: (i: number, j: number) => number): AlignmentPath {
  const DIAGONAL = 0;
  const FROM_REF = 1; // came from (i-1, j)
  const FROM_TEST = 2; // came from (i, j-1)
  const direction = new Uint8Array(n * m);
  let previous = new Float64Array(m);
  let current = new Float64Array(m);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < m; j++) {
      const here = distance(i, j);
      if (i === 0 && j === 0) {
        current[0] = here;
        continue;
      }
      let best = Number.POSITIVE_INFINITY;
      let from = DIAGONAL;
      if (i > 0 && j > 0) best = previous[j - 1];
      if (i > 0 && previous[j] < best) {
        best = previous[j];
        from = FROM_REF;
      }
      if (j > 0 && current[j - 1] < best) {
        best = current[j - 1];
        from = FROM_TEST;
      }
      current[j] = best + here;
      direction[i * m + j] = from;
    }
    [previous, current] = [current, previous];
  }
  const refPath: number[] = [];
  const testPath: number[] = [];
  let i = n - 1;
  let j = m - 1;
  for (;;) {
    refPath.push(i);
    testPath.push(j);
    if (i === 0 && j === 0) break;
    const from = direction[i * m + j];
    if (from !== FROM_TEST) i--;
    if (from !== FROM_REF) j--;
  }
  return { ref: Int32Array.from(refPath.reverse()), test: Int32Array.from(testPath.reverse()) };
}

/**
 * YIN on one segment (de Cheveigné & Kawahara 2002, steps 1-5 without the best-local-estimate step):
 * difference function, cumulative mean normalised difference, absolute threshold, parabolic
 * interpolation. The difference function is d(τ) = E(0) + E(τ) − 2·r(τ), with the correlation r from
 * one FFT (as librosa.yin), so a frame costs O(N log N) rather than O(window · lags).
 */
class YinFrame {
  private readonly window: number;
  private readonly maxLag: number;
  private readonly fft: RealFft;
  private readonly padded: Float64Array;
  private readonly aRe: Float64Array;
  private readonly aIm: Float64Array;
  private readonly bRe: Float64Array;
  private readonly bIm: Float64Array;
  private readonly correlation: Float64Array;
  private readonly cumulativeEnergy: Float64Array;
  private readonly normalised: Float64Array;

  constructor(window: number, maxLag: number) {
    this.window = window;
    this.maxLag = maxLag;
    // Linear, not circular, correlation for lags up to maxLag needs window + maxLag points.
    this.fft = new RealFft(nextPowerOfTwo(window + maxLag));
    const size = this.fft.size;
    const bins = this.fft.bins;
    this.padded = new Float64Array(size);
    this.aRe = new Float64Array(bins);
    this.aIm = new Float64Array(bins);
    this.bRe = new Float64Array(bins);
    this.bIm = new Float64Array(bins);
    this.correlation = new Float64Array(size);
    this.cumulativeEnergy = new Float64Array(window + maxLag + 1);
    this.normalised = new Float64Array(maxLag + 2);
  }

  /** The period in samples (fractional), or 0 when no lag in [minLag, maxLag] passes the threshold. */
  period(segment: Float64Array, minLag: number): number {
    const { window: w, maxLag, padded, correlation: r, cumulativeEnergy: e, normalised: dn } = this;
    padded.fill(0);
    padded.set(segment.subarray(0, w));
    this.fft.forward(padded, this.aRe, this.aIm);
    padded.set(segment.subarray(0, w + maxLag));
    this.fft.forward(padded, this.bRe, this.bIm);
    // conj(A)·B, whose inverse is r(τ) = Σ_j a_j b_{j+τ}.
    const { aRe, aIm, bRe, bIm } = this;
    for (let k = 0; k < this.fft.bins; k++) {
      const re = aRe[k] * bRe[k] + aIm[k] * bIm[k];
      const im = aRe[k] * bIm[k] - aIm[k] * bRe[k];
      bRe[k] = re;
      bIm[k] = im;
    }
    this.fft.inverse(bRe, bIm, r);
    e[0] = 0;
    for (let i = 0; i < w + maxLag; i++) e[i + 1] = e[i] + segment[i] * segment[i];
    const energy0 = e[w];
    dn[0] = 1;
    let running = 0;
    for (let lag = 1; lag <= maxLag; lag++) {
      // Rounding in the FFT can leave a tiny negative difference where the true one is 0.
      const d = Math.max(0, energy0 + (e[lag + w] - e[lag]) - 2 * r[lag]);
      running += d;
      dn[lag] = running > 0 ? (d * lag) / running : 1;
    }
    let lag = minLag;
    while (lag <= maxLag && dn[lag] >= YIN_THRESHOLD) lag++;
    if (lag > maxLag) return 0;
    // The threshold is crossed on the way down: the period is the bottom of that dip.
    while (lag < maxLag && dn[lag + 1] < dn[lag]) lag++;
    if (lag <= 1 || lag >= maxLag) return lag;
    const left = dn[lag - 1];
    const mid = dn[lag];
    const right = dn[lag + 1];
    const curvature = left - 2 * mid + right;
    return curvature > 0 ? lag + (0.5 * (left - right)) / curvature : lag;
  }
}

/** dB power spectra of every frame, [frames, n_fft/2 + 1], floored at LSD_POWER_FLOOR. */
function powerFramesDb(samples: Float32Array, nFft: number, hop: number): Float64Array {
  const bins = nFft / 2 + 1;
  const out = new Float64Array(framesFor(samples.length, hop) * bins);
  forEachPowerFrame(samples, nFft, hop, (f, power) => {
    for (let k = 0; k < bins; k++) out[f * bins + k] = 10 * Math.log10(power[k] + LSD_POWER_FLOOR);
  });
  return out;
}

/**
 * |STFT|² of each centred frame (librosa center=True, reflect padding, periodic Hann of n_fft), so the
 * frame grid is the one the rest of xtts uses: 1 + floor(n / hop) frames.
 */
function forEachPowerFrame(
  samples: Float32Array,
  nFft: number,
  hop: number,
  visit: (frame: number, power: Float64Array) => void,
): void {
  const fft = new RealFft(nFft);
  const window = stftWindow('hann', nFft, nFft);
  const re = new Float64Array(fft.bins);
  const im = new Float64Array(fft.bins);
  const power = new Float64Array(fft.bins);
  const edge = new Float64Array(nFft);
  const n = samples.length;
  const frames = framesFor(n, hop);
  for (let f = 0; f < frames; f++) {
    const start = f * hop - nFft / 2;
    if (start >= 0 && start + nFft <= n) fft.forwardWindowed(samples, start, window, re, im);
    else {
      for (let i = 0; i < nFft; i++) edge[i] = reflect(samples, start + i);
      fft.forwardWindowed(edge, 0, window, re, im);
    }
    for (let k = 0; k < fft.bins; k++) power[k] = re[k] * re[k] + im[k] * im[k];
    visit(f, power);
  }
}

function melLog(power: Float64Array, filters: MelFilter[], out: Float64Array): void {
  for (let m = 0; m < filters.length; m++) {
    const { start, weights } = filters[m];
    let acc = 0;
    for (let j = 0; j < weights.length; j++) acc += weights[j] * power[start + j];
    out[m] = Math.log(Math.max(acc, LOG_MEL_FLOOR));
  }
}

/** Rows 1..count of the orthonormal DCT-II of size n (scipy.fft.dct type 2, norm='ortho'), [count, n]. */
function dctRows(n: number, count: number): Float64Array {
  const rows = new Float64Array(count * n);
  const scale = Math.sqrt(2 / n);
  for (let c = 0; c < count; c++) {
    const k = c + 1;
    for (let m = 0; m < n; m++) rows[c * n + m] = scale * Math.cos((Math.PI * k * (2 * m + 1)) / (2 * n));
  }
  return rows;
}

/** 1024 at 22.05 kHz, times the rate ratio rounded to a power of two (512 at 8 kHz, 2048 at 44.1/48 kHz). */
function cepstralFftSize(sampleRateHz: number): number {
  return Math.max(64, 1024 * 2 ** Math.round(Math.log2(sampleRateHz / REFERENCE_RATE_HZ)));
}

/** The smallest power of two >= x (a hair of slack so that 2048.0000001 from float division stays 2048). */
function nextPowerOfTwo(x: number): number {
  return 2 ** Math.max(2, Math.ceil(Math.log2(x) - 1e-9));
}

function framesFor(samples: number, hop: number): number {
  return 1 + Math.floor(samples / hop);
}

function checkRate(sampleRateHz: number): void {
  if (!(Number.isFinite(sampleRateHz) && sampleRateHz > 0))
    throw new XttsError('AUDIO_BAD_SETTINGS', `sample rate ${sampleRateHz} Hz is not a positive number`, {
      suggestions: ['pass the clip’s rate in Hz, e.g. 22050'],
    });
}
