// What turns a log-mel into a waveform for `xtts synthesize` and a run's eval audio: a trained neural
// vocoder (a `task: vocoder` run, named by --vocoder or vocoder.checkpoint) or, without one,
// Griffin-Lim. Either way the caller gets one interface and a description of which made the WAV.
import { join } from 'node:path';
import type { AudioConfig } from '../config/index.js';
import { griffinLim } from '../data/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { VocoderGenerator } from '../vocoder/index.js';
import { assignArrays, CheckpointStore, refuseNonFinite, resolveCheckpoint } from './checkpoint.js';
import { type VocoderCheckpointState, VocoderStateSchema, vocodeClip } from './vocoder-trainer.js';

/** Which vocoder made a WAV: in synthesize's JSON, and in a run's eval message and run.sqlite. */
export type VocoderUsed =
  | { kind: 'griffin-lim'; iterations: number }
  | { kind: 'neural'; checkpoint: string; step: number; parameters: number };

export interface MelVocoder {
  used: VocoderUsed;
  /** log-mel [frames, n_mels] (the features' units) -> samples at audio.sample_rate_hz. */
  vocode(logMel: Float32Array, frames: number): Float32Array;
  dispose(): void;
}

/** The audio settings a vocoder must share with the mels it is given. */
const MEL_KEYS = [
  'sample_rate_hz',
  'n_fft',
  'hop_length',
  'win_length',
  'window',
  'n_mels',
  'fmin_hz',
  'fmax_hz',
  'mel_scale',
  'mel_norm',
  'log_base',
  'log_floor',
] as const;

export function griffinLimVocoder(audio: AudioConfig, iterations: number): MelVocoder {
  return {
    used: { kind: 'griffin-lim', iterations },
    vocode: (logMel, frames) => griffinLim(logMel, frames, audio, { iterations }),
    dispose: () => undefined,
  };
}

/**
 * The neural vocoder of a vocoder run folder (its latest checkpoint) or checkpoint, for mels made with
 * `audio`; refused, naming the keys, when its features differ. Call after the backend is initialised.
 */
export function loadNeuralVocoder(path: string, audio: AudioConfig): MelVocoder {
  const dir = resolveCheckpoint(path);
  const ckpt = new CheckpointStore(dir).load<VocoderCheckpointState>(dir, {
    optimizer: false,
    kind: 'vocoder',
    schema: VocoderStateSchema,
  });
  const theirs = ckpt.state.config.audio;
  const differ = MEL_KEYS.filter((k) => theirs[k] !== audio[k]);
  if (differ.length > 0)
    throw new XttsError(
      'VOCODER_AUDIO_MISMATCH',
      `the vocoder ${dir} was trained on other mels: ` +
        differ.map((k) => `audio.${k} ${theirs[k]} (vocoder) vs ${audio[k]}`).join(', '),
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
    vocode: (logMel, frames) => vocodeClip(generator, logMel, frames),
    dispose: () => generator.dispose(),
  };
}

/** The neural vocoder at `path` when one is named, else Griffin-Lim with `iterations`. */
export function melVocoder(path: string | null | undefined, audio: AudioConfig, iterations: number): MelVocoder {
  return path ? loadNeuralVocoder(path, audio) : griffinLimVocoder(audio, iterations);
}

/** One line for logs: what made the WAVs. */
export function describeVocoder(used: VocoderUsed): string {
  return used.kind === 'neural'
    ? `neural vocoder ${used.checkpoint} (step ${used.step})`
    : `Griffin-Lim (${used.iterations} iterations)`;
}
