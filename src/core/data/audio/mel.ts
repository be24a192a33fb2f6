// Log-mel features with librosa's conventions (librosa 0.10): stft center=True with *reflect* padding
// (what Tacotron/Coqui-TTS pass explicitly; librosa 0.10's own default became 'constant'), a periodic
// window of win_length zero-padded to n_fft in the middle (filters.get_window fftbins=True +
// util.pad_center), filters.mel with htk=False/True and norm='slaney' or none, magnitude spectrogram
// (power 1, as Tacotron and XTTS use), then log (natural or base 10) of max(mel, log_floor).
// Everything that depends only on the settings (window, filterbank, FFT tables, scratch buffers) is
// built once in MelExtractor's constructor; compute() allocates only its output.
// Two engines compute the same features: a WebAssembly SIMD kernel (wasm/logmel.c, single precision
// like librosa on float32 audio; ~6x faster, what the 1,500x real-time target needs on this class of
// machine) and plain JS in double precision (the fallback and the cross-check in the tests).
import type { AudioConfig } from '../../config/index.js';
import { XttsError } from '../../errors.js';
import { RealFft } from './fft.js';
import { ensureMemory, instantiateKernels, wasmAvailable, type WasmMemory } from './wasm/kernels.js';

/** Every setting a log-mel depends on: what caches key it by and what a vocoder must share with its mels. */
export const MEL_SETTINGS_KEYS = [
  'sample_rate_hz',
  'n_fft',
  'hop_length',
  'win_length',
  'window',
  'n_mels',
  'fmin_hz',
  'fmax_hz',
  'mel_scale',
  'mel_norm',
  'log_base',
  'log_floor',
] as const satisfies readonly (keyof AudioConfig)[];

export type MelSettings = Pick<AudioConfig, (typeof MEL_SETTINGS_KEYS)[number]>;

/**
 * What is built once for each distinct mel settings on a thread (an extractor, a pitch estimator): `make`'s result
 * kept for at most `max` settings, the oldest dropped first.
 */
export function perMelSettings<T>(max: number, make: (s: MelSettings) => T): (s: MelSettings) => T {
  const built = new Map<string, T>();
  return (s) => {
    const key = JSON.stringify(MEL_SETTINGS_KEYS.map((k) => s[k]));
    let value = built.get(key);
    if (value === undefined) {
      if (built.size >= max) built.delete(built.keys().next().value!);
      value = make(s);
      built.set(key, value);
    }
    return value;
  };
}

/** The mel settings in which `theirs` (named `who`) differs from `ours`, each as "audio.KEY THEIRS (who) vs OURS". */
export function melSettingsDiffer(theirs: MelSettings, ours: MelSettings, who: string): string[] {
  return MEL_SETTINGS_KEYS.filter((k) => theirs[k] !== ours[k]).map(
    (k) => `audio.${k} ${theirs[k]} (${who}) vs ${ours[k]}`,
  );
}

// Slaney's Auditory Toolbox mel scale (librosa.hz_to_mel htk=False): linear below 1 kHz, log above.
const SLANEY_F_SP = 200 / 3;
const SLANEY_MIN_LOG_HZ = 1000;
const SLANEY_MIN_LOG_MEL = SLANEY_MIN_LOG_HZ / SLANEY_F_SP;
const SLANEY_LOG_STEP = Math.log(6.4) / 27;

export function hzToMel(hz: number, htk: boolean): number {
  if (htk) return 2595 * Math.log10(1 + hz / 700);
  return hz >= SLANEY_MIN_LOG_HZ
    ? SLANEY_MIN_LOG_MEL + Math.log(hz / SLANEY_MIN_LOG_HZ) / SLANEY_LOG_STEP
    : hz / SLANEY_F_SP;
}

export function melToHz(mel: number, htk: boolean): number {
  if (htk) return 700 * (10 ** (mel / 2595) - 1);
  return mel >= SLANEY_MIN_LOG_MEL
    ? SLANEY_MIN_LOG_HZ * Math.exp(SLANEY_LOG_STEP * (mel - SLANEY_MIN_LOG_MEL))
    : SLANEY_F_SP * mel;
}

/** One mel filter as a sparse row: weights for FFT bins start, start + 1, … */
export interface MelFilter {
  start: number;
  weights: Float32Array;
}

/** Band edges in Hz: n_mels + 2 points evenly spaced in mel between fmin and fmax (librosa.mel_frequencies). */
export function melBandEdgesHz(s: Pick<MelSettings, 'n_mels' | 'fmin_hz' | 'fmax_hz' | 'mel_scale'>): Float64Array {
  const htk = s.mel_scale === 'htk';
  const lo = hzToMel(s.fmin_hz, htk);
  const hi = hzToMel(s.fmax_hz, htk);
  return Float64Array.from({ length: s.n_mels + 2 }, (_, i) => melToHz(lo + ((hi - lo) * i) / (s.n_mels + 1), htk));
}

