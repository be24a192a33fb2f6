// Log-mel features with librosa's conventions (librosa 0.10: stft center=True with reflect padding,
// periodic window zero-padded to n_fft, filters.mel with htk=False and norm='slaney'), magnitude
// spectrogram (power 1, as Tacotron and XTTS use), natural log (or log10) of max(mel, floor).
// Plans (window, filterbank, FFT) are built once per settings and reused.
import FFT from 'fft.js';
import type { AudioConfig } from '../../config/schema.js';
import { XttsError } from '../../errors.js';

export type MelSettings = Pick<AudioConfig, 'sample_rate_hz' | 'n_fft' | 'hop_length' | 'win_length' | 'window' | 'n_mels' | 'fmin_hz' | 'fmax_hz' | 'mel_scale' | 'mel_norm' | 'log_base' | 'log_floor'>;

export function hzToMel(hz: number, htk: boolean): number {
  if (htk) return 2595 * Math.log10(1 + hz / 700);
  // Slaney's Auditory Toolbox: linear below 1 kHz, logarithmic above.
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  return hz >= minLogHz ? minLogMel + Math.log(hz / minLogHz) / logStep : hz / fSp;
}

export function melToHz(mel: number, htk: boolean): number {
  if (htk) return 700 * (10 ** (mel / 2595) - 1);
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  return mel >= minLogMel ? minLogHz * Math.exp(logStep * (mel - minLogMel)) : fSp * mel;
}

export interface MelFilter {
  /** First FFT bin with a non-zero weight. */
  start: number;
  weights: Float32Array;
}

/** The mel filterbank as sparse rows (each filter covers a few bins). */
export function melFilterbank(s: MelSettings): MelFilter[] {
  const htk = s.mel_scale === 'htk';
  const bins = s.n_fft / 2 + 1;
  const fftFreqs = Float64Array.from({ length: bins }, (_, i) => (i * s.sample_rate_hz) / s.n_fft);
  const melMin = hzToMel(s.fmin_hz, htk);
  const melMax = hzToMel(s.fmax_hz, htk);
  const melF = Float64Array.from({ length: s.n_mels + 2 }, (_, i) => melToHz(melMin + ((melMax - melMin) * i) / (s.n_mels + 1), htk));
  const filters: MelFilter[] = [];
  for (let m = 0; m < s.n_mels; m++) {
    const lower = melF[m];
    const center = melF[m + 1];
    const upper = melF[m + 2];
    const enorm = s.mel_norm === 'slaney' ? 2 / (upper - lower) : 1;
    const w: number[] = [];
    let start = -1;
    for (let k = 0; k < bins; k++) {
      const v = Math.max(0, Math.min((fftFreqs[k] - lower) / (center - lower), (upper - fftFreqs[k]) / (upper - center))) * enorm;
      if (v > 0) {
        if (start < 0) start = k;
        w[k - start] = v;
      } else if (start >= 0) break;
    }
    filters.push({ start: Math.max(0, start), weights: Float32Array.from(w.map((x) => x ?? 0)) });
  }
  return filters;
}

export interface MelResult {
  frames: number;
  nMels: number;
  /** [frames, nMels] row-major. */
  mel: Float32Array;
}

export class MelExtractor {
  readonly settings: MelSettings;
  private readonly fft: FFT;
  private readonly window: Float64Array;
  private readonly filters: MelFilter[];
  private readonly frame: Float64Array;
  private readonly spectrum: Float64Array;
  private readonly magnitude: Float64Array;

  constructor(settings: MelSettings) {
    if ((settings.n_fft & (settings.n_fft - 1)) !== 0) throw new XttsError('AUDIO_BAD_SETTINGS', `audio.n_fft ${settings.n_fft} is not a power of two`);
    if (settings.win_length > settings.n_fft) throw new XttsError('AUDIO_BAD_SETTINGS', `audio.win_length ${settings.win_length} exceeds n_fft ${settings.n_fft}`);
    this.settings = settings;
    this.fft = new FFT(settings.n_fft);
    // Periodic window (scipy get_window fftbins=True), centred in n_fft as librosa pads it.
    const win = new Float64Array(settings.n_fft);
    const off = Math.floor((settings.n_fft - settings.win_length) / 2);
    for (let i = 0; i < settings.win_length; i++) {
      const phase = (2 * Math.PI * i) / settings.win_length;
      win[off + i] = settings.window === 'hann' ? 0.5 - 0.5 * Math.cos(phase) : 0.54 - 0.46 * Math.cos(phase);
    }
    this.window = win;
    this.filters = melFilterbank(settings);
    this.frame = new Float64Array(settings.n_fft);
    this.spectrum = new Float64Array(2 * settings.n_fft);
    this.magnitude = new Float64Array(settings.n_fft / 2 + 1);
  }

  /** Frames for n samples: 1 + floor(n / hop) (center=True). */
  framesFor(samples: number): number {
    return 1 + Math.floor(samples / this.settings.hop_length);
  }

  compute(samples: Float32Array): MelResult {
    const { n_fft: nFft, hop_length: hop, n_mels: nMels, log_floor: floor } = this.settings;
    const pad = nFft / 2;
    const n = samples.length;
    const frames = this.framesFor(n);
    const out = new Float32Array(frames * nMels);
    const logScale = this.settings.log_base === '10' ? 1 / Math.LN10 : 1;
    const frame = this.frame;
    const win = this.window;
    const spec = this.spectrum;
    const mag = this.magnitude;
    const bins = nFft / 2 + 1;
    for (let f = 0; f < frames; f++) {
      const start = f * hop - pad;
      if (start >= 0 && start + nFft <= n) {
        for (let i = 0; i < nFft; i++) frame[i] = samples[start + i] * win[i];
      } else {
        for (let i = 0; i < nFft; i++) frame[i] = reflect(samples, start + i) * win[i];
      }
      this.fft.realTransform(spec, frame);
      for (let k = 0; k < bins; k++) {
        const re = spec[2 * k];
        const im = spec[2 * k + 1];
        mag[k] = Math.sqrt(re * re + im * im);
      }
      const o = f * nMels;
      for (let m = 0; m < nMels; m++) {
        const { start: s0, weights } = this.filters[m];
        let acc = 0;
        for (let j = 0; j < weights.length; j++) acc += weights[j] * mag[s0 + j];
        out[o + m] = Math.log(acc > floor ? acc : floor) * logScale;
      }
    }
    return { frames, nMels, mel: out };
  }
}

/** numpy 'reflect' padding (the edge sample is not repeated); zeros beyond a second reflection. */
function reflect(x: Float32Array, i: number): number {
  const n = x.length;
  if (n === 0) return 0;
  if (n === 1) return x[0];
  let j = i;
  const period = 2 * (n - 1);
  j = ((j % period) + period) % period;
  return j < n ? x[j] : x[period - j];
}
