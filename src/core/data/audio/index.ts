// The audio front end: decode -> downmix -> resample -> trim -> loudness -> log-mel. Everything here
// is pure and synchronous (no I/O, no shared mutable state but per-thread caches of plans), so it
// runs the same in worker threads, the trainer and synthesis.
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import type { AudioConfig } from '../../config/index.js';
import { XttsError } from '../../errors.js';
import { readToEnd, requireRegularFile } from '../../util/index.js';
import { normaliseLoudness, peakAmplitude, trimSilence } from './dynamics.js';
import { MelExtractor, perMelSettings } from './mel.js';
import { resample } from './resample.js';
import { decodeAudio } from './decode.js';
import { decodeWav, type DecodedWav, wavSecondsFromHead } from './wav.js';

export {
  decodeWav,
  encodeWav,
  WAV_ERROR_CODES,
  MIN_RATE_HZ,
  MAX_RATE_HZ,
  MAX_CHANNELS,
  type DecodedWav,
  type DecodeOptions,
  type EncodeOptions,
} from './wav.js';
export {
  resample,
  Resampler,
  DEFAULT_RESAMPLER_DESIGN,
  type ResamplerDesign,
  type ResamplerEngine,
} from './resample.js';
export { trimSilence, integratedLoudness, normaliseLoudness, peakAmplitude } from './dynamics.js';
export {
  MelExtractor,
  melFilterbank,
  melBandEdgesHz,
  stftWindow,
  hzToMel,
  melToHz,
  checkMelSettings,
  type MelEngine,
  type MelExtractorOptions,
  type MelFilter,
  type MelResult,
  type MelSettings,
} from './mel.js';
export { RealFft } from './fft.js';
export { decodeAudio, sniffAudio, type AudioContainer } from './decode.js';
export { MelStats, MEL_STD_FLOOR, type MelStatsResult, type MelStatsState } from './stats.js';
export { griffinLim, melToMagnitude, type GriffinLimOptions } from './griffin-lim.js';
export {
  logSpectralDistance,
  melCepstra,
  melCepstralDistortion,
  f0Track,
  compareAudio,
  MAX_DTW_CELLS,
  type AudioAlignment,
  type AudioComparison,
  type MelCepstra,
  type MelCepstraOptions,
  type MelCepstralDistortion,
} from './quality.js';

/**
 * Bumped whenever the front end's output changes for the same bytes and AudioConfig (resampler
 * design, trimming or loudness details, mel numerics), so a feature cache key that includes it is
 * invalidated exactly then. 2: polyphase Kaiser resampler (32 crossings), librosa trim amin,
 * single-precision wasm log-mel and resampling. 3: headers outside the rate, channel and length
 * bounds and NaN samples are refused (they used to become misleading skips, cached as such).
 */
export const AUDIO_FRONTEND_VERSION = 3;

/**
 * The longest file a clip may be, checked from its header before decoding: what one clip may cost in
 * memory and time stays bounded (10 minutes at 48 kHz: 115 MB of float samples) whatever the header
 * says. A training clip is a sentence; limits.max_audio_s then applies after trimming.
 */
export const MAX_CLIP_SECONDS = 600;

/** Peak below which a clip counts as digital silence (1/2 LSB of 16-bit PCM). */
const SILENCE_PEAK = 0.5 / 32768;

export interface ProcessedClip {
  /** Mel frames: 1 + floor(samples.length / hop_length). */
  melFrames: number;
  /** The same as melFrames (the name older callers use). */
  frames: number;
  nMels: number;
  /** [melFrames, nMels] row-major log-mel. */
  mel: Float32Array;
  /** Processed mono samples at audio.sample_rate_hz (resampled, trimmed, loudness-normalised). */
  samples: Float32Array;
  /** Duration of the processed samples. */
  durationS: number;
  originalSampleRateHz: number;
  /** Bits per sample of a PCM file; undefined for float and compressed audio. */
  pcmBits?: number;
  /** Channels of the file (the samples are their average). */
  channels: number;
  /** The loudest sample of the decoded audio, before resampling and loudness normalisation (full scale: 1). */
  sourcePeak: number;
}

/** One MelExtractor per distinct settings and thread, reused across clips. */
export const melExtractorFor = perMelSettings(8, (s) => new MelExtractor(s));

/**
 * One WAV file's bytes -> processed samples and log-mel. Throws XttsError with code
 * AUDIO_UNREADABLE, AUDIO_TRUNCATED or AUDIO_UNSUPPORTED_FORMAT (from decodeWav), AUDIO_SILENT (no
 * sample above half a 16-bit step: nothing to trim to or learn from), or AUDIO_BAD_SETTINGS.
 * `where` (a path or row id) starts every message.
 */
export function processClip(bytes: Uint8Array, audio: AudioConfig, where: string): ProcessedClip {
  return processDecoded(decodeWav(bytes, where, { maxSeconds: MAX_CLIP_SECONDS }), audio, where);
}

/**
 * The most readAudioFile reads of one file (a pipe too): 600 s of 48 kHz 24-bit stereo is 173 MB. Each worker holds
 * a clip's bytes while it decodes them: a 590 s recording of 16 channels (906 MB at 48 kHz, 16-bit) is within
 * MAX_CLIP_SECONDS but would take a gigabyte a worker.
 */
const MAX_READ_BYTES = 256 << 20;
/** Files larger than this have their WAV header read first (readAudioFile). */
const PEEK_ABOVE_BYTES = 16 << 20;
const HEAD_BYTES = 1 << 20;