/**
 * The mel filterbank, librosa.filters.mel semantics: triangles between consecutive band edges over
 * the rfft bin frequencies i·sr/n_fft; norm='slaney' scales each by 2 / (upper - lower) Hz so that
 * every filter has the same area. A filter that covers no bin has no weights (librosa warns there).
 */
export function melFilterbank(
  s: Pick<MelSettings, 'sample_rate_hz' | 'n_fft' | 'n_mels' | 'fmin_hz' | 'fmax_hz' | 'mel_scale' | 'mel_norm'>,
): MelFilter[] {
  const bins = Math.floor(s.n_fft / 2) + 1;
  const edges = melBandEdgesHz(s);
  const filters: MelFilter[] = [];
  for (let m = 0; m < s.n_mels; m++) {
    const lower = edges[m];
    const center = edges[m + 1];
    const upper = edges[m + 2];
    const enorm = s.mel_norm === 'slaney' ? 2 / (upper - lower) : 1;
    const weights: number[] = [];
    let start = -1;
    for (let k = 0; k < bins; k++) {
      const hz = (k * s.sample_rate_hz) / s.n_fft;
      const v = Math.max(0, Math.min((hz - lower) / (center - lower), (upper - hz) / (upper - center)));
      if (v > 0) {
        if (start < 0) start = k;
        weights.push(v * enorm);
      } else if (start >= 0) break;
    }
    filters.push({ start: Math.max(0, start), weights: Float32Array.from(weights) });
  }
  return filters;
}

/** A periodic Hann or Hamming window of winLength samples, centred in nFft samples of zeros. */
export function stftWindow(window: 'hann' | 'hamming', winLength: number, nFft: number): Float64Array {
  const w = new Float64Array(nFft);
  const offset = Math.floor((nFft - winLength) / 2);
  for (let i = 0; i < winLength; i++) {
    const c = Math.cos((2 * Math.PI * i) / winLength);
    w[offset + i] = window === 'hann' ? 0.5 - 0.5 * c : 0.54 - 0.46 * c;
  }
  return w;
}

export interface MelResult {
  frames: number;
  nMels: number;
  /** [frames, nMels] row-major. */
  mel: Float32Array;
}

export function checkMelSettings(s: MelSettings): void {
  const bad = (what: string, fix: string) =>
    new XttsError('AUDIO_BAD_SETTINGS', `audio settings: ${what}`, { suggestions: [fix] });
  if (!Number.isInteger(s.n_fft) || s.n_fft < 4 || (s.n_fft & (s.n_fft - 1)) !== 0)
    throw bad(`n_fft ${s.n_fft} is not a power of two`, 'use n_fft: 1024 (or 512, 2048)');
  if (!(s.win_length >= 1 && s.win_length <= s.n_fft))
    throw bad(`win_length ${s.win_length} is not in [1, n_fft ${s.n_fft}]`, `set win_length: ${s.n_fft}`);
  if (!Number.isInteger(s.hop_length) || s.hop_length < 1)
    throw bad(`hop_length ${s.hop_length} is not a positive integer`, 'use hop_length: 256');
  if (s.fmax_hz > s.sample_rate_hz / 2)
    throw bad(
      `fmax_hz ${s.fmax_hz} is above Nyquist (${s.sample_rate_hz / 2} Hz)`,
      `set fmax_hz: ${s.sample_rate_hz / 2}`,
    );
  if (!(s.fmin_hz >= 0 && s.fmin_hz < s.fmax_hz))
    throw bad(`fmin_hz ${s.fmin_hz} is not in [0, fmax_hz ${s.fmax_hz})`, 'set fmin_hz: 0');
  if (!(s.log_floor > 0)) throw bad(`log_floor ${s.log_floor} is not positive`, 'set log_floor: 1e-5');
}

export type MelEngine = 'wasm' | 'js';

export interface MelExtractorOptions {
  /** 'wasm' (default where WebAssembly exists and n_fft >= 16) or 'js'. */
  engine?: MelEngine;
}

export class MelExtractor {
  readonly settings: MelSettings;
  readonly engine: MelEngine;
  readonly nMels: number;
  readonly hopLength: number;
  readonly nFft: number;
  private readonly fft: RealFft;
  private readonly window: Float64Array;
  // The filterbank flattened: filter m has weights[offset[m] .. offset[m] + length[m]) for bins start[m]…
  private readonly filterStart: Int32Array;
  private readonly filterLength: Int32Array;
  private readonly filterOffset: Int32Array;
  private readonly filterWeights: Float64Array;
  /** Bins [0, binsUsed) are all the filterbank reads (fmax below Nyquist needs fewer). */
  private readonly binsUsed: number;
  private readonly edgeFrame: Float64Array;
  private readonly re: Float64Array;
  private readonly im: Float64Array;
  private readonly magnitude: Float64Array;
  private readonly kernel: WasmLogMel | undefined;

