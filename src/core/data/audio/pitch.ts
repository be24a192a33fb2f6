// A voice's pitch read from its log-mel (model.speaker_pitch): the median F0 of the voiced frames of the clips a
// reference window is read from. The conditioning encoder learns a voice's pitch only as part of the voices it was
// trained on, and a new voice's clip lands on the nearest of them (bench/voices: a 97 Hz voice spoken at its
// neighbour's 112 Hz in every run); told the pitch as a number, the model can speak one between two it knows.
//
// The estimator reads the log-mel the model reads, so that a warped voice (batching.voice_warp scales the mel's
// frequency axis, and with it F0) and a synthesis reference are measured as the training clips were. Per frame,
// the bands whose centres lie within 50–1000 Hz (where an 80-band mel resolves a voice's first harmonics), less
// their local mean over ±3 bands (the spectral envelope), are correlated with the same of a harmonic comb at each of
// 100 candidate F0s from 55 to 420 Hz; a comb's template is the front end's own log-mel of a tone with every
// harmonic at one level, so it holds the window's and the filters' smearing. A frame is voiced when its best
// correlation reaches 0.6, it is within 30 dB of the clip's loudest frame, and it is in a run of three whose F0s
// agree within a semitone (noise fits some comb now and then, never the same one a window later); its F0 is the best
// candidate's. Harmonics closer than two bands apart cannot be told apart: at the default settings (bands 37 Hz apart
// below 1 kHz) voices under about 100 Hz read up to 11% high (test/unit/reference-pitch.test.ts; bench/voices'
// espeak-ng voices of 79–271 Hz read within 11%, in their order but for two 5 Hz apart, at 92 and 97 Hz).
import { MelExtractor, type MelSettings, melBandEdgesHz, perMelSettings } from './mel.js';

/** Candidate F0s: log-spaced over a speaking voice's range (bench/voices' voices are 79–271 Hz). */
export const PITCH_MIN_HZ = 55;
export const PITCH_MAX_HZ = 420;
const CANDIDATES = 100;
/** Bands read: their centres within this range (harmonics above it blur in a mel's wider bands). */
const BAND_MIN_HZ = 50;
const BAND_MAX_HZ = 1000;
/** Fewer bands than this in the range (a mel of few bands, or a high fmin_hz) cannot tell a comb's spacing. */
export const PITCH_MIN_BANDS = 12;
/** The spectral envelope: each band's mean over this many bands either side. */
const ENVELOPE_BANDS = 3;
const VOICED_CORRELATION = 0.6;
const SEMITONE = Math.log(2) / 12;
const LOUD_WITHIN_DB = 30;
/** A clip with fewer voiced frames than this has no pitch (ClipPitch 0). */
const MIN_VOICED_FRAMES = 5;

/** The mel bands (indices) whose centres lie within BAND_MIN_HZ..BAND_MAX_HZ. */
export function pitchBands(s: Pick<MelSettings, 'n_mels' | 'fmin_hz' | 'fmax_hz' | 'mel_scale'>): number[] {
  const edges = melBandEdgesHz(s);
  const bands: number[] = [];
  for (let m = 0; m < s.n_mels; m++) if (edges[m + 1] >= BAND_MIN_HZ && edges[m + 1] <= BAND_MAX_HZ) bands.push(m);
  return bands;
}

/** `values` less their local mean (±ENVELOPE_BANDS), then centred and scaled to unit length, in place. */
function flatten(values: Float64Array, scratch: Float64Array): void {
  const n = values.length;
  for (let i = 0; i < n; i++) {
    let sum = 0;
    const lo = Math.max(0, i - ENVELOPE_BANDS);
    const hi = Math.min(n - 1, i + ENVELOPE_BANDS);
    for (let j = lo; j <= hi; j++) sum += values[j];
    scratch[i] = values[i] - sum / (hi - lo + 1);
  }
  let mean = 0;
  for (let i = 0; i < n; i++) mean += scratch[i] / n;
  let norm = 0;
  for (let i = 0; i < n; i++) norm += (scratch[i] - mean) ** 2;
  const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
  for (let i = 0; i < n; i++) values[i] = (scratch[i] - mean) * scale;
}

