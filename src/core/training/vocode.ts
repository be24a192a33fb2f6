// Copy synthesis: recordings -> the features' log-mel -> a vocoder -> WAVs (`xtts vocode`). What a
// vocoder alone does to speech, with nothing of the acoustic model in the way: the check speech engineers
// run on a vocoder first, and the input of bench/vocoder's objective scores. Beside each output it can
// write the reference as the features saw it (resampled, trimmed, loudness-normalised), so that scores
// compare the same samples. The neural vocoder runs batches of clips padded to the longest; the real-time
// factor counts its time only (after one untimed batch that compiles the backend's programs).
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { type BackendChoice, disposeBackend, initBackend } from '../backend/index.js';
import type { AudioConfig, Backend } from '../config/index.js';
import { encodeWav, processAudioFile, readAudioFile } from '../data/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { checkOutputFolder, makeOutputFolders, writeOutputFile, refuseUnsafeOutputs } from '../util/index.js';
import { checkpointInputs } from './checkpoint.js';
import { griffinLimVocoder, loadNeuralVocoder, type MelVocoder, type VocoderUsed } from './vocoder-run.js';

export interface VocodeOptions {
  /** A WAV (or FLAC, MP3, Ogg) file, or a folder whose audio files are all vocoded. */
  input: string;
  outDir: string;
  /** A vocoder run folder or checkpoint; without it Griffin-Lim with `audio`'s settings. */
  vocoder?: string;
  /** Feature settings for Griffin-Lim (a neural vocoder brings its own). */
  audio: AudioConfig;
  backend?: Backend;
  /** Clips per batch of the neural vocoder (default 32). */
  batchSize?: number;
  griffinLimIterations?: number;
  /** Also write each processed reference here (the samples the mel was computed from). */
  referenceDir?: string;
  overwrite?: boolean;
}

export interface VocodedFile {
  input: string;
  out: string;
  reference?: string;
  durationS: number;
}

export interface VocodeResult {
  vocoder: VocoderUsed;
  backend: BackendChoice['backend'] | null;
  files: VocodedFile[];
  skipped: { input: string; reason: string }[];
  /** Folders in --in, whose files were not read (vocode reads the files directly in --in). */
  foldersNotRead: string[];
  batchSize: number;
  /** Seconds of audio vocoded, and the vocoder's time for it (mels in, samples read back). */
  audioS: number;
  vocodeMs: number;
  /** audioS over the vocoder's seconds: how many times faster than real time. */
  realTimeFactor: number;
}

const AUDIO_FILE = /\.(wav|flac|mp3|ogg|opus)$/i;

/** The folders directly in --in (their files are not read: vocode reads one level), for a warning. */
function foldersIn(input: string): string[] {
  try {
    return readdirSync(input, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(input, d.name))
      .sort();
  } catch {
    return [];
  }
}

function inputFiles(input: string): string[] {
  let isDir: boolean;
  try {
    isDir = statSync(input).isDirectory();
  } catch {
    throw new XttsError('VOCODE_INPUT', `--in ${input} does not exist`, {
      exitCode: ExitCode.usage,
      suggestions: ['name a WAV file or a folder of WAVs'],
    });
  }
  const files = isDir
    ? readdirSync(input, { withFileTypes: true })
        .filter((d) => !d.isDirectory() && AUDIO_FILE.test(d.name))
        .map((d) => join(input, d.name))
        .sort()
    : [input];
  if (files.length === 0)
    throw new XttsError('VOCODE_INPUT', `--in ${input} holds no audio files (.wav, .flac, .mp3, .ogg, .opus)`, {
      exitCode: ExitCode.usage,
    });
  return files;
}