/**
 * An audio file's bytes, for processAudioFile. A WAV file over 16 MiB whose header says it holds more than
 * MAX_CLIP_SECONDS is refused (AUDIO_TOO_LONG) from its first MiB, without reading the rest: a dataset row pointing
 * at an hour-long recording (600 MB) would otherwise be read whole by every worker that meets it, only to be refused.
 * A file over MAX_READ_BYTES (256 MiB: many channels, a high rate) is refused unread (AUDIO_TOO_LARGE).
 */
export function readAudioFile(path: string, where = path, options: { pipes?: boolean } = {}): Buffer {
  // A named pipe's open waits for its writer: read only where the user named it (`--reference <(sox …)`), and only
  // so much of it; a dataset's rows are regular files (manifest.ts skips any other).
  if (options.pipes && statSync(path).isFIFO()) return readPipe(path, where);
  requireRegularFile(path);
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size > PEEK_ABOVE_BYTES) {
      const head = Buffer.alloc(HEAD_BYTES);
      const seconds = wavSecondsFromHead(head.subarray(0, readSync(fd, head, 0, HEAD_BYTES, 0)), size, where);
      if (seconds !== undefined && seconds > MAX_CLIP_SECONDS)
        throw new XttsError(
          'AUDIO_TOO_LONG',
          `${where}: ${seconds.toFixed(1)} s of audio; a clip may be at most ${MAX_CLIP_SECONDS} s (it was not ` +
            'read): cut it into sentences',
          { suggestions: ['split long recordings into sentence-length clips'] },
        );
    }
    if (size > MAX_READ_BYTES) {
      const amount = size >= 2 ** 30 ? `${(size / 2 ** 30).toFixed(1)} GiB` : `${Math.round(size / 2 ** 20)} MiB`;
      throw new XttsError(
        'AUDIO_TOO_LARGE',
        `${where}: ${amount}, more than the ${MAX_READ_BYTES >> 20} MiB xtts reads of one clip (it was not read); ` +
          'a clip of speech is ' +
          'far smaller: many channels or a high sample rate? cut it into sentences, or take one channel at the ' +
          "model's rate",
        { suggestions: ['e.g. `sox IN.wav -c 1 -r 22050 OUT.wav remix 1`, then cut it into sentence-length clips'] },
      );
    }
    // From the open file (its position is still 0: the header was read at a position), not opened again.
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A pipe's bytes to its end, refused (AUDIO_TOO_LONG) past MAX_READ_BYTES rather than held without bound. */
function readPipe(path: string, where: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const bytes = readToEnd(fd, MAX_READ_BYTES);
    if (bytes) return bytes;
    throw new XttsError(
      'AUDIO_TOO_LONG',
      `${where}: the pipe gave more than ${MAX_READ_BYTES >> 20} MiB of audio; a clip may be at most ` +
        `${MAX_CLIP_SECONDS} s: cut it into sentences`,
      { suggestions: ['split long recordings into sentence-length clips'] },
    );
  } finally {
    closeSync(fd);
  }
}

/** processClip for any format xtts reads (WAV, FLAC, MP3, Ogg Vorbis or Opus): see decode.ts. */
export async function processAudioFile(bytes: Uint8Array, audio: AudioConfig, where: string): Promise<ProcessedClip> {
  return processDecoded(await decodeAudio(bytes, where, { maxSeconds: MAX_CLIP_SECONDS }), audio, where);
}

function processDecoded(wav: DecodedWav, audio: AudioConfig, where: string): ProcessedClip {
  const bad = wav.samples.findIndex((x) => !Number.isFinite(x));
  if (bad >= 0) {
    throw new XttsError(
      'AUDIO_NOT_FINITE',
      `${where}: sample ${bad.toLocaleString('en-US')} ` +
        `(at ${(bad / wav.sampleRateHz).toFixed(3)} s) is ${wav.samples[bad]}: a float ` +
        `WAV with NaN or infinite values; export it again`,
      {
        suggestions: ['re-export the clip, or convert it to 16-bit PCM (`sox IN -e signed-integer -b 16 OUT.wav`)'],
      },
    );
  }
  const sourcePeak = peakAmplitude(wav.samples);
  if (sourcePeak < SILENCE_PEAK) {
    // Channels are averaged to mono: two that cancel (one the other inverted) average to silence though each is loud.
    const mixed = wav.channels > 1 ? ` once its ${wav.channels} channels are averaged to mono` : '';
    throw new XttsError(
      'AUDIO_SILENT',
      `${where}: the audio is silent${mixed} (${wav.durationS.toFixed(2)} s with no sample ` +
        `above half a 16-bit step); remove the row or replace the file`,
      {
        suggestions: [
          ...(mixed
            ? [
                'if a channel on its own holds the voice (the channels cancel when averaged, one the other ' +
                  'inverted), take that channel: `sox IN OUT.wav remix 1`',
              ]
            : []),
          'remove the row from the metadata or replace the audio file',
        ],
      },
    );
  }
  let samples = resample(wav.samples, wav.sampleRateHz, audio.sample_rate_hz);
  if (audio.trim.enabled) {
    const { start, end } = trimSilence(samples, audio.trim.top_db);
    samples = samples.slice(start, end);
  }
  if (audio.loudness.enabled) samples = normaliseLoudness(samples, audio.sample_rate_hz, audio.loudness.target_lufs);
  const { frames, nMels, mel } = melExtractorFor(audio).compute(samples);
  return {
    melFrames: frames,
    frames,
    nMels,
    mel,
    samples,
    durationS: samples.length / audio.sample_rate_hz,
    originalSampleRateHz: wav.sampleRateHz,
    ...(wav.format === 'pcm' ? { pcmBits: wav.bitsPerSample } : {}),
    channels: wav.channels,
    sourcePeak,
  };
}
