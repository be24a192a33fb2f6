// What a run measures of its model besides the training loss: a validation pass (loss, durations,
// alignment) and free-running synthesis of the eval sentences. The trainer runs them between steps,
// or, with device.data_device set, a side worker runs them on that device (side-device.ts).
import { basename, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { FeatureCache } from '../cache/index.js';
import type { XttsConfig } from '../config/index.js';
import { encodeWav } from '../data/index.js';
import { planBuckets } from '../data/index.js';
import { DataLoader } from '../data/index.js';
import type { PreparedDataset, PreparedItem } from '../data/index.js';
import { cleanText } from '../data/index.js';
import { Phonemizer, referenceLogF0, referenceLogRate } from '../data/index.js';
import { batchFor, disposeBatch, uploadBatch } from '../model/index.js';
import { computeLosses } from '../model/index.js';
import { diagonalShare } from '../model/index.js';
import type { GenerateResult, XttsModel } from '../model/index.js';
import { alignmentFigure, melFigure } from '../render/index.js';
import { describeVocoder, griffinLimVocoder, type MelVocoder, melVocoder } from './vocoder-run.js';
import { readsPitch } from './voices.js';
import { makeFolders, writeFileAtomic } from '../util/index.js';
import { isXttsError } from '../errors.js';

/**
 * The most frames a generated utterance may have: as long as the longest clip trained on
 * (limits.max_audio_s, or `maxSeconds`), within model.max_mel_frames. A model early in training
 * predicts durations far too long; without this bound its eval sentences ran to max_mel_frames
 * (24 s at the presets' 2048), each decoder step attending over all of them. With the frames, the setting
 * that bounds them (--max-seconds, limits.max_audio_s or model.max_mel_frames, which no flag raises) and their
 * length in seconds.
 */
export function frameBound(
  config: XttsConfig,
  maxSeconds?: number,
): { frames: number; bound: 'max_seconds' | 'max_audio_s' | 'max_mel_frames'; seconds: number } {
  const { sample_rate_hz: rate, hop_length: hop } = config.audio;
  const asked = Math.ceil(((maxSeconds ?? config.limits.max_audio_s) * rate) / hop);
  const capped = asked > config.model.max_mel_frames;
  const frames = Math.max(1, capped ? config.model.max_mel_frames : asked);
  const bound = capped ? 'max_mel_frames' : maxSeconds !== undefined ? 'max_seconds' : 'max_audio_s';
  return { frames, bound, seconds: (frames * hop) / rate };
}

/**
 * A cached clip's log-mel in the model's scale (the training set's mean and deviation per bin), with the log-mel as
 * recorded; and back.
 */
function melScaling(cache: FeatureCache, stats: PreparedDataset['stats'], nMels: number) {
  return {
    normalised: (key: string) => {
      const f = cache.getFeature(key)!;
      const out = new Float32Array(f.frames * nMels);
      for (let i = 0; i < out.length; i++) out[i] = (f.mel[i] - stats.mean[i % nMels]) / stats.std[i % nMels];
      return { mel: out, frames: f.frames, recorded: f.mel };
    },
    denormalised: (mel: Float32Array) => mel.map((v, i) => v * stats.std[i % nMels] + stats.mean[i % nMels]),
  };
}

/**
 * Eval synthesis's bound for texts of up to `tokens` tokens: frameBound's, and twice the most
 * frames per token of any training clip (a short sentence is not read for 20 seconds because the
 * model is 2 steps old), so that the eval's cost follows its texts.
 */
export function evalFrameBound(config: XttsConfig, train: readonly PreparedItem[], tokens: number): number {
  let perToken = 0;
  for (const item of train) perToken = Math.max(perToken, item.frames / Math.max(1, item.tokens.length));
  const bound = frameBound(config).frames;
  return perToken > 0 ? Math.max(1, Math.min(bound, Math.ceil(2 * perToken * tokens))) : bound;
}

/** The loader settings validation shares with training (TrainOptions' data, the run's config). */
export type LoaderCommon = Omit<
  ConstructorParameters<typeof DataLoader>[0],
  'items' | 'plan' | 'shuffle' | 'depth' | 'producers'
>;
export type LoaderItems = (items: PreparedItem[]) => ConstructorParameters<typeof DataLoader>[0]['items'];

export interface ValidationResult {
  loss: number;
  durationError: number;
  durationVariance: number;
  lengthRatio: number;
  diagonal: number;
}

/**
 * One pass over the validation set (no dropout), one readback at the end: the mean loss and how well
 * the durations are predicted against those the alignment search finds — the mean |error| of
 * log(1 + steps) per symbol, and the predicted over the found length of all utterances — and the
 * share of steps whose symbol lies near the diagonal (1 for an even reading of the whole text).
 */
export async function validate(
  model: XttsModel,
  data: PreparedDataset,
  config: XttsConfig,
  bucketOptions: Parameters<typeof planBuckets>[1],
  common: LoaderCommon,
  loaderItems: LoaderItems,
): Promise<ValidationResult> {
  const plan = planBuckets(
    data.validation.map((i) => ({ tokens: i.tokens.length, frames: i.frames })),
    bucketOptions,
  );
  const batches = plan.buckets.reduce((a, b) => a + Math.ceil(b.items.length / b.batchSize), 0);
  const loader = new DataLoader({
    ...common,
    items: loaderItems(data.validation),
    // model.reference_rate: each speaker at the rate of its training clips, as it was trained.
    ...(config.model.reference_rate ? { rateItems: loaderItems(data.train) } : {}),
    plan,
    shuffle: false,
    depth: 2,
    producers: 0,
    maxBatches: batches,
  });
  const r = config.model.reduction_factor;
  // loss, Σ|log error|, Σ log error², Σ exp(predicted log(1 + steps)), found steps
  let sums = tf.zeros([5]) as tf.Tensor1D;
  let symbols = 0;
  let n = 0;
  let diagonal = 0;
  let utterances = 0;
  try {
    for (;;) {
      const b = await loader.next();
      if (!b) break;
      const tensors = uploadBatch(batchFor(model, b), {
        batchSize: b.shape.batchSize,
        tokens: b.shape.tokens,
        frames: b.shape.frames,
        refFrames: b.shape.refFrames,
        nMels: b.shape.nMels,
        reductionFactor: r,
      });
      const textLengths = b.textLengths.slice(0, b.shape.batchSize);
      const melLengths = b.melLengths.slice(0, b.shape.batchSize);
      loader.release(b);
      const alignment = await model.align(tensors, textLengths, melLengths, config.training.alignment_prior);
      const path = (await alignment.steps.data()) as Int32Array;
      const steps = b.shape.frames / r;
      for (let u = 0; u < textLengths.length; u++) {
        if (melLengths[u] === 0) continue;
        diagonal += diagonalShare(
          path.subarray(u * steps, (u + 1) * steps),
          Math.ceil(melLengths[u] / r),
          textLengths[u],
        );
        utterances++;
        symbols += Math.max(0, textLengths[u] - 3);
      }
      const next = tf.tidy(() => {
        const aligned = { ...tensors, alignment };
        const out = model.forward(aligned, { training: false });
        // The mel and duration terms: comparable with a model without model.pitch_contour's pitch predictor.
        const parts = computeLosses(out, aligned, config.training.loss);
        const loss = parts.pitch ? tf.sub(parts.total, parts.pitch) : parts.total;
        const spoken = tf.cast(tf.greater(alignment.durations, tf.scalar(0)), 'float32');
        const diff = tf.sub(out.logDurations, tf.log1p(alignment.durations));
        const error = tf.sum(tf.mul(tf.abs(diff), spoken));
        const squared = tf.sum(tf.mul(tf.square(diff), spoken));
        return tf.add(
          sums,
          tf.stack([
            loss,
            error,
            squared,
            tf.sum(tf.mul(tf.exp(out.logDurations), spoken)),
            tf.sum(alignment.durations),
          ]),
        ) as tf.Tensor1D;
      });
      sums.dispose();
      sums = next;
      n++;
      disposeBatch(tensors);
      tf.dispose([alignment.steps, alignment.durations]);
    }
  } finally {
    await loader.close();
  }
  const [loss, error, squared, expSum, found] = await sums.data();
  sums.dispose();
  if (!n)
    return {
      loss: Number.NaN,
      durationError: Number.NaN,
      durationVariance: 0,
      lengthRatio: Number.NaN,
      diagonal: Number.NaN,
    };
  const variance = squared / Math.max(1, symbols);
  // Steps as synthesis reads them, log-normal means: Σ (exp(p + σ²/2) − 1).
  const predicted = expSum * Math.exp(variance / 2) - symbols;
  return {
    loss: loss / n,
    durationError: error / Math.max(1, symbols),
    durationVariance: variance,
    lengthRatio: predicted / Math.max(1, found),
    diagonal: diagonal / Math.max(1, utterances),
  };
}

/** One utterance of the eval: the tokens to read, and for the validation utterance its real mel (normalised). */
interface EvalJob {
  name: string;
  ids: ArrayLike<number>;
  language: number;
  target?: { mel: Float32Array; frames: number };
}

/**
 * Free-running synthesis of the eval sentences and of one validation utterance (drawn against its
 * real mel), all in one batch, with a validation clip as the voice reference. Per utterance: a WAV
 * (vocoder.checkpoint's vocoder, else Griffin-Lim), a PNG of the mel (and the target's) and a PNG of
 * the alignment it was read with (for the validation utterance above the one the alignment search
 * finds in its real frames).
 * Metric: the validation utterance's duration over its real one.
 */
export async function synthesizeEval(
  model: XttsModel,
  data: PreparedDataset,
  config: XttsConfig,
  dir: string,
  logDurationVariance: number,
  say: (m: string) => void,
  record: (name: string, value: number) => void,
): Promise<string[]> {
  makeFolders(dir);
  const files: string[] = [];
  const refItem = data.validation[0] ?? data.train[0];
  const cache = FeatureCache.openReadonly(data.cachePath);
  const nMels = config.audio.n_mels;
  const { normalised, denormalised } = melScaling(cache, data.stats, nMels);
  const phonemizer = config.text.tokenizer === 'phonemes' ? new Phonemizer(config.text.phonemizer_command) : undefined;
  let vocoder: MelVocoder | undefined;
  try {
    const iterations = config.training.eval_griffin_lim_iterations;
    try {
      vocoder = melVocoder(config.vocoder?.checkpoint, config.audio, iterations);
    } catch (e) {
      // Checked before the first step: gone or replaced since. The eval's WAVs are not worth the run.
      if (!isXttsError(e)) throw e;
      say(`warning: vocoder.checkpoint: ${e.message}; this eval's WAVs are Griffin-Lim's`);
      vocoder = griffinLimVocoder(config.audio, iterations);
    }
    const ref = normalised(refItem.featureKey);
    const refMel = {
      mel: ref.mel.subarray(0, Math.min(ref.frames, config.batching.reference_frames) * nMels),
      // model.speaker_pitch, pitch_contour: the clip's pitch, as the training batches measure it (its raw log-mel).
      logF0: readsPitch(config) ? referenceLogF0([{ mel: ref.recorded, frames: ref.frames }], config.audio) : 0,
      // model.reference_rate: the clip's speaking rate, as synthesis measures a reference's.
      logRate: config.model.reference_rate
        ? referenceLogRate([{ mel: ref.recorded, frames: ref.frames }], config.audio)
        : 0,
    };
    const jobs = await evalSentenceJobs(data, config, phonemizer, say);
    if (data.validation[0]) {
      const v = data.validation[0];
      jobs.push({
        name: `validation-${v.id.replace(/[^\w.-]+/g, '_')}`,
        ids: v.tokens,
        language: v.language,
        target: normalised(v.featureKey),
      });
    }
    if (jobs.length === 0) return files;
    const maxFrames = evalFrameBound(config, data.train, Math.max(...jobs.map((j) => j.ids.length)));
    const results = await model.generateBatch(jobs, refMel, { logDurationVariance, maxFrames });
    const secondsPerFrame = config.audio.hop_length / config.audio.sample_rate_hz;
    const notes: string[] = [];
    for (const [j, job] of jobs.entries()) {
      const g = results[j];
      files.push(...(await writeEvalUtterance(model, job, g, { dir, config, denormalised, vocoder })));
      const seconds = `${(g.frames * secondsPerFrame).toFixed(2)} s`;
      const cut = g.stopReason === 'max_frames' ? ', cut at max_mel_frames' : '';
      if (job.target) {
        const ratio = g.frames / job.target.frames;
        record('eval/duration_ratio', ratio);
        notes.push(
          `${job.name} ${seconds} for ${(job.target.frames * secondsPerFrame).toFixed(2)} ` +
            `s (${ratio.toFixed(2)}${cut})`,
        );
      } else notes.push(`${job.name} ${seconds}${cut}`);
    }
    say(`eval: ${notes.join('; ')} (WAVs by ${describeVocoder(vocoder.used)})`);
  } finally {
    vocoder?.dispose();
    phonemizer?.close();
    cache.close();
  }
  return files;
}

/**
 * The eval sentences as tokens; one in a language the model lacks, or with symbols it has no token
 * for, is skipped with a message that says why.
 */
async function evalSentenceJobs(
  data: PreparedDataset,
  config: XttsConfig,
  phonemizer: Phonemizer | undefined,
  say: (m: string) => void,
): Promise<EvalJob[]> {
  const jobs: EvalJob[] = [];
  for (const [i, s] of config.training.eval_sentences.entries()) {
    const language = s.language ?? config.dataset.language;
    if (!config.text.languages.includes(language)) {
      say(
        `eval sentence ${i + 1} (training.eval_sentences[${i}]) skipped: it is ` +
          `in ${language}, which text.languages does not list`,
      );
      continue;
    }
    let text = cleanText(s.text, config.text, language);
    if (phonemizer) text = await phonemizer.phonemize(text, language);
    const enc = data.tokenizer.encode(text, language);
    if (enc.unmappable.length) {
      say(
        `eval sentence ${i + 1} (training.eval_sentences[${i}]) skipped: it has symbols ` +
          `the model has no token ` +
          (`for: ` +
            enc.unmappable
              .map((c, k) => `${JSON.stringify(c)} at character ${(enc.unmappableAt?.[k] ?? 0) + 1}`)
              .join(', ') +
            `; `) +
          `rephrase it or spell them out`,
      );
      continue;
    }
    jobs.push({
      name: `sentence-${i + 1}`,
      ids: enc.ids,
      language: Math.max(0, config.text.languages.indexOf(language)),
    });
  }
  return jobs;
}

/**
 * One generated utterance's files in `dir`: its WAV (the run's vocoder: vocoder.checkpoint, else
 * Griffin-Lim), a PNG of its mel (beside the target's) and a PNG of the alignment it was read with
 * (beside the one found on the target).
 */
async function writeEvalUtterance(
  model: XttsModel,
  job: EvalJob,
  g: GenerateResult,
  o: { dir: string; config: XttsConfig; denormalised: (mel: Float32Array) => Float32Array; vocoder: MelVocoder },
): Promise<string[]> {
  const { dir, config, denormalised } = o;
  const nMels = config.audio.n_mels;
  const r = config.model.reduction_factor;
  const secondsPerFrame = config.audio.hop_length / config.audio.sample_rate_hz;
  const logMel = denormalised(g.mel);
  const wav = join(dir, `${job.name}.wav`);
  writeFileAtomic(wav, encodeWav(await o.vocoder.vocode(logMel, g.frames), config.audio.sample_rate_hz));
  const png = join(dir, `${job.name}.png`);
  const title = `${job.name} · ${basename(dir)}`;
  const panels = [
    {
      label: job.target ? 'PREDICTED (FREE-RUNNING, PREDICTED DURATIONS)' : 'PREDICTED',
      mel: logMel,
      frames: g.frames,
      nMels,
    },
  ];
  if (job.target) panels.push({ label: 'TARGET', mel: denormalised(job.target.mel), frames: job.target.frames, nMels });
  writeFileAtomic(png, melFigure({ title, panels, secondsPerFrame }));
  const alignments = [
    {
      label: 'GENERATED (PREDICTED DURATIONS)',
      alignment: g.alignment,
      steps: g.alignment.length / g.textTokens,
      tokens: g.textTokens,
    },
  ];
  if (job.target)
    alignments.push({
      label: 'FOUND ON THE TARGET (ALIGNMENT SEARCH)',
      ...(await foundAlignment(model, job.ids, job.language, job.target, nMels, config.training.alignment_prior)),
    });
  const alignPng = join(dir, `${job.name}-alignment.png`);
  writeFileAtomic(
    alignPng,
    alignmentFigure({ title: `${title} · alignment`, panels: alignments, secondsPerStep: secondsPerFrame * r }),
  );
  return [wav, png, alignPng];
}

/**
 * The alignment monotonic alignment search finds in an utterance's real frames, as a one-hot [steps, tokens] picture.
 */
async function foundAlignment(
  model: XttsModel,
  ids: ArrayLike<number>,
  language: number,
  target: { mel: Float32Array; frames: number },
  nMels: number,
  priorSigma: number,
) {
  const r = model.config.reduction_factor;
  const frames = Math.floor(target.frames / r) * r;
  const steps = frames / r;
  const inputs = {
    tokens: tf.tensor2d(Array.from(ids), [1, ids.length], 'int32'),
    textLengths: tf.tensor1d([ids.length], 'int32'),
    languages: tf.tensor1d([language], 'int32'),
    mel: tf.tensor3d(target.mel.subarray(0, frames * nMels), [1, frames, nMels]),
  };
  const found = await model.align(inputs, [ids.length], [frames], priorSigma);
  const path = (await found.steps.data()) as Int32Array;
  tf.dispose([...Object.values(inputs), found.steps, found.durations]);
  const alignment = new Float32Array(steps * ids.length);
  for (let s = 0; s < steps; s++) alignment[s * ids.length + path[s]] = 1;
  return { alignment, steps, tokens: ids.length };
}
