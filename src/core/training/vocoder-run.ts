// What turns a log-mel into a waveform for `xtts synthesize` and a run's eval audio: a trained neural
// vocoder (a `task: vocoder` run, named by --vocoder or vocoder.checkpoint) or, without one,
// Griffin-Lim. Either way the caller gets one interface and a description of which made the WAV.
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import type { AudioConfig } from '../config/index.js';
import { griffinLim, melSettingsDiffer } from '../data/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { VocoderGenerator } from '../vocoder/index.js';
import { assignArrays, CheckpointStore, refuseNonFinite, resolveCheckpoint } from './checkpoint.js';
import { type VocoderCheckpointState, VocoderStateSchema } from './vocoder-state.js';
import { vocodeClip } from './vocoder-trainer.js';

/** Which vocoder made a WAV: in synthesize's JSON, and in a run's eval message and run.sqlite. */
export type VocoderUsed =
  | { kind: 'griffin-lim'; iterations: number }
  | { kind: 'neural'; checkpoint: string; step: number; parameters: number };

export interface MelVocoder {
  used: VocoderUsed;
  /** The feature settings of the mels it takes. */
  audio: AudioConfig;
  /** log-mel [frames, n_mels] (the features' units) -> samples at audio.sample_rate_hz. */
  vocode(logMel: Float32Array, frames: number): Promise<Float32Array>;
  /** Several mels at once (the neural vocoder runs them as one padded batch): frames·hop samples each. */
  vocodeBatch(mels: readonly { mel: Float32Array; frames: number }[]): Promise<Float32Array[]>;
  dispose(): void;
}

export function griffinLimVocoder(audio: AudioConfig, iterations: number): MelVocoder {
  return {
    used: { kind: 'griffin-lim', iterations },
    audio,
    vocode: async (logMel, frames) => griffinLim(logMel, frames, audio, { iterations }),
    vocodeBatch: async (mels) => mels.map((m) => griffinLim(m.mel, m.frames, audio, { iterations })),
    dispose: () => undefined,
  };
}

/**
 * The neural vocoder of a vocoder run folder (its latest checkpoint) or checkpoint, for mels made with
 * `audio` (default: its own settings); refused, naming the keys, when its features differ. Call after
 * the backend is initialised.
 */
export function loadNeuralVocoder(path: string, audio?: AudioConfig): MelVocoder {
  const dir = resolveCheckpoint(path);
  const ckpt = new CheckpointStore(dir).load<VocoderCheckpointState>(dir, {
    optimizer: false,
    kind: 'vocoder',
    schema: VocoderStateSchema,
  });
  const theirs = ckpt.state.config.audio;
  const differ = audio ? melSettingsDiffer(theirs, audio, 'vocoder') : [];
  if (differ.length > 0)
    throw new XttsError(
      'VOCODER_AUDIO_MISMATCH',
      `the vocoder ${dir} was trained on other mels: ${differ.join(', ')}`,
      {
        exitCode: ExitCode.usage,
        suggestions: ['train a vocoder with the audio section of the acoustic run (`extends` it), or omit --vocoder'],
      },
    );
  refuseNonFinite(dir, ckpt);
  const generator = new VocoderGenerator(ckpt.state.config.vocoder, theirs, 0);
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => generator.setWeights(w));
  return {
    used: { kind: 'neural', checkpoint: dir, step: ckpt.state.step, parameters: generator.parameterCount() },
    audio: theirs,
    vocode: (logMel, frames) => vocodeClip(generator, logMel, frames),
    vocodeBatch: (mels) => vocodePadded(generator, mels),
    dispose: () => generator.dispose(),
  };
}

/**
 * Refuses, before any training, a `key` (vocoder.checkpoint) that names no vocoder for mels of `audio`: what would
 * otherwise stop the run at its first eval, after the steps since its last checkpoint. Errors name the key.
 */
export function checkVocoderCheckpoint(path: string, audio: AudioConfig, key: string): void {
  try {
    const dir = resolveCheckpoint(path);
    const { state } = new CheckpointStore(dir).load<VocoderCheckpointState>(dir, {
      optimizer: false,
      kind: 'vocoder',
      schema: VocoderStateSchema,
      from: key,
    });
    const differ = melSettingsDiffer(state.config.audio, audio, 'vocoder');
    if (differ.length)
      throw new XttsError(
        'VOCODER_AUDIO_MISMATCH',
        `the vocoder ${dir} was trained on other mels: ${differ.join(', ')}`,
        {
          exitCode: ExitCode.usage,
          suggestions: ['train a vocoder with the audio section of this config (`extends` it)'],
        },
      );
  } catch (e) {
    if (!(e instanceof XttsError) || e.message.startsWith(`${key}: `)) throw e;
    throw new XttsError(e.code, `${key}: ${e.message}`, {
      exitCode: e.exitCode,
      position: e.position,
      suggestions: [...e.suggestions, `or remove ${key}: the eval WAVs are then Griffin-Lim's`],
    });
  }
}

/**
 * Mels of different lengths as one batch, each padded to the longest with the log floor (silence in the
 * features' units); each output cut to its own frames·hop samples.
 */
async function vocodePadded(
  generator: VocoderGenerator,
  mels: readonly { mel: Float32Array; frames: number }[],
): Promise<Float32Array[]> {
  if (mels.length === 0) return [];
  const a = generator.audio;
  const longest = Math.max(...mels.map((m) => m.frames));
  const silence = Math.log(a.log_floor) / (a.log_base === '10' ? Math.LN10 : 1);
  const padded = new Float32Array(mels.length * longest * a.n_mels).fill(silence);
  mels.forEach((m, i) => {
    padded.set(m.mel.subarray(0, m.frames * a.n_mels), i * longest * a.n_mels);
  });
  const out = await vocodeClip(generator, padded, longest, undefined, mels.length);
  const span = longest * a.hop_length;
  return mels.map((m, i) => out.slice(i * span, i * span + m.frames * a.hop_length));
}

/** The neural vocoder at `path` when one is named, else Griffin-Lim with `iterations`. */
export function melVocoder(path: string | null | undefined, audio: AudioConfig, iterations: number): MelVocoder {
  return path ? loadNeuralVocoder(path, audio) : griffinLimVocoder(audio, iterations);
}

/** One line for logs: what made the WAVs. */
export function describeVocoder(used: VocoderUsed): string {
  return used.kind === 'neural'
    ? `neural vocoder ${used.checkpoint} (step ${used.step})`
    : `Griffin-Lim (${used.iterations} iteration${used.iterations === 1 ? '' : 's'})`;
}
