// Fine-tuning a vocoder on what the acoustic model says (HiFi-GAN, Kong et al. 2020, §4.4; Tacotron 2's
// "ground-truth-aligned" mels): a vocoder trained on recordings' mels hears, in use, the acoustic
// model's predictions, smoother and slightly off in places. Trained on those predictions, paired with
// the recorded samples they stand for, it learns to turn them into the recording.
//
// - vocoder.init_from: the generator's weights from a vocoder run (the one trained on recordings); the
//   new run's optimizer and step start afresh.
// - vocoder.finetune_acoustic: each clip's mel replaced, before training, by the acoustic checkpoint's
//   teacher-forced prediction of it: the clip's text encoded as the checkpoint reads text, aligned to
//   the clip's own mel by the model's alignment search, and decoded with the clip as the voice
//   reference, without dropout. The prediction has the recording's frames, so a segment of it still
//   matches the samples under it. A clip whose text the model cannot read (symbols it has no token
//   for, a language it was not trained on) keeps its recorded mel, and is counted.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import type { XttsConfig } from '../config/index.js';
import {
  type MelSettings,
  melSettingsDiffer,
  Phonemizer,
  frameLogF0,
  referenceLogF0,
  Tokenizer,
  type TokenizerJSON,
} from '../data/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { disposeBatch, uploadBatch, XttsModel } from '../model/index.js';
import type { VocoderClip, VocoderGenerator } from '../vocoder/index.js';
import {
  assignArrays,
  CheckpointStore,
  type CheckpointState,
  refuseNonFinite,
  resolveCheckpoint,
} from './checkpoint.js';
import { encodeText } from './encode-text.js';
import { type VocoderCheckpointState, VocoderStateSchema } from './vocoder-state.js';
import { readsPitch } from './voices.js';

/** The generator keys a vocoder's weights depend on. */
const SHAPE_KEYS = ['channels', 'layers', 'kernel', 'ff_mult'] as const;

/** Mel frames a predicted clip is padded to a multiple of (and text tokens to TEXT_STEP): few shapes to compile. */
const FRAME_STEP = 64;
const TEXT_STEP = 16;

function mismatch(code: Uppercase<string>, what: string, differ: string[], suggestion: string): XttsError {
  return new XttsError(code, `${what}: ${differ.join(', ')}`, {
    exitCode: ExitCode.usage,
    suggestions: [suggestion],
  });
}

/** The checkpoint a config key names; a missing one is refused naming the key. */
function checkpointOf(key: string, path: string): string {
  try {
    return resolveCheckpoint(path);
  } catch (e) {
    if (!(e instanceof XttsError)) throw e;
    throw new XttsError(e.code, `${key}: ${e.message}`, { exitCode: e.exitCode, suggestions: e.suggestions });
  }
}

/**
 * vocoder.init_from: the weights of another vocoder run's latest checkpoint (or of the checkpoint
 * named) into `generator`. Refused, naming the keys, when that vocoder's shape or mel settings differ.
 */
export function initVocoderFrom(
  path: string,
  generator: VocoderGenerator,
  config: XttsConfig,
): { checkpoint: string; step: number } {
  const dir = checkpointOf('vocoder.init_from', path);
  const ckpt = new CheckpointStore(dir).load<VocoderCheckpointState>(dir, {
    optimizer: false,
    kind: 'vocoder',
    schema: VocoderStateSchema,
    from: 'vocoder.init_from',
  });
  const theirs = ckpt.state.config;
  const differ = [
    ...SHAPE_KEYS.filter((k) => theirs.vocoder[k] !== config.vocoder[k]).map(
      (k) => `vocoder.${k} ${theirs.vocoder[k]} (init_from) vs ${config.vocoder[k]}`,
    ),
    ...melSettingsDiffer(theirs.audio, config.audio, 'init_from'),
  ];
  if (differ.length)
    throw mismatch(
      'VOCODER_INIT_MISMATCH',
      `vocoder.init_from ${dir} is a vocoder of another shape or other mels`,
      differ,
      'set the vocoder and audio keys to those of the run in vocoder.init_from, or start without it',
    );
  refuseNonFinite(dir, ckpt);
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => generator.setWeights(w));
  return { checkpoint: dir, step: ckpt.state.step };
}

