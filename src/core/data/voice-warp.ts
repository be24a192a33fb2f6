// Voice warping: more voices than the dataset has. A training utterance's log-mel and its reference clip's
// are read along a frequency axis scaled by one factor α (vocal-tract length perturbation, Jaitly & Hinton
// 2013, as speech augmentation uses it), which moves the formants and the harmonics, and so the pitch, by α:
// the same words in a voice the data does not have, heard in both the target and the reference, so that the
// conditioning encoder learns to read a voice's spectral envelope from its clip instead of recognising one
// of the dataset's speakers. Each utterance of a batch draws its own α (log-uniform within the configured
// range) with probability `share`; the rest are left as recorded.
import type { AudioConfig } from '../config/index.js';
import { hzToMel, melToHz } from './audio/index.js';

/** What a producer needs to warp voices (batching.voice_warp and voice_warp_share, and the mel scale). */
export interface VoiceWarp {
  /** The largest factor: α lies in [1 / (1 + max), 1 + max]. */
  max: number;
  /** Share of the utterances warped. */
  share: number;
  /** batching.voice_warp_reference: the reference clip warped with its utterance (else read as recorded). */
  reference: boolean;
  mel: Pick<AudioConfig, 'n_mels' | 'fmin_hz' | 'fmax_hz' | 'mel_scale'>;
}

/** The voice warping a training config asks for, or undefined when batching.voice_warp is 0. */
export function voiceWarpFor(config: {
  batching: { voice_warp: number; voice_warp_share: number; voice_warp_reference: boolean };
  audio: VoiceWarp['mel'];
}): VoiceWarp | undefined {
  const { voice_warp: max, voice_warp_share: share, voice_warp_reference: reference } = config.batching;
  if (max <= 0 || share <= 0) return undefined;
  const { n_mels, fmin_hz, fmax_hz, mel_scale } = config.audio;
  return { max, share, reference, mel: { n_mels, fmin_hz, fmax_hz, mel_scale } };
}

/**
 * For each mel band, the fractional band of the recording it reads when frequencies are scaled by `alpha`:
 * band m (centre f) takes what the recording has at f / alpha, found on the mel scale on which the band
 * centres are evenly spaced, and clamped to the first and last bands.
 */
export function melWarpSources(mel: VoiceWarp['mel'], alpha: number): Float32Array {
  const htk = mel.mel_scale === 'htk';
  const lo = hzToMel(mel.fmin_hz, htk);
  const step = (hzToMel(mel.fmax_hz, htk) - lo) / (mel.n_mels + 1);
  const sources = new Float32Array(mel.n_mels);
  for (let m = 0; m < mel.n_mels; m++) {
    // Centre of band m: the (m + 1)-th of n_mels + 2 edges, as melBandEdgesHz spaces them.
    const centreHz = melToHz(lo + step * (m + 1), htk);
    const at = (hzToMel(centreHz / alpha, htk) - lo) / step - 1;
    sources[m] = Math.min(mel.n_mels - 1, Math.max(0, at));
  }
  return sources;
}

/** A warp as each band's lower source band and the weight of the one above it (the last band reads itself). */
export interface WarpTable {
  index: Int32Array;
  frac: Float32Array;
}

/** The interpolation table of fractional sources (melWarpSources). */
export function warpTable(sources: Float32Array): WarpTable {
  const n = sources.length;
  const index = new Int32Array(n);
  const frac = new Float32Array(n);
  sources.forEach((s, m) => {
    index[m] = Math.min(n - 2, Math.floor(s));
    frac[m] = s - index[m];
  });
  return { index, frac };
}

/**
 * The warp of one utterance: undefined (as recorded) or the table of a drawn α, with `rand` drawing
 * uniforms in [0, 1) (two a call, taken or not). Draws nothing when `warp` is undefined.
 */
export function drawVoiceWarp(
  warp: VoiceWarp | undefined,
  rand: () => number,
): { alpha: number; table: WarpTable } | undefined {
  if (!warp) return undefined;
  const take = rand() < warp.share;
  const u = rand();
  if (!take) return undefined;
  const alpha = Math.exp((2 * u - 1) * Math.log(1 + warp.max));
  return { alpha, table: warpTable(melWarpSources(warp.mel, alpha)) };
}

/**
 * One warped band of frame row `row` (offset of its first band in `mel`): the two source bands interpolated.
 * The producers call it band by band as they normalise (one pass over the clip).
 */
export function warpedBand(mel: Float32Array, row: number, table: WarpTable, band: number): number {
  const i = row + table.index[band];
  const t = table.frac[band];
  return mel[i] * (1 - t) + mel[i + 1] * t;
}
