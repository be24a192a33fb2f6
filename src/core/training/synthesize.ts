// Text (+ a reference clip for the voice) -> WAVs with a trained checkpoint: the checkpoint's own
// tokenizer, cleaner settings and feature statistics, free-running decoding of every text in
// batches (monotonic attention, model.ts), Griffin-Lim.
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, type BackendChoice } from '../backend/index.js';
import type { Backend, XttsConfig } from '../config/index.js';
import { griffinLim } from '../data/index.js';
import { processAudioFile } from '../data/index.js';
import { encodeWav } from '../data/index.js';
import { cleanText } from '../data/index.js';
import { Phonemizer } from '../data/index.js';
import { Tokenizer, type TokenizerJSON } from '../data/index.js';
import { join } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';
import { type GenerateItem, XttsModel } from '../model/index.js';
import { checkOutputFolder, writeOutputFile } from '../util/index.js';
import { generatedFrameBound } from './evaluation.js';
import {
  assignArrays,
  CheckpointStore,
  refuseNonFinite,
  resolveCheckpoint,
  type CheckpointState,
} from './checkpoint.js';

/** One text to speak and where its WAV goes; `where` names it in messages ("lines.txt:3"). */
export interface SynthesisText {
  text: string;
  out: string;
  where?: string;
}

export interface SynthesizeOptions {
  checkpoint: string;
  texts: SynthesisText[];
  language?: string;
  /** A WAV of the voice to speak in; default: the model's learnt average voice (a silent reference). */
  reference?: string;
  backend?: Backend;
  maxSeconds?: number;
  griffinLimIterations?: number;
  /** Texts decoded together (default 16): one batch runs the same kernels as one text. */
  batchSize?: number;
  /** Also write the result as JSON here (beside a folder of WAVs). */
  summaryFile?: string;
  /** Replace WAVs (and the summary) that exist already; without it an existing file is refused before any work. */
  overwrite?: boolean;
}

export interface SynthesizedUtterance {
  where?: string;
  text: string;
  /** The text as the model read it: cleaned (and phonemized). */
  cleanedText: string;
  out: string;
  frames: number;
  durationS: number;
  /** 'end_of_text' when the whole text was read at its predicted durations; 'max_frames' when --max-seconds cut it. */
  stopReason: 'end_of_text' | 'max_frames';
}

export interface SynthesizeResult {
  checkpoint: string;
  step: number;
  backend: BackendChoice['backend'];
  language: string;
  utterances: SynthesizedUtterance[];
  /** Texts that could not be spoken, with where they are and why; the others were. */
  skipped: { where?: string; text: string; reason: string }[];
  /** Symbols in the texts that never occurred in the model's training data. */
  warnings: string[];
  synthesisMs: number;
}

/** Up to 24 characters either side of a position, for messages. */
function around(text: string, at: number): string {
  const chars = [...text];
  const from = Math.max(0, at - 24);
  return `${from > 0 ? '…' : ''}${chars.slice(from, at + 25).join('')}${at + 25 < chars.length ? '…' : ''}`;
}