export interface FinetuneMels {
  /** The acoustic checkpoint the mels were predicted by, and its step. */
  checkpoint: string;
  step: number;
  /** Clips whose mel is the prediction, and those that kept their recording's (with why, the first few). */
  predicted: number;
  kept: number;
  keptReasons: { where: string; reason: string }[];
  /** Mean |prediction − recording| over the predicted clips' log-mel values (natural log units). */
  meanAbsError: number;
  ms: number;
}

/**
 * vocoder.finetune_acoustic: every clip's mel replaced in place by the acoustic checkpoint's
 * teacher-forced prediction of it (see the top of this file). Runs on the backend already initialised.
 */
export async function predictClipMels(
  path: string,
  clips: readonly VocoderClip[],
  config: XttsConfig,
  say: (m: string) => void,
): Promise<FinetuneMels> {
  const t0 = performance.now();
  const dir = checkpointOf('vocoder.finetune_acoustic', path);
  const ckpt = new CheckpointStore(dir).load<CheckpointState>(dir, {
    optimizer: false,
    from: 'vocoder.finetune_acoustic',
  });
  const state = ckpt.state;
  const theirs = state.config;
  const differ = melSettingsDiffer(theirs.audio, config.audio, 'acoustic model');
  if (differ.length)
    throw mismatch(
      'VOCODER_FINETUNE_MISMATCH',
      `vocoder.finetune_acoustic ${dir} predicts other mels than this vocoder inverts`,
      differ,
      "set this run's audio keys to the acoustic run's",
    );
  refuseNonFinite(dir, ckpt);
  const model = new XttsModel(theirs.model, state.sizes, {
    seed: theirs.training.seed,
    convImpl: theirs.device.conv_kernels,
  });
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => model.setWeights(w));
  const tokenizer = Tokenizer.fromJSON(state.tokenizer as TokenizerJSON);
  const phonemizer = theirs.text.tokenizer === 'phonemes' ? new Phonemizer(theirs.text.phonemizer_command) : undefined;
  const nMels = config.audio.n_mels;
  const { mean, std } = state.stats;
  const r = theirs.model.reduction_factor;
  const frameStep = Math.ceil(FRAME_STEP / r) * r;
  // Padded shapes stay within what the model takes.
  const maxFrames = Math.floor(theirs.model.max_mel_frames / r) * r;
  const refMax = theirs.batching.reference_frames;
  const keptReasons: FinetuneMels['keptReasons'] = [];
  let kept = 0;
  let predicted = 0;
  let errorSum = 0;
  let errorCount = 0;
  try {
    for (const [n, clip] of clips.entries()) {
      const language = clip.language ?? config.dataset.language;
      const langIndex = theirs.text.languages.indexOf(language);
      let encoded =
        langIndex < 0
          ? { reason: `language ${language} is not one the acoustic model was trained on` }
          : await encodeText(clip.text, language, theirs, tokenizer, phonemizer);
      if (clip.frames > maxFrames)
        encoded = { reason: `${clip.frames} frames: the acoustic model reads at most ${maxFrames}` };
      if ('reason' in encoded) {
        kept++;
        if (keptReasons.length < 5) keptReasons.push({ where: clip.where, reason: encoded.reason });
        continue;
      }
      const prediction = await predictOne(model, clip, encoded.ids, langIndex, {
        ...{ nMels, mean, std, frameStep, refMax, maxFrames, maxTokens: theirs.model.max_text_tokens },
        prior: theirs.training.alignment_prior,
        pitch: readsPitch(theirs) ? theirs.audio : undefined,
        framePitch: theirs.model.pitch_contour,
      });
      for (let i = 0; i < prediction.length; i++) errorSum += Math.abs(prediction[i] - clip.mel[i]);
      errorCount += prediction.length;
      clip.mel = prediction;
      predicted++;
      if ((n + 1) % 200 === 0) say(`fine-tuning mels: ${n + 1} of ${clips.length} clips predicted`);
    }
  } finally {
    phonemizer?.close();
    model.dispose();
  }
  if (predicted === 0 && clips.length > 0)
    throw new XttsError(
      'VOCODER_FINETUNE_NOTHING',
      `the acoustic model ${dir} can read none of the ${clips.length} clips' texts, so nothing would be ` +
        `fine-tuned (${keptReasons[0].where}: ${keptReasons[0].reason})`,
      {
        exitCode: ExitCode.usage,
        suggestions: [
          "fine-tune on a dataset in the acoustic run's languages and alphabet, or without finetune_acoustic",
        ],
      },
    );
  return {
    checkpoint: dir,
    step: state.step,
    predicted,
    kept,
    keptReasons,
    meanAbsError: errorCount ? errorSum / errorCount : Number.NaN,
    ms: performance.now() - t0,
  };
}