export async function vocodeFiles(o: VocodeOptions): Promise<VocodeResult> {
  const files = inputFiles(o.input);
  // A.flac → A.wav; a name with no audio extension (a pipe: /dev/fd/63) gains one.
  const outName = (f: string) => (AUDIO_FILE.test(f) ? basename(f).replace(AUDIO_FILE, '.wav') : `${basename(f)}.wav`);
  const overwrite = { overwrite: o.overwrite === true };
  refuseUnsafeOutputs(
    files.flatMap((f) => [
      { file: join(o.outDir, outName(f)), what: `${f}'s WAV` },
      ...(o.referenceDir ? [{ file: join(o.referenceDir, outName(f)), what: `${f}'s reference WAV` }] : []),
    ]),
    [
      ...files.map((f) => ({ file: f, what: 'the input (--in)' })),
      ...(o.vocoder ? checkpointInputs(o.vocoder, 'a file of the vocoder (--vocoder)') : []),
    ],
  );
  // The folders the user named are made; nothing is written anywhere else.
  makeOutputFolders(o.outDir, 'the output folder', '--out-dir');
  if (o.referenceDir) makeOutputFolders(o.referenceDir, 'the reference folder', '--reference-dir');
  for (const f of files) {
    checkOutputFolder(join(o.outDir, outName(f)), 'the WAV', overwrite);
    if (o.referenceDir) checkOutputFolder(join(o.referenceDir, outName(f)), 'the reference WAV', overwrite);
  }
  let choice: BackendChoice | undefined;
  let vocoder: MelVocoder;
  if (o.vocoder) {
    ({ choice } = await initBackend(o.backend ?? 'auto', {}));
    vocoder = loadNeuralVocoder(o.vocoder);
  } else vocoder = griffinLimVocoder(o.audio, o.griffinLimIterations ?? 32);
  const audio = vocoder.audio;
  const batchSize = Math.max(1, Math.floor(o.batchSize ?? 32));
  const result: VocodeResult = {
    vocoder: vocoder.used,
    backend: choice?.backend ?? null,
    files: [],
    skipped: [],
    foldersNotRead: foldersIn(o.input),
    batchSize,
    audioS: 0,
    vocodeMs: 0,
    realTimeFactor: 0,
  };
  try {
    let warmed = vocoder.used.kind === 'griffin-lim';
    for (let start = 0; start < files.length; start += batchSize) {
      const clips: { input: string; mel: Float32Array; frames: number; samples: Float32Array }[] = [];
      for (const input of files.slice(start, start + batchSize)) {
        try {
          const c = await processAudioFile(readAudioFile(input, input, { pipes: true }), audio, input);
          clips.push({ input, mel: c.mel, frames: c.frames, samples: c.samples });
        } catch (e) {
          if (!(e instanceof XttsError) && (e as NodeJS.ErrnoException).code === undefined) throw e;
          result.skipped.push({ input, reason: (e as Error).message });
        }
      }
      if (!warmed && clips.length) {
        await vocoder.vocodeBatch(clips);
        warmed = true;
      }
      const t0 = performance.now();
      const waves = await vocoder.vocodeBatch(clips);
      result.vocodeMs += performance.now() - t0;
      for (const [i, c] of clips.entries()) {
        // The mel has 1 + floor(samples/hop) frames: the vocoder's frames·hop samples cover the clip.
        const wave = waves[i].subarray(0, c.samples.length);
        const out = join(o.outDir, outName(c.input));
        writeOutputFile(out, encodeWav(wave, audio.sample_rate_hz), 'the WAV', overwrite);
        let reference: string | undefined;
        if (o.referenceDir) {
          reference = join(o.referenceDir, outName(c.input));
          writeOutputFile(reference, encodeWav(c.samples, audio.sample_rate_hz), 'the reference WAV', overwrite);
        }
        const durationS = c.samples.length / audio.sample_rate_hz;
        result.audioS += durationS;
        result.files.push({ input: c.input, out, ...(reference ? { reference } : {}), durationS });
      }
    }
  } finally {
    vocoder.dispose();
    if (choice) disposeBackend(tf as never);
  }
  result.realTimeFactor = result.vocodeMs > 0 ? result.audioS / (result.vocodeMs / 1000) : 0;
  if (result.files.length === 0)
    throw new XttsError(
      'VOCODE_NOTHING',
      `no clip of ${o.input} could be read; first: ${result.skipped[0]?.reason ?? 'none'}`,
      { exitCode: ExitCode.usage },
    );
  return result;
}