export class PitchEstimator {
  readonly bands: readonly number[];
  /** log Hz of each candidate. */
  readonly candidates: Float64Array;
  /** [CANDIDATES, bands] flattened templates. */
  private readonly templates: Float64Array;
  private readonly nMels: number;
  /** LOUD_WITHIN_DB in the log-mel's units. */
  private readonly loudRange: number;

  constructor(settings: MelSettings) {
    this.bands = pitchBands(settings);
    this.nMels = settings.n_mels;
    this.loudRange = (LOUD_WITHIN_DB / 20) * (settings.log_base === '10' ? 1 : Math.LN10);
    const nb = this.bands.length;
    this.candidates = Float64Array.from(
      { length: CANDIDATES },
      (_, i) => Math.log(PITCH_MIN_HZ) + (i / (CANDIDATES - 1)) * Math.log(PITCH_MAX_HZ / PITCH_MIN_HZ),
    );
    this.templates = new Float64Array(CANDIDATES * nb);
    if (nb < PITCH_MIN_BANDS) return;
    const extractor = new MelExtractor(settings, { engine: 'js' });
    const rate = settings.sample_rate_hz;
    // Long enough for three whole frames in the middle whatever the hop.
    const samples = new Float32Array(4 * Math.max(settings.n_fft, settings.hop_length));
    const values = new Float64Array(nb);
    const scratch = new Float64Array(nb);
    this.candidates.forEach((logHz, c) => {
      const f0 = Math.exp(logHz);
      const harmonics = Math.floor((settings.fmax_hz - f0 / 2) / f0);
      samples.fill(0);
      // Every harmonic at one level, Schroeder's phases (a low crest factor: no clipping, no one loud instant).
      for (let k = 1; k <= harmonics; k++) {
        const phase = (Math.PI * k * k) / harmonics;
        const w = (2 * Math.PI * k * f0) / rate;
        for (let i = 0; i < samples.length; i++) samples[i] += 0.02 * Math.cos(w * i + phase);
      }
      const { mel, frames } = extractor.compute(samples);
      // The middle frames: no edge padding in them.
      const mid = Math.floor(frames / 2);
      values.fill(0);
      for (let f = mid - 1; f <= mid + 1; f++) this.bands.forEach((m, i) => (values[i] += mel[f * this.nMels + m] / 3));
      flatten(values, scratch);
      this.templates.set(values, c * nb);
    });
  }

  /** Whether the mel has bands enough for a pitch (PITCH_MIN_BANDS within 50–1000 Hz). */
  get usable(): boolean {
    return this.bands.length >= PITCH_MIN_BANDS;
  }

  /** The log F0 (natural log of Hz) of each voiced frame of a [frames, nMels] log-mel, ascending. */
  voicedLogF0(mel: Float32Array, frames: number): Float32Array {
    return this.voicedOf(this.frameTrack(mel, frames));
  }

  /** A frame track's (frameTrack) first `count` frames as log F0 moved by `shift`, 0 where unvoiced, into `out`. */
  trackLogF0(track: Uint8Array, out: Float32Array, shift = 0, count = track.length): Float32Array {
    for (let f = 0; f < count; f++) out[f] = track[f] > 0 ? this.candidates[track[f] - 1] + shift : 0;
    return out;
  }

  /** The log F0 of each voiced frame of a frame track (frameTrack), ascending. */
  voicedOf(track: Uint8Array): Float32Array {
    const out: number[] = [];
    for (const c of track) if (c > 0) out.push(this.candidates[c - 1]);
    return Float32Array.from(out).sort();
  }