/** One line for the log: what the vocoder trains on. */
export function describeFinetune(f: FinetuneMels): string {
  const kept = f.kept
    ? `; ${f.kept} kept their recorded mel (${f.keptReasons[0].where}: ${f.keptReasons[0].reason}` +
      `${f.kept > 1 ? ', …' : ''})`
    : '';
  return (
    `fine-tuning on ${f.checkpoint} (step ${f.step}): ${f.predicted} clips' mels predicted in ` +
    `${(f.ms / 1000).toFixed(1)} s, mean |prediction − recording| ${f.meanAbsError.toFixed(3)}${kept}`
  );
}

/** One clip's teacher-forced prediction, [frames, nMels] log-mel in the clip's own units. */
async function predictOne(
  model: XttsModel,
  clip: VocoderClip,
  ids: Int32Array,
  language: number,
  o: {
    nMels: number;
    mean: number[];
    std: number[];
    frameStep: number;
    refMax: number;
    maxFrames: number;
    maxTokens: number;
    prior: number;
    /** model.speaker_pitch: the mel settings the clip's pitch is measured with (its own clip is its reference). */
    pitch?: MelSettings;
    /** model.pitch_contour: the target's frames' log F0 too (with `pitch`'s settings). */
    framePitch?: boolean;
  },
): Promise<Float32Array> {
  const { nMels, mean, std } = o;
  const frames = Math.min(o.maxFrames, Math.ceil(clip.frames / o.frameStep) * o.frameStep);
  const tokens = Math.min(o.maxTokens, Math.ceil(ids.length / TEXT_STEP) * TEXT_STEP);
  const refFrames = Math.min(clip.frames, o.refMax);
  const mel = new Float32Array(frames * nMels);
  for (let i = 0; i < clip.frames * nMels; i++) mel[i] = (clip.mel[i] - mean[i % nMels]) / std[i % nMels];
  const tokenArray = new Int32Array(tokens);
  tokenArray.set(ids);
  const refMel = new Float32Array(o.refMax * nMels);
  refMel.set(mel.subarray(0, refFrames * nMels));
  const batch = uploadBatch(
    {
      tokens: tokenArray,
      textLengths: Int32Array.of(ids.length),
      languages: Int32Array.of(language),
      mel,
      melLengths: Int32Array.of(clip.frames),
      refMel,
      refLengths: Int32Array.of(refFrames),
      refPitch: Float32Array.of(o.pitch ? referenceLogF0([clip], o.pitch) : 0),
      ...(o.framePitch && o.pitch
        ? { melPitch: frameLogF0(clip.mel, clip.frames, o.pitch, new Float32Array(frames)) }
        : {}),
    },
    { batchSize: 1, tokens, frames, refFrames: o.refMax, nMels, reductionFactor: model.config.reduction_factor },
  );
  try {
    const alignment = await model.align(batch, [ids.length], [clip.frames], o.prior);
    const out = tf.tidy(() => {
      const f = model.forward({ ...batch, alignment }, { training: false });
      return f.melPost ?? f.melPre;
    });
    tf.dispose([alignment.steps, alignment.durations]);
    const values = (await out.data()) as Float32Array;
    out.dispose();
    const prediction = new Float32Array(clip.frames * nMels);
    for (let i = 0; i < prediction.length; i++) prediction[i] = values[i] * std[i % nMels] + mean[i % nMels];
    return prediction;
  } finally {
    disposeBatch(batch);
  }
}
