// `xtts voices`: what a checkpoint can speak (its trained voices and languages, and how each
// language's text is read), and one voice saved to a file (a trained speaker's, or one computed from
// reference clips with the checkpoint's weights) for `synthesize --voice`.
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend } from '../backend/index.js';
import type { Backend } from '../config/index.js';
import { cleanerClaims, espeakVoice } from '../data/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { voiceLatents } from '../model/index.js';
import { checkOutputFolder, refuseUnsafeOutputs, requireSafetensorsName, writeOutputFile } from '../util/index.js';
import { CheckpointStore, checkpointInputs, resolveCheckpoint, type CheckpointState } from './checkpoint.js';
import { openAcousticModel } from './synthesize.js';
import {
  encodeVoiceFile,
  hzOf,
  referenceMels,
  speakerVoice,
  trainedVoices,
  VOICE_CLIPS,
  windowsProsody,
} from './voices.js';

export interface VoicesOptions {
  checkpoint: string;
  /** Save this trained speaker's voice to `out`. */
  speaker?: string;
  /** Save the voice of these clips (averaged) to `out`. */
  references?: string[];
  out?: string;
  overwrite?: boolean;
  backend?: Backend;
}

export interface VoicesResult {
  checkpoint: string;
  step: number;
  runId?: string;
  /**
   * Every speaker of the training data; `voice`: whether the checkpoint holds their voice (--speaker); `pitchHz`: the
   * voice's median F0 as the model reads it, where the model reads pitch (model.speaker_pitch, pitch_contour);
   * `ratePerS`: its speaking rate as the model reads it (spectral-change peaks a second), with model.reference_rate.
   */
  speakers: { name: string; voice: boolean; pitchHz?: number; ratePerS?: number }[];
  /** Clips of each speaker their voice was computed from (at most). */
  clipsPerVoice: number;
  /**
   * The languages the model was trained on: its cleaner, whether that cleaner reads the language's numbers and
   * abbreviations, and the espeak-ng voice its phonemes come from (phoneme models).
   */
  languages: { code: string; cleaner: string; normalised: boolean; espeakVoice?: string }[];
  /** The voice file written, with what it holds. */
  saved?: { file: string; source: string };
  /** What the user should know of the reference clips (too short to carry a voice). */
  warnings?: string[];
}

export async function voices(o: VoicesOptions): Promise<VoicesResult> {
  const want = o.speaker !== undefined || (o.references?.length ?? 0) > 0;
  if (want !== (o.out !== undefined))
    throw new XttsError(
      'USAGE',
      o.out ? '--out needs the voice to save: --speaker NAME or --reference CLIP' : 'name the voice file: --out FILE',
      { exitCode: ExitCode.usage, suggestions: ['without --speaker, --reference and --out, it lists the voices'] },
    );
  if (o.speaker !== undefined && o.references?.length)
    throw new XttsError('USAGE', '--speaker and --reference each name a voice: pass one of them', {
      exitCode: ExitCode.usage,
    });
  if (o.out) {
    refuseUnsafeOutputs(
      [{ file: o.out, what: 'the voice file (--out)' }],
      [
        ...(o.references ?? []).map((file) => ({ file, what: 'the reference clip (--reference)' })),
        ...checkpointInputs(o.checkpoint, 'a file of the checkpoint (--checkpoint)'),
      ],
    );
    checkOutputFolder(o.out, 'the voice file', { overwrite: o.overwrite === true });
    requireSafetensorsName(o.out, 'a voice file');
  }
  const dir = resolveCheckpoint(o.checkpoint);
  const ckpt = new CheckpointStore(dir).load<CheckpointState>(dir, { optimizer: false });
  const { config, step, runId } = ckpt.state;
  const trained = trainedVoices(ckpt.voices);
  const result: VoicesResult = {
    checkpoint: dir,
    step,
    ...(runId ? { runId } : {}),
    speakers: ckpt.state.speakers.map((name) => {
      const { logF0, logRate } = trained.get(name) ?? {};
      return {
        name,
        voice: trained.has(name),
        ...(logF0 ? { pitchHz: hzOf(logF0) } : {}),
        ...(logRate ? { ratePerS: Math.round(Math.exp(logRate) * 100) / 100 } : {}),
      };
    }),
    clipsPerVoice: VOICE_CLIPS,
    languages: ckpt.state.languages.map((code) => ({
      code,
      cleaner: config.text.cleaners,
      normalised: config.text.cleaners !== 'basic' && cleanerClaims(config.text.cleaners, code),
      ...(config.text.tokenizer === 'phonemes' ? { espeakVoice: espeakVoice(code) } : {}),
    })),
  };
  if (!o.out) return result;
  const info = { checkpoint: dir, runId, step, latents: config.model.cond_latents, dModel: config.model.d_model };
  let latents: Float32Array;
  let logF0: number | undefined;
  let logRate: number | undefined;
  let source: string;
  const warnings: string[] = [];
  if (o.speaker !== undefined) {
    ({ latents, logF0, logRate } = speakerVoice(dir, trained, o.speaker));
    source = `speaker ${o.speaker}`;
  } else {
    const references = o.references!;
    const { mels, warnings: short } = await referenceMels(references, config, ckpt.state.stats);
    warnings.push(...short);
    const { model } = await openAcousticModel(dir, ckpt, o.backend);
    try {
      latents = await voiceLatents(model, mels);
      ({ logF0, logRate } = windowsProsody(mels));
    } finally {
      model.dispose();
      disposeBackend(tf as never);
    }
    source = `clips ${references.join(', ')}`;
  }
  const prosody = { ...(logF0 ? { logF0 } : {}), ...(logRate ? { logRate } : {}) };
  writeOutputFile(o.out, encodeVoiceFile(latents, { ...info, source, ...prosody }), 'the voice file', {
    overwrite: o.overwrite === true,
  });
  return { ...result, saved: { file: o.out, source }, warnings };
}
