// Text (+ a reference clip for the voice) -> WAV with a trained checkpoint: the checkpoint's own
// tokenizer, cleaner settings and feature statistics, free-running decoding, Griffin-Lim.
import { readFileSync, writeFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, type BackendChoice } from '../backend/index.js';
import type { Backend, XttsConfig } from '../config/schema.js';
import { griffinLim } from '../data/audio/griffin-lim.js';
import { processClip } from '../data/audio/index.js';
import { encodeWav } from '../data/audio/wav.js';
import { cleanText } from '../data/text/cleaners.js';
import { Phonemizer } from '../data/text/phonemizer.js';
import { Tokenizer, type TokenizerJSON } from '../data/text/tokenizer.js';
import { ExitCode, XttsError } from '../errors.js';
import { XttsModel } from '../model/model.js';
import { CheckpointStore, resolveCheckpoint } from './checkpoint.js';

export interface SynthesizeOptions {
  checkpoint: string;
  text: string;
  language?: string;
  /** A WAV of the voice to speak in; default: the model's learnt average voice (a silent reference). */
  reference?: string;
  out: string;
  backend?: Backend;
  maxSeconds?: number;
  griffinLimIterations?: number;
}

export interface SynthesizeResult {
  out: string;
  checkpoint: string;
  step: number;
  backend: BackendChoice['backend'];
  language: string;
  cleanedText: string;
  frames: number;
  durationS: number;
  stopped: boolean;
  synthesisMs: number;
}

interface State {
  step: number;
  tokenizer: TokenizerJSON;
  stats: { mean: number[]; std: number[] };
  sizes: { vocabSize: number; nMels: number; numLanguages: number };
  config: XttsConfig;
}

export async function synthesize(o: SynthesizeOptions): Promise<SynthesizeResult> {
  const dir = resolveCheckpoint(o.checkpoint);
  const ckpt = new CheckpointStore(dir).load<State>(dir);
  const { config, stats, sizes } = ckpt.state;
  const tokenizer = Tokenizer.fromJSON(ckpt.state.tokenizer);
  const language = o.language ?? config.dataset.language;
  const langIndex = config.text.languages.indexOf(language);
  if (langIndex < 0) throw new XttsError('SYNTH_LANGUAGE', `--language ${language} is not one the model was trained on: ${config.text.languages.join(', ')}`, { exitCode: ExitCode.usage });
  let text = cleanText(o.text, config.text);
  if (config.text.tokenizer === 'phonemes') {
    const p = new Phonemizer(config.text.phonemizer_command);
    try {
      text = await p.phonemize(text, language);
    } finally {
      p.close();
    }
  }
  const enc = tokenizer.encode(text, language);
  if (enc.unmappable.length) {
    throw new XttsError('SYNTH_UNMAPPABLE', `the text has characters the model never saw in training: ${enc.unmappable.map((c) => JSON.stringify(c)).join(' ')}`, {
      exitCode: ExitCode.usage,
      suggestions: ['rephrase without them (numbers and abbreviations are expanded by the english cleaner)'],
    });
  }
  if (enc.ids.length > config.model.max_text_tokens) throw new XttsError('SYNTH_TOO_LONG', `the text is ${enc.ids.length} tokens; the model takes at most ${config.model.max_text_tokens}`, { exitCode: ExitCode.usage, suggestions: ['synthesise it a sentence at a time'] });
  const nMels = config.audio.n_mels;
  let refMel: Float32Array;
  if (o.reference) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(o.reference);
    } catch (e) {
      throw new XttsError('SYNTH_REFERENCE', `cannot read --reference ${o.reference}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, { exitCode: ExitCode.usage });
    }
    const clip = processClip(bytes, config.audio, o.reference);
    const frames = Math.min(clip.frames, config.batching.reference_frames);
    refMel = new Float32Array(frames * nMels);
    for (let i = 0; i < refMel.length; i++) refMel[i] = (clip.mel[i] - stats.mean[i % nMels]) / stats.std[i % nMels];
  } else {
    // The mean voice: a reference of zeros in normalised units is the dataset's average spectrum.
    refMel = new Float32Array(config.batching.reference_frames * nMels);
  }
  const { choice } = await initBackend(o.backend ?? 'auto', { device: config.device.model_device });
  const model = new XttsModel(config.model, sizes, { seed: config.training.seed });
  const weights = new Map(ckpt.weights.map((a) => [a.name, tf.tensor(a.data, a.shape, a.dtype)]));
  model.setWeights(weights);
  tf.dispose([...weights.values()]);
  const t0 = performance.now();
  const maxFrames = Math.min(config.model.max_mel_frames, Math.ceil(((o.maxSeconds ?? config.limits.max_audio_s) * config.audio.sample_rate_hz) / config.audio.hop_length));
  const g = await model.generate(enc.ids, langIndex, refMel, { maxFrames });
  const logMel = g.mel.map((v, i) => v * stats.std[i % nMels] + stats.mean[i % nMels]);
  const samples = griffinLim(logMel, g.frames, config.audio, { iterations: o.griffinLimIterations ?? 32 });
  writeFileSync(o.out, encodeWav(samples, config.audio.sample_rate_hz));
  const synthesisMs = performance.now() - t0;
  model.dispose();
  disposeBackend(tf as never);
  return { out: o.out, checkpoint: dir, step: ckpt.state.step, backend: choice.backend, language, cleanedText: text, frames: g.frames, durationS: samples.length / config.audio.sample_rate_hz, stopped: g.stopped, synthesisMs };
}