  constructor(settings: MelSettings, options: MelExtractorOptions = {}) {
    checkMelSettings(settings);
    this.settings = { ...settings };
    this.nMels = settings.n_mels;
    this.hopLength = settings.hop_length;
    this.nFft = settings.n_fft;
    this.fft = new RealFft(settings.n_fft);
    this.window = stftWindow(settings.window, settings.win_length, settings.n_fft);
    const filters = melFilterbank(settings);
    this.filterStart = Int32Array.from(filters, (f) => f.start);
    this.filterLength = Int32Array.from(filters, (f) => f.weights.length);
    this.filterOffset = new Int32Array(filters.length);
    let total = 0;
    let binsUsed = 1;
    filters.forEach((f, m) => {
      this.filterOffset[m] = total;
      total += f.weights.length;
      binsUsed = Math.max(binsUsed, f.start + f.weights.length);
    });
    this.filterWeights = new Float64Array(total);
    filters.forEach((f, m) => this.filterWeights.set(f.weights, this.filterOffset[m]));
    this.binsUsed = binsUsed;
    this.edgeFrame = new Float64Array(settings.n_fft);
    this.re = new Float64Array(this.fft.bins);
    this.im = new Float64Array(this.fft.bins);
    this.magnitude = new Float64Array(this.fft.bins);
    const wasmPossible = wasmAvailable() && settings.n_fft >= 16;
    this.engine = options.engine ?? (wasmPossible ? 'wasm' : 'js');
    if (this.engine === 'wasm') {
      if (!wasmPossible)
        throw new XttsError(
          'AUDIO_BAD_SETTINGS',
          `the wasm log-mel engine needs WebAssembly and n_fft >= 16 (n_fft is ${settings.n_fft})`,
          { suggestions: ["use engine: 'js'"] },
        );
      this.kernel = new WasmLogMel(this.window, this.fft.bins, filters, binsUsed, settings);
    }
  }

  /** Frames for n samples: 1 + floor(n / hop) (center=True). */
  framesFor(samples: number): number {
    return 1 + Math.floor(samples / this.hopLength);
  }

  compute(samples: Float32Array): MelResult {
    const frames = this.framesFor(samples.length);
    const mel = new Float32Array(frames * this.nMels);
    this.computeInto(samples, mel);
    return { frames, nMels: this.nMels, mel };
  }

  /**
   * Writes [framesFor(samples.length), nMels] into `out` (which must be at least that long); returns the frame count.
   */
  computeInto(samples: Float32Array, out: Float32Array): number {
    const nFft = this.nFft;
    const hop = this.hopLength;
    const nMels = this.nMels;
    const frames = this.framesFor(samples.length);
    if (out.length < frames * nMels)
      throw new RangeError(`mel output holds ${out.length} values, needs ${frames * nMels}`);
    if (this.kernel) {
      this.kernel.run(samples, frames, out);
      return frames;
    }
    const pad = nFft >> 1;
    const n = samples.length;
    const floor = this.settings.log_floor;
    const logScale = this.settings.log_base === '10' ? 1 / Math.LN10 : 1;
    const { re, im, magnitude: mag, edgeFrame: edge, binsUsed: used } = this;
    const { filterStart: fStart, filterLength: fLen, filterOffset: fOff, filterWeights: w } = this;
    for (let f = 0; f < frames; f++) {
      const start = f * hop - pad;
      if (start >= 0 && start + nFft <= n) {
        this.fft.forwardWindowed(samples, start, this.window, re, im, used);
      } else {
        for (let i = 0; i < nFft; i++) edge[i] = reflect(samples, start + i);
        this.fft.forwardWindowed(edge, 0, this.window, re, im, used);
      }
      for (let k = 0; k < used; k++) mag[k] = Math.sqrt(re[k] * re[k] + im[k] * im[k]);
      const o = f * nMels;
      for (let m = 0; m < nMels; m++) {
        const s0 = fStart[m];
        const len = fLen[m];
        const wo = fOff[m];
        let acc = 0;
        for (let j = 0; j < len; j++) acc += w[wo + j] * mag[s0 + j];
        out[o + m] = Math.log(acc > floor ? acc : floor) * logScale;
      }
    }
    return frames;
  }
}

/**
 * One instance of the wasm kernel with its own memory: the tables of one MelExtractor at the bottom,
 * then the scratch of one frame, then the padded clip and its output, which grow with the longest clip.
 */