export async function synthesize(o: SynthesizeOptions): Promise<SynthesizeResult> {
  const overwrite = { overwrite: o.overwrite === true };
  for (const t of o.texts) checkOutputFolder(t.out, 'the WAV', overwrite);
  if (o.summaryFile) checkOutputFolder(o.summaryFile, 'the synthesis summary', overwrite);
  const dir = resolveCheckpoint(o.checkpoint);
  const ckpt = new CheckpointStore(dir).load<CheckpointState>(dir, { optimizer: false });
  const { config, stats, sizes } = ckpt.state;
  if (config.training.loss.duration_weight === undefined) {
    throw new XttsError(
      'CHECKPOINT_TOO_OLD',
      `${dir} was trained by an xtts without text alignment or durations: its decoder ` +
        `does not follow the text, so it cannot speak`,
      {
        exitCode: ExitCode.usage,
        suggestions: ['train the model again with this xtts (the same config and dataset work as they are)'],
      },
    );
  }
  const tokenizer = Tokenizer.fromJSON(ckpt.state.tokenizer as TokenizerJSON);
  const language = o.language ?? config.dataset.language;
  const langIndex = config.text.languages.indexOf(language);
  if (langIndex < 0)
    throw new XttsError(
      'SYNTH_LANGUAGE',
      `--language ${language} is not one the model was trained on: ${config.text.languages.join(', ')}`,
      { exitCode: ExitCode.usage },
    );
  if (o.texts.length === 0)
    throw new XttsError('SYNTH_NO_TEXT', 'there is no text to speak', {
      exitCode: ExitCode.usage,
      suggestions: ['pass --text "…" or --texts FILE with one sentence per line'],
    });

  // Text -> tokens; what cannot be spoken is reported with where it is and skipped.
  const unseen = new Set(ckpt.state.unseenSymbols ?? []);
  const skipped: SynthesizeResult['skipped'] = [];
  const warnings: string[] = [];
  const jobs: (GenerateItem & { input: SynthesisText; cleanedText: string })[] = [];
  const phonemizer = config.text.tokenizer === 'phonemes' ? new Phonemizer(config.text.phonemizer_command) : undefined;
  try {
    for (const input of o.texts) {
      const name = input.where ? `${input.where}: ` : '';
      let text = cleanText(input.text, config.text);
      if (text.trim() === '') {
        skipped.push({ where: input.where, text: input.text, reason: 'nothing to speak after cleaning' });
        continue;
      }
      if (phonemizer) text = await phonemizer.phonemize(text, language);
      const enc = tokenizer.encode(text, language);
      if (enc.unmappable.length) {
        const what = enc.unmappable
          .map(
            (c, i) =>
              `${JSON.stringify(c)} at character ${(enc.unmappableAt?.[i] ?? 0) + 1} ` +
              `("${around(text, enc.unmappableAt?.[i] ?? 0)}")`,
          )
          .join(', ');
        skipped.push({
          where: input.where,
          text: input.text,
          reason:
            `${phonemizer ? 'the phonemes have' : 'the text has'} symbols the model has no ` +
            `token for: ${what}; rephrase without them or spell them out in words`,
        });
        continue;
      }
      if (enc.ids.length > config.model.max_text_tokens) {
        skipped.push({
          where: input.where,
          text: input.text,
          reason:
            `${enc.ids.length} tokens; the model takes at ` +
            `most ${config.model.max_text_tokens}: split it into sentences`,
        });
        continue;
      }
      const untrained = [...new Set([...text].filter((c) => unseen.has(c)))];
      if (untrained.length)
        warnings.push(
          `${name}${untrained.map((c) => JSON.stringify(c)).join(' ')} never occurred in ` +
            `the training data: the model has not learnt ` +
            `how ${untrained.length > 1 ? 'they sound' : 'it sounds'}`,
        );
      jobs.push({ ids: enc.ids, language: langIndex, input, cleanedText: text });
    }
  } finally {
    phonemizer?.close();
  }
  if (jobs.length === 0) {
    const first = skipped[0];
    throw new XttsError(
      'SYNTH_UNSPEAKABLE',
      (first.where ? `${first.where}: ` : '') +
        `${first.reason}` +
        (skipped.length > 1 ? ` (and ${skipped.length - 1} more texts)` : ''),
      {
        exitCode: ExitCode.usage,
        suggestions: ['numbers and abbreviations are spelt out by the english cleaner (text.cleaners: english)'],
      },
    );
  }

  const nMels = config.audio.n_mels;
  let refMel: Float32Array;
  if (o.reference) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(o.reference);
    } catch (e) {
      throw new XttsError(
        'SYNTH_REFERENCE',
        `cannot read --reference ${o.reference}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
        { exitCode: ExitCode.usage },
      );
    }
    const clip = await processAudioFile(bytes, config.audio, o.reference);
    const frames = Math.min(clip.frames, config.batching.reference_frames);
    refMel = new Float32Array(frames * nMels);
    for (let i = 0; i < refMel.length; i++) refMel[i] = (clip.mel[i] - stats.mean[i % nMels]) / stats.std[i % nMels];
  } else {
    // The mean voice: a reference of zeros in normalised units is the dataset's average spectrum.
    refMel = new Float32Array(config.batching.reference_frames * nMels);
  }
  // A diverged run's weights speak nothing: 8 s of silence would look like a result.
  refuseNonFinite(dir, ckpt);
  const { choice } = await initBackend(o.backend ?? 'auto', {
    device: config.device.model_device,
    matmul: config.device.matmul,
  });
  const model = new XttsModel(config.model, sizes, {
    seed: config.training.seed,
    convImpl: config.device.conv_kernels,
  });
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => model.setWeights(w));
  const t0 = performance.now();
  const maxFrames = generatedFrameBound(config, o.maxSeconds);
  const batchSize = Math.max(1, Math.floor(o.batchSize ?? 16));
  const utterances: SynthesizedUtterance[] = [];
  try {
    for (let start = 0; start < jobs.length; start += batchSize) {
      const batch = jobs.slice(start, start + batchSize);
      const results = await model.generateBatch(batch, refMel, {
        maxFrames,
        logDurationVariance: ckpt.state.logDurationVariance ?? 0,
      });
      for (const [j, g] of results.entries()) {
        const job = batch[j];
        const logMel = g.mel.map((v, i) => v * stats.std[i % nMels] + stats.mean[i % nMels]);
        const samples = griffinLim(logMel, g.frames, config.audio, { iterations: o.griffinLimIterations ?? 32 });
        writeOutputFile(job.input.out, encodeWav(samples, config.audio.sample_rate_hz), 'the WAV', overwrite);
        utterances.push({
          ...(job.input.where ? { where: job.input.where } : {}),
          text: job.input.text,
          cleanedText: job.cleanedText,
          out: job.input.out,
          frames: g.frames,
          durationS: samples.length / config.audio.sample_rate_hz,
          stopReason: g.stopReason,
        });
      }
    }
  } finally {
    model.dispose();
    disposeBackend(tf as never);
  }
  const result: SynthesizeResult = {
    checkpoint: dir,
    step: ckpt.state.step,
    backend: choice.backend,
    language,
    utterances,
    skipped,
    warnings,
    synthesisMs: performance.now() - t0,
  };
  if (o.summaryFile)
    writeOutputFile(o.summaryFile, `${JSON.stringify(result, null, 1)}\n`, 'the synthesis summary', overwrite);
  return result;
}
