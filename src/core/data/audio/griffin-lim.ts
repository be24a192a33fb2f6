// Griffin-Lim vocoding for eval audio and synthesis (Griffin & Lim 1984): log-mel -> linear
// magnitude through the filterbank's transpose (normalised per bin, the cheap approximate inverse
// librosa's mel_to_stft improves on with NNLS), then iterations of ISTFT/STFT keeping the magnitude
// and taking the phase. Same window, hop and centre padding as the feature extractor.
import FFT from 'fft.js';
import type { AudioConfig } from '../../config/schema.js';
import { melFilterbank } from './mel.js';

export interface GriffinLimOptions {
  iterations?: number;
  /** Magnitude exponent before phase recovery (>1 sharpens harmonics; Tacotron used 1.5). */
  power?: number;
  /** Deterministic initial phase. */
  seed?: number;
}

/** Log-mel [frames, nMels] (natural log, or log10 per the config) -> linear magnitude [frames, bins]. */
export function melToMagnitude(logMel: Float32Array, frames: number, audio: AudioConfig): Float64Array {
  const filters = melFilterbank(audio);
  const bins = audio.n_fft / 2 + 1;
  const nMels = audio.n_mels;
  // Column sums of the filterbank: dividing by them makes the transpose a per-bin weighted average.
  const colSum = new Float64Array(bins);
  for (const f of filters) for (let j = 0; j < f.weights.length; j++) colSum[f.start + j] += f.weights[j];
  const base = audio.log_base === '10' ? 10 : Math.E;
  const mag = new Float64Array(frames * bins);
  for (let t = 0; t < frames; t++) {
    for (let m = 0; m < nMels; m++) {
      const v = base ** logMel[t * nMels + m];
      const { start, weights } = filters[m];
      for (let j = 0; j < weights.length; j++) mag[t * bins + start + j] += weights[j] * v;
    }
    for (let k = 0; k < bins; k++) mag[t * bins + k] = colSum[k] > 0 ? mag[t * bins + k] / colSum[k] : 0;
  }
  return mag;
}

export function griffinLim(logMel: Float32Array, frames: number, audio: AudioConfig, options: GriffinLimOptions = {}): Float32Array {
  const nFft = audio.n_fft;
  const hop = audio.hop_length;
  const bins = nFft / 2 + 1;
  const power = options.power ?? 1.5;
  const mag = melToMagnitude(logMel, frames, audio).map((x) => x ** power);
  const fft = new FFT(nFft);
  const window = new Float64Array(nFft);
  const off = Math.floor((nFft - audio.win_length) / 2);
  for (let i = 0; i < audio.win_length; i++) {
    const ph = (2 * Math.PI * i) / audio.win_length;
    window[off + i] = audio.window === 'hann' ? 0.5 - 0.5 * Math.cos(ph) : 0.54 - 0.46 * Math.cos(ph);
  }
  const length = (frames - 1) * hop; // samples, as the centred STFT of `length` samples has `frames` frames
  const padded = length + nFft;
  // Window-square sum for the least-squares ISTFT (Griffin & Lim's overlap-add normalisation).
  const wss = new Float64Array(padded);
  for (let t = 0; t < frames; t++) for (let i = 0; i < nFft; i++) wss[t * hop + i] += window[i] * window[i];
  let seed = options.seed ?? 1;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  const phaseRe = new Float64Array(frames * bins);
  const phaseIm = new Float64Array(frames * bins);
  for (let i = 0; i < phaseRe.length; i++) {
    const a = 2 * Math.PI * rand();
    phaseRe[i] = Math.cos(a);
    phaseIm[i] = Math.sin(a);
  }
  const spec = new Float64Array(2 * nFft);
  const time = new Float64Array(2 * nFft);
  const frame = new Float64Array(nFft);
  let signal = new Float64Array(padded);
  const iterations = options.iterations ?? 32;
  for (let it = 0; it <= iterations; it++) {
    // ISTFT of magnitude × phase.
    signal = new Float64Array(padded);
    for (let t = 0; t < frames; t++) {
      for (let k = 0; k < bins; k++) {
        const m = mag[t * bins + k];
        spec[2 * k] = m * phaseRe[t * bins + k];
        spec[2 * k + 1] = m * phaseIm[t * bins + k];
      }
      for (let k = 1; k < nFft / 2; k++) {
        spec[2 * (nFft - k)] = spec[2 * k];
        spec[2 * (nFft - k) + 1] = -spec[2 * k + 1];
      }
      fft.inverseTransform(time, spec);
      for (let i = 0; i < nFft; i++) signal[t * hop + i] += time[2 * i] * window[i];
    }
    for (let i = 0; i < padded; i++) if (wss[i] > 1e-8) signal[i] /= wss[i];
    if (it === iterations) break;
    // STFT of the estimate: keep its phase.
    for (let t = 0; t < frames; t++) {
      for (let i = 0; i < nFft; i++) frame[i] = signal[t * hop + i] * window[i];
      fft.realTransform(spec, frame);
      for (let k = 0; k < bins; k++) {
        const re = spec[2 * k];
        const im = spec[2 * k + 1];
        const n = Math.hypot(re, im) || 1;
        phaseRe[t * bins + k] = re / n;
        phaseIm[t * bins + k] = im / n;
      }
    }
  }
  // Drop the centre padding and normalise the peak to -1 dBFS so eval clips are audible and unclipped.
  const out = Float32Array.from(signal.subarray(nFft / 2, nFft / 2 + length));
  let peak = 0;
  for (const v of out) peak = Math.max(peak, Math.abs(v));
  if (peak > 0) for (let i = 0; i < out.length; i++) out[i] *= 0.89 / peak;
  return out;
}