class WasmLogMel {
  private readonly memory: WasmMemory;
  private readonly logmel: (...args: number[]) => void;
  private readonly args: number[];
  private readonly dynamicBase: number;
  private readonly nFft: number;
  private readonly nMels: number;

  constructor(window: Float64Array, bins: number, filters: MelFilter[], binsUsed: number, s: MelSettings) {
    const kernels = instantiateKernels();
    this.memory = kernels.memory;
    this.logmel = kernels.logmel;
    this.nFft = s.n_fft;
    this.nMels = s.n_mels;
    const m = s.n_fft / 2;
    let top = kernels.heapBase;
    const alloc = (floats: number) => {
      const at = (top + 15) & ~15;
      top = at + 4 * (floats + 4); // + one vector of slack for the kernel's 4-wide loads
      return at;
    };
    const totalWeights = filters.reduce((a, f) => a + f.weights.length, 0);
    const at = {
      window: alloc(s.n_fft),
      bitrev: alloc(m),
      twr: alloc(m),
      twi: alloc(m),
      splitR: alloc(m),
      splitI: alloc(m),
      fStart: alloc(s.n_mels),
      fLen: alloc(s.n_mels),
      fOff: alloc(s.n_mels),
      fW: alloc(totalWeights),
      zr: alloc(m),
      zi: alloc(m),
      mag: alloc(bins),
    };
    this.dynamicBase = (top + 15) & ~15;
    ensureMemory(this.memory, this.dynamicBase);
    const f32 = new Float32Array(this.memory.buffer);
    const i32 = new Int32Array(this.memory.buffer);
    f32.set(window, at.window / 4);
    const bits = Math.log2(m);
    for (let j = 0; j < m; j++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((j >> b) & 1) << (bits - 1 - b);
      i32[at.bitrev / 4 + j] = r;
    }
    for (let h = 1; h < m; h <<= 1) {
      for (let j = 0; j < h; j++) {
        f32[at.twr / 4 + h + j] = Math.cos((-Math.PI * j) / h);
        f32[at.twi / 4 + h + j] = Math.sin((-Math.PI * j) / h);
      }
    }
    for (let k = 0; k < m; k++) {
      f32[at.splitR / 4 + k] = Math.cos((-2 * Math.PI * k) / s.n_fft);
      f32[at.splitI / 4 + k] = Math.sin((-2 * Math.PI * k) / s.n_fft);
    }
    let off = 0;
    filters.forEach((f, b) => {
      i32[at.fStart / 4 + b] = f.start;
      i32[at.fLen / 4 + b] = f.weights.length;
      i32[at.fOff / 4 + b] = off;
      f32.set(f.weights, at.fW / 4 + off);
      off += f.weights.length;
    });
    const logScale = s.log_base === '10' ? 1 / Math.LN10 : 1;
    // logmel(n_fft, hop, frames, n_mels, used, floor, log_scale, window, bitrev, twr, twi, split_r,
    //        split_i, f_start, f_len, f_off, f_w, zr, zi, mag, padded, out): frames/padded/out per call.
    this.args = [
      s.n_fft,
      s.hop_length,
      0,
      s.n_mels,
      binsUsed,
      Math.fround(s.log_floor),
      logScale,
      at.window,
      at.bitrev,
      at.twr,
      at.twi,
      at.splitR,
      at.splitI,
      at.fStart,
      at.fLen,
      at.fOff,
      at.fW,
      at.zr,
      at.zi,
      at.mag,
      0,
      0,
    ];
  }

  run(samples: Float32Array, frames: number, out: Float32Array): void {
    const n = samples.length;
    const pad = this.nFft >> 1;
    const paddedAt = this.dynamicBase;
    const paddedLength = n + 2 * pad;
    const outAt = (paddedAt + 4 * paddedLength + 15) & ~15;
    ensureMemory(this.memory, outAt + 4 * frames * this.nMels);
    const f32 = new Float32Array(this.memory.buffer);
    const p = paddedAt / 4;
    f32.set(samples, p + pad);
    for (let i = 0; i < pad; i++) {
      f32[p + i] = reflect(samples, i - pad);
      f32[p + pad + n + i] = reflect(samples, n + i);
    }
    const args = this.args;
    args[2] = frames;
    args[20] = paddedAt;
    args[21] = outAt;
    this.logmel(...args);
    out.set(f32.subarray(outAt / 4, outAt / 4 + frames * this.nMels));
  }
}

/** numpy.pad mode='reflect' (the edge sample is not repeated), extended periodically for short inputs. */
export function reflect(x: Float32Array, i: number): number {
  const n = x.length;
  if (n === 0) return 0;
  if (n === 1) return x[0];
  const period = 2 * (n - 1);
  const j = ((i % period) + period) % period;
  return j < n ? x[j] : x[period - j];
}
