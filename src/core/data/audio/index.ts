// The audio front end: decode -> downmix -> resample -> trim -> loudness -> log-mel, pure and
// synchronous so that it runs the same in worker threads.
import type { AudioConfig } from '../../config/schema.js';
import { normaliseLoudness, trimSilence } from './dynamics.js';
import { MelExtractor } from './mel.js';
import { resample } from './resample.js';
import { decodeWav } from './wav.js';

export { decodeWav, encodeWav, type DecodedWav, type EncodeOptions } from './wav.js';
export { resample } from './resample.js';
export { trimSilence, integratedLoudness, normaliseLoudness } from './dynamics.js';
export { MelExtractor, melFilterbank, hzToMel, melToHz, type MelResult, type MelSettings } from './mel.js';
export { MelStats, type MelStatsResult } from './stats.js';

export interface ProcessedClip {
  frames: number;
  nMels: number;
  mel: Float32Array;
  /** Processed samples at audio.sample_rate_hz. */
  samples: Float32Array;
  durationS: number;
  originalSampleRateHz: number;
  channels: number;
}

const extractors = new Map<string, MelExtractor>();

/** One MelExtractor per distinct settings, reused across clips. */
export function melExtractorFor(audio: AudioConfig): MelExtractor {
  const key = JSON.stringify(audio);
  let m = extractors.get(key);
  if (!m) {
    m = new MelExtractor(audio);
    extractors.set(key, m);
  }
  return m;
}

export function processClip(bytes: Uint8Array, audio: AudioConfig, where: string): ProcessedClip {
  const wav = decodeWav(bytes, where);
  let samples = resample(wav.samples, wav.sampleRateHz, audio.sample_rate_hz);
  if (audio.trim.enabled) {
    const { start, end } = trimSilence(samples, audio.trim.top_db);
    samples = samples.subarray(start, end);
  }
  if (audio.loudness.enabled) samples = normaliseLoudness(samples, audio.sample_rate_hz, audio.loudness.target_lufs);
  const { frames, nMels, mel } = melExtractorFor(audio).compute(samples);
  return { frames, nMels, mel, samples, durationS: samples.length / audio.sample_rate_hz, originalSampleRateHz: wav.sampleRateHz, channels: wav.channels };
}
export { griffinLim, melToMagnitude, type GriffinLimOptions } from './griffin-lim.js';