  /**
   * Each frame's pitch as a candidate: 0 where the frame is unvoiced, else 1 + the index of its F0 in `candidates`
   * (a byte a frame: model.pitch_contour keeps every training clip's).
   */
  frameTrack(mel: Float32Array, frames: number): Uint8Array {
    const track = new Uint8Array(frames);
    if (!this.usable) return track;
    const nb = this.bands.length;
    let loudest = -Infinity;
    const level = new Float64Array(frames);
    for (let f = 0; f < frames; f++) {
      let l = -Infinity;
      for (const m of this.bands) l = Math.max(l, mel[f * this.nMels + m]);
      level[f] = l;
      loudest = Math.max(loudest, l);
    }
    const values = new Float64Array(nb);
    const scratch = new Float64Array(nb);
    // Each frame's best candidate's log F0, NaN where no comb fits (or the frame is quiet).
    const best = new Float64Array(frames).fill(Number.NaN);
    const index = new Uint8Array(frames);
    for (let f = 0; f < frames; f++) {
      if (level[f] < loudest - this.loudRange) continue;
      this.bands.forEach((m, i) => (values[i] = mel[f * this.nMels + m]));
      flatten(values, scratch);
      let fit = -Infinity;
      let at = 0;
      for (let c = 0; c < CANDIDATES; c++) {
        let r = 0;
        for (let i = 0; i < nb; i++) r += this.templates[c * nb + i] * values[i];
        if (r > fit) {
          fit = r;
          at = c;
        }
      }
      if (fit >= VOICED_CORRELATION) {
        best[f] = this.candidates[at];
        index[f] = at + 1;
      }
    }
    // Voiced: a fitting frame in a run of three whose F0s are within a semitone of its own (a voice's pitch glides;
    // noise that happens to fit a comb fits another one a window later, and frames overlap by three quarters).
    const near = (f: number, g: number) => g >= 0 && g < frames && Math.abs(best[f] - best[g]) <= SEMITONE;
    for (let f = 0; f < frames; f++) {
      const before = near(f, f - 1);
      const after = near(f, f + 1);
      if ((before && after) || (before && near(f, f - 2)) || (after && near(f, f + 2))) track[f] = index[f];
    }
    return track;
  }
}

/** One PitchEstimator per mel settings and thread (its templates take about half a second to build). */
export const pitchEstimatorFor = perMelSettings(4, (s) => new PitchEstimator(s));

/** A clip's pitch: the median log F0 of its voiced frames and how many there were (0 and 0: no pitch). */
export interface ClipPitch {
  logF0: number;
  voiced: number;
}

/** A clip's pitch from its voiced frames' log F0 (voicedLogF0); none with fewer than MIN_VOICED_FRAMES. */
export function clipPitch(voicedLogF0: Float32Array): ClipPitch {
  if (voicedLogF0.length < MIN_VOICED_FRAMES) return { logF0: 0, voiced: 0 };
  return { logF0: voicedLogF0[Math.floor(voicedLogF0.length / 2)], voiced: voicedLogF0.length };
}

/**
 * The pitch of several clips read as one reference (batching.reference_join, or several --reference clips): their
 * medians weighted by their voiced frames, in log F0; 0 (unknown to the model) when none of them has a pitch.
 */
export function pooledLogF0(clips: readonly ClipPitch[]): number {
  let weight = 0;
  let sum = 0;
  for (const c of clips) {
    weight += c.voiced;
    sum += c.voiced * c.logF0;
  }
  return weight > 0 ? sum / weight : 0;
}

/** Each clip's pitch as last measured, by its log-mel: synthesis reads a reference's twice (warning, windows). */
const measured = new WeakMap<Float32Array, { estimator: PitchEstimator; frames: number; pitch: ClipPitch }>();

/** The pitch of clips read as one reference ([frames, nMels] raw log-mels): pooledLogF0 of each clip's. */
export function referenceLogF0(clips: readonly { mel: Float32Array; frames: number }[], settings: MelSettings): number {
  const estimator = pitchEstimatorFor(settings);
  const pitchOf = (c: { mel: Float32Array; frames: number }) => {
    const known = measured.get(c.mel);
    if (known && known.estimator === estimator && known.frames === c.frames) return known.pitch;
    const pitch = clipPitch(estimator.voicedLogF0(c.mel, c.frames));
    measured.set(c.mel, { estimator, frames: c.frames, pitch });
    return pitch;
  };
  return pooledLogF0(clips.map(pitchOf));
}

/** Each frame's log F0 of a raw [frames, nMels] log-mel, 0 where unvoiced (model.pitch_contour's targets), in `out`. */
export function frameLogF0(
  mel: Float32Array,
  frames: number,
  settings: MelSettings,
  out = new Float32Array(frames),
): Float32Array {
  const estimator = pitchEstimatorFor(settings);
  return estimator.trackLogF0(estimator.frameTrack(mel, frames), out);
}
