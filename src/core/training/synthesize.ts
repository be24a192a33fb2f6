// Text -> WAVs with a trained checkpoint, in a voice (voices.ts: reference clips, a trained speaker, a
// voice file, or the mean of the trained voices): the checkpoint's own tokenizer, cleaner settings and
// feature statistics, free-running decoding of every text in batches (monotonic attention, model.ts),
// Griffin-Lim or a neural vocoder.
import * as tf from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, type BackendChoice } from '../backend/index.js';
import type { Backend, XttsConfig } from '../config/index.js';
import { encodeWav, languageTag } from '../data/index.js';
import { Phonemizer } from '../data/index.js';
import { Tokenizer, type TokenizerJSON } from '../data/index.js';
import { isAbsolute, join } from 'node:path';
import { ExitCode, isXttsError, XttsError } from '../errors.js';
import {
  FIRST_SYMBOL,
  framesPerSymbol,
  type GenerateItem,
  type ReferenceMel,
  type Voice,
  voiceLatents,
  XttsModel,
} from '../model/index.js';
import { checkOutputFolder, type NamedFile, writeOutputFile, refuseUnsafeOutputs } from '../util/index.js';
import { frameBound } from './evaluation.js';
import { encodeText } from './encode-text.js';
import { encodeInPieces, joinPieces, PIECE_GAP_S, round3, type SymbolTiming, symbolTimings } from './text-pieces.js';
import { type MelVocoder, melVocoder, type VocoderUsed } from './vocoder-run.js';
import {
  assignArrays,
  checkpointInputs,
  type CheckpointState,
  CheckpointStore,
  type NamedArray,
  refuseNonFinite,
  resolveCheckpoint,
} from './checkpoint.js';
import { parsePitch, type PitchUsed, withPitch } from './pitch-request.js';
import { readVoiceFile, referenceMels, speakerVoice, trainedVoices, windowsProsody } from './voices.js';

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
  /**
   * Clips of the voice to speak in (one voice: their latents averaged). Default, with none of
   * references, speaker and voiceFile: the mean of the checkpoint's trained voices.
   */
  references?: string[];
  /** A trained speaker, by the name the dataset gave them (`xtts voices` lists them). */
  speaker?: string;
  /** A voice written by `xtts voices --out`. */
  voiceFile?: string;
  backend?: Backend;
  maxSeconds?: number;
  griffinLimIterations?: number;
  /**
   * A vocoder run folder (or checkpoint) to make the WAVs with, or 'griffin-lim'; default: the checkpoint config's
   * vocoder.checkpoint, else Griffin-Lim.
   */
  vocoder?: string;
  /** Speak the voice at this median F0 instead of its own: "180" (Hz) or "+3st" (pitch-request.ts; --pitch). */
  pitch?: string;
  /** Texts decoded together (default 16): one batch runs the same kernels as one text. */
  batchSize?: number;
  /** Also write the result as JSON here (beside a folder of WAVs). */
  summaryFile?: string;
  /** Replace WAVs (and the summary) that exist already; without it an existing file is refused before any work. */
  overwrite?: boolean;
  /** Set `stop` (a signal's handler) to end after the utterance being written: the summary then tells those spoken. */
  control?: { stop: boolean };
  /** Each utterance once its WAV is written. */
  onUtterance?: (u: SynthesizedUtterance) => void;
}

export interface SynthesizedUtterance {
  where?: string;
  text: string;
  /** The text as the model read it: cleaned (and phonemized). */
  cleanedText: string;
  out: string;
  frames: number;
  durationS: number;
  /**
   * The pieces of whole sentences it was spoken in, where it was longer than the model reads at once
   * (model.max_text_tokens): each spoken in turn, joined with 0.2 s between. Absent: in one.
   */
  pieces?: number;
  /** 'end_of_text' when the whole text was read at its predicted durations; 'max_frames' when the bound cut it. */
  stopReason: 'end_of_text' | 'max_frames';
  /**
   * What bounds the output where it was cut: --max-seconds, limits.max_audio_s (the default for --max-seconds) or the
   * model's longest output (model.max_mel_frames), with that bound in seconds.
   */
  cutBy?: { bound: 'max_seconds' | 'max_audio_s' | 'max_mel_frames'; seconds: number };
  /** What made the WAV from the mel. */
  vocoder: VocoderUsed['kind'];
  /**
   * Each symbol the model read (a character, or an IPA symbol of the phonemized text) with where in the WAV its
   * predicted duration put it, in seconds: its first frame and its frames' span. Symbols a cut left unspoken are not
   * listed.
   */
  symbols: SymbolTiming[];
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
  /** What made the WAVs from the mels: Griffin-Lim, or which neural vocoder checkpoint. */
  vocoder: VocoderUsed;
  /** Whose voice it spoke in. */
  voice: VoiceUsed;
  /** The median F0 it spoke the voice at, where the model reads pitch and the voice's is known (or --pitch set it). */
  pitch?: PitchUsed;
  synthesisMs: number;
  /** Texts left unspoken where `control.stop` or a failed write ended the synthesis early (absent: none were). */
  unspoken?: number;
  /**
   * The WAV that could not be written (a full disk, a file too large for the file system) where that ended the
   * synthesis after other WAVs were: the error, and the WAV. Those written before it stay, and the summary lists them.
   */
  writeFailed?: { out: string; code: Uppercase<string>; exitCode: ExitCode; message: string; suggestions: string[] };
  /** Why the summary file (--out-dir's synthesis.json) could not be written, where it could not. */
  summaryFailed?: string;
}

/** Whose voice: clips, a trained speaker, a voice file, or the mean of the trained voices (`speakers` of them). */
export type VoiceUsed =
  | { kind: 'reference'; clips: string[] }
  | { kind: 'speaker'; speaker: string }
  | { kind: 'file'; file: string; source: string }
  | { kind: 'average'; speakers: number };

/** The files the texts were read from (a text's `where` is FILE:LINE). */
function textFiles(texts: readonly SynthesisText[]): NamedFile[] {
  const files = new Set(
    texts.flatMap((t) => (t.where?.includes(':') ? [t.where.slice(0, t.where.lastIndexOf(':'))] : [])),
  );
  return [...files].map((file) => ({ file, what: 'the texts (--texts)' }));
}

/**
 * A text ready to speak: its tokens and language index, where it came from and what the model reads; `part`: which
 * piece of a text spoken in pieces (text-pieces.ts) it is.
 */
type SynthesisJob = GenerateItem & {
  input: SynthesisText;
  cleanedText: string;
  /** What each of `ids`' symbols stands for (ids less <bos>, [lang] and <eos>). */
  symbols: string[];
  part?: { index: number; of: number };
};

export async function synthesize(o: SynthesizeOptions): Promise<SynthesizeResult> {
  const overwrite = { overwrite: o.overwrite === true };
  const pitch = o.pitch === undefined ? undefined : parsePitch(o.pitch);
  refuseUnsafeOutputs(
    [
      ...o.texts.map((t) => ({ file: t.out, what: `the WAV${t.where ? ` of ${t.where}` : ''}` })),
      ...(o.summaryFile ? [{ file: o.summaryFile, what: 'the synthesis summary' }] : []),
    ],
    [
      ...(o.references ?? []).map((file) => ({ file, what: 'the reference clip (--reference)' })),
      ...(o.voiceFile ? [{ file: o.voiceFile, what: 'the voice (--voice)' }] : []),
      ...textFiles(o.texts),
      ...checkpointInputs(o.checkpoint, 'a file of the checkpoint (--checkpoint)'),
      ...(o.vocoder && o.vocoder !== GRIFFIN_LIM
        ? checkpointInputs(o.vocoder, 'a file of the vocoder (--vocoder)')
        : []),
    ],
  );
  for (const t of o.texts) checkOutputFolder(t.out, 'the WAV', overwrite);
  if (o.summaryFile) checkOutputFolder(o.summaryFile, 'the synthesis summary', overwrite);
  const dir = resolveCheckpoint(o.checkpoint);
  const ckpt = new CheckpointStore(dir).load<CheckpointState>(dir, { optimizer: false });
  const { config } = ckpt.state;
  refuseSpeechless(dir, config);
  const tokenizer = Tokenizer.fromJSON(ckpt.state.tokenizer as TokenizerJSON);
  const { language, readAs, langIndex } = synthesisLanguage(o.language, config);
  if (o.texts.length === 0)
    throw new XttsError('SYNTH_NO_TEXT', 'there is no text to speak', {
      exitCode: ExitCode.usage,
      suggestions: ['pass --text "…" or --texts FILE with one sentence per line'],
    });
  const { jobs, skipped, warnings } = await synthesisJobs(o.texts, config, tokenizer, language, {
    langIndex,
    readAs,
    unseen: new Set(ckpt.state.unseenSymbols ?? []),
  });
  const found = await voiceSource(o, dir, ckpt);
  warnings.push(...found.warnings);
  const source = withPitch(found, pitch, config);
  const { model, choice } = await openAcousticModel(dir, ckpt, o.backend);
  let vocoder: MelVocoder | undefined;
  const t0 = performance.now();
  let utterances: SynthesizedUtterance[];
  let writeFailed: SynthesizeResult['writeFailed'];
  try {
    vocoder = synthesisVocoder(o, config, dir);
    // One reference window conditions as a mel; several (a long clip, or several clips) are one voice, their
    // latents averaged.
    const voice =
      source.mels.length > 1
        ? { latents: await voiceLatents(model, source.mels), ...windowsProsody(source.mels) }
        : source.voice;
    ({ utterances, writeFailed } = await speak(model, jobs, voice, ckpt.state, o, { vocoder, overwrite }));
  } finally {
    vocoder?.dispose();
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
    vocoder: vocoder.used,
    voice: found.used,
    ...(source.pitch ? { pitch: source.pitch } : {}),
    synthesisMs: performance.now() - t0,
    ...(utterances.length < jobs.length ? { unspoken: jobs.length - utterances.length } : {}),
    ...(writeFailed ? { writeFailed } : {}),
  };
  if (o.summaryFile) {
    try {
      writeOutputFile(o.summaryFile, `${JSON.stringify(result, null, 1)}\n`, 'the synthesis summary', overwrite);
    } catch (e) {
      // After a failed WAV the disk may take no summary either: the result still says what was written.
      if (!writeFailed || !isXttsError(e)) throw e;
      result.summaryFailed = e.message;
    }
  }
  return result;
}

/** A checkpoint's model on the chosen backend, its weights assigned; a diverged one is refused first. */
export async function openAcousticModel(
  dir: string,
  ckpt: { state: CheckpointState; weights: NamedArray[]; optimizer: NamedArray[] },
  backend: Backend | undefined,
): Promise<{ model: XttsModel; choice: BackendChoice }> {
  const { config, sizes } = ckpt.state;
  // A diverged run's weights speak nothing: 8 s of silence would look like a result.
  refuseNonFinite(dir, ckpt);
  const { choice } = await initBackend(backend ?? 'auto', {
    device: config.device.model_device,
    matmul: config.device.matmul,
  });
  const model = new XttsModel(config.model, sizes, {
    seed: config.training.seed,
    convImpl: config.device.conv_kernels,
  });
  assignArrays(ckpt.weights, join(dir, 'weights.safetensors'), (w) => model.setWeights(w));
  return { model, choice };
}

/** A checkpoint trained without text alignment or durations has a decoder that does not follow the text. */
function refuseSpeechless(dir: string, config: XttsConfig): void {
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
}

/** `--vocoder griffin-lim`: Griffin-Lim's WAVs, whatever vocoder the model's config names. */
const GRIFFIN_LIM = 'griffin-lim';

/**
 * What makes a synthesis's WAVs: --vocoder (Griffin-Lim for GRIFFIN_LIM), else the model's vocoder.checkpoint, else
 * Griffin-Lim. A vocoder.checkpoint that is gone (moved, or a relative path recorded by a run started elsewhere) is
 * named as the model's record, with --vocoder offered.
 */
function synthesisVocoder(o: SynthesizeOptions, config: XttsConfig, dir: string): MelVocoder {
  const iterations = o.griffinLimIterations ?? 32;
  if (o.vocoder === GRIFFIN_LIM) return melVocoder(undefined, config.audio, iterations);
  const recorded = config.vocoder?.checkpoint;
  if (o.vocoder !== undefined || !recorded) return melVocoder(o.vocoder, config.audio, iterations);
  try {
    return melVocoder(recorded, config.audio, iterations);
  } catch (e) {
    if (!isXttsError(e) || e.code !== 'CHECKPOINT_NOT_FOUND') throw e;
    const relative = !isAbsolute(recorded) ? ` (relative to the folder synthesize runs in, ${process.cwd()})` : '';
    throw new XttsError(
      'CHECKPOINT_NOT_FOUND',
      `the model's vocoder, vocoder.checkpoint ${JSON.stringify(recorded)} in ${join(dir, 'state.json')}` +
        `${relative}: ${e.message}`,
      {
        exitCode: ExitCode.usage,
        suggestions: [
          "pass --vocoder with the vocoder's run folder where it lies now, or --vocoder griffin-lim for " +
            "Griffin-Lim's WAVs",
        ],
      },
    );
  }
}

/**
 * The trained language a synthesis speaks (`language`, its index) and the tag its text is read as (`readAs`):
 * --language, else dataset.language, else a one-language model's language. Codes match in any case (--language EN
 * is en), as the cleaners claim them; a tag the model was not trained on speaks the trained language of its
 * primary subtag where there is exactly one (--language en-GB on an en model: en's tokens and phonemes, its text
 * read as en-GB writes it, days before months in "12/05/2024").
 */
function synthesisLanguage(
  asked: string | undefined,
  config: XttsConfig,
): { language: string; readAs: string; langIndex: number } {
  const trained = config.text.languages;
  const exact = (code: string) => trained.findIndex((l) => l.toLowerCase() === code.toLowerCase());
  const byPrimary = (code: string) => {
    const found = trained.flatMap((l, i) => (languageTag(l).primary === languageTag(code).primary ? [i] : []));
    return found.length === 1 ? found[0] : -1;
  };
  const find = (code: string) => (exact(code) >= 0 ? exact(code) : byPrimary(code));
  // Without --language: dataset.language, or the model's one language where that is not it (a German-only dataset
  // read with language_source: metadata keeps dataset.language's default, en).
  const fallback = find(config.dataset.language) < 0 && trained.length === 1 ? trained[0] : config.dataset.language;
  const code = asked ?? fallback;
  const langIndex = find(code);
  if (langIndex >= 0) return { language: trained[langIndex], readAs: code, langIndex };
  const list = trained.join(', ');
  throw new XttsError(
    'SYNTH_LANGUAGE',
    asked !== undefined
      ? `--language ${JSON.stringify(code)} is not one the model was trained on: ${list}`
      : `the model's default language, dataset.language ${JSON.stringify(code)}, is not one it was trained on: ${list}`,
    {
      exitCode: ExitCode.usage,
      suggestions: [
        asked !== undefined && find(fallback) >= 0
          ? `pass one of them (${list}), or leave --language out for ${fallback}`
          : `pass --language with one of them (${list})`,
      ],
    },
  );
}

/**
 * Text -> tokens; what cannot be spoken is reported with where it is and skipped, symbols the model
 * never heard are warned about. Refuses when no text is left to speak.
 */
async function synthesisJobs(
  texts: readonly SynthesisText[],
  config: XttsConfig,
  tokenizer: Tokenizer,
  language: string,
  trained: { langIndex: number; readAs: string; unseen: ReadonlySet<string> },
): Promise<{ jobs: SynthesisJob[]; skipped: SynthesizeResult['skipped']; warnings: string[] }> {
  const skipped: SynthesizeResult['skipped'] = [];
  const warnings: string[] = [];
  const jobs: SynthesisJob[] = [];
  const phonemizer = config.text.tokenizer === 'phonemes' ? new Phonemizer(config.text.phonemizer_command) : undefined;
  try {
    for (const input of texts) {
      const name = input.where ? `${input.where}: ` : '';
      const encode = (text: string) => encodeText(text, language, config, tokenizer, phonemizer, trained.readAs);
      const encoded = await encode(input.text);
      // Longer than the model reads at once: spoken in pieces of whole sentences, joined into one WAV.
      const split = 'reason' in encoded && encoded.tooLong ? await encodeInPieces(input.text, encode) : undefined;
      const pieces = 'ids' in encoded ? [encoded] : split && 'pieces' in split ? split.pieces : undefined;
      if (!pieces) {
        const reason = split && 'reason' in split ? split.reason : (encoded as { reason: string }).reason;
        skipped.push({ where: input.where, text: input.text, reason });
        continue;
      }
      const text = pieces.map((p) => p.text).join(' ');
      const untrained = [...new Set([...text].filter((c) => trained.unseen.has(c)))];
      if (untrained.length)
        warnings.push(
          `${name}${untrained.map((c) => JSON.stringify(c)).join(' ')} never occurred in ` +
            `the training data: the model has not learnt ` +
            `how ${untrained.length > 1 ? 'they sound' : 'it sounds'}`,
        );
      for (const [index, p] of pieces.entries())
        jobs.push({
          ids: p.ids,
          language: trained.langIndex,
          input,
          cleanedText: p.text,
          symbols: Array.from(p.ids.slice(FIRST_SYMBOL, -1), (id) => tokenizer.token(id) ?? '<unk>'),
          ...(pieces.length > 1 ? { part: { index, of: pieces.length } } : {}),
        });
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
        // The other reasons say what to change themselves (rephrase, spell out, split).
        suggestions: first.reason.startsWith('nothing to speak')
          ? ['give it words to say: cleaning drops what cannot be spoken (emoji, symbols, most punctuation)']
          : [],
      },
    );
  }
  return { jobs, skipped, warnings };
}

/**
 * The voice reference in the model's units: the --reference WAV's log-mel (up to
 * batching.reference_frames), or without one the mean voice.
 */
/**
 * The voice the options name, read and checked before any model work: reference clips (their mels;
 * several are averaged once the model is loaded), a trained speaker, a voice file, or by default the
 * mean of the checkpoint's trained voices (a silent reference, the dataset's average spectrum, for
 * checkpoints older than voices).
 */
async function voiceSource(
  o: SynthesizeOptions,
  dir: string,
  ckpt: { state: CheckpointState; voices?: NamedArray[] },
): Promise<{ voice: Voice; mels: ReferenceMel[]; used: VoiceUsed; warnings: string[] }> {
  const { config, stats } = ckpt.state;
  const named = [
    o.references?.length ? '--reference' : undefined,
    o.speaker !== undefined ? '--speaker' : undefined,
    o.voiceFile !== undefined ? '--voice' : undefined,
  ].filter((f) => f !== undefined);
  if (named.length > 1)
    throw new XttsError('USAGE', `${named.join(' and ')} each name a voice: pass one of them`, {
      exitCode: ExitCode.usage,
      suggestions: ['several clips of one voice go to --reference, once per clip'],
    });
  if (o.references?.length) {
    const { mels, warnings } = await referenceMels(o.references, config, stats);
    return { voice: mels[0], mels, used: { kind: 'reference', clips: [...o.references] }, warnings };
  }
  const trained = trainedVoices(ckpt.voices);
  if (o.speaker !== undefined) {
    const voice = speakerVoice(dir, trained, o.speaker);
    return { voice, mels: [], used: { kind: 'speaker', speaker: o.speaker }, warnings: [] };
  }
  if (o.voiceFile !== undefined) {
    const file = readVoiceFile(o.voiceFile, config, ckpt.state.runId);
    return {
      voice: { latents: file.latents, logF0: file.info.logF0, logRate: file.info.logRate },
      mels: [],
      used: { kind: 'file', file: o.voiceFile, source: file.info.source },
      warnings: file.warning ? [file.warning] : [],
    };
  }
  const used: VoiceUsed = { kind: 'average', speakers: trained.size };
  if (trained.size === 0)
    return {
      voice: new Float32Array(config.batching.reference_frames * config.audio.n_mels),
      mels: [],
      used,
      warnings: [],
    };
  const voices = [...trained.values()];
  const mean = new Float32Array(voices[0].latents.length);
  for (const v of voices) for (let i = 0; i < mean.length; i++) mean[i] += v.latents[i] / voices.length;
  // The trained voices' pitch and rate, their median log F0s and log rates averaged (where the model stored them).
  return { voice: { latents: mean, ...windowsProsody(voices) }, mels: [], used, warnings: [] };
}

/** Free-running decoding of the jobs in batches, each utterance vocoded by Griffin-Lim and written as a WAV. */
async function speak(
  model: XttsModel,
  jobs: readonly SynthesisJob[],
  voice: Voice,
  state: CheckpointState,
  o: SynthesizeOptions,
  out: { vocoder: MelVocoder; overwrite: { overwrite: boolean } },
): Promise<{ utterances: SynthesizedUtterance[]; writeFailed: SynthesizeResult['writeFailed'] }> {
  const { vocoder, overwrite } = out;
  const { config, stats } = state;
  const nMels = config.audio.n_mels;
  const { frames: maxFrames, bound, seconds } = frameBound(config, o.maxSeconds);
  const batchSize = Math.max(1, Math.floor(o.batchSize ?? 16));
  const utterances: SynthesizedUtterance[] = [];
  let writeFailed: SynthesizeResult['writeFailed'];
  type Spoken = {
    samples: Float32Array[];
    texts: string[];
    frames: number;
    cut: SynthesizedUtterance['stopReason'];
    symbols: SymbolTiming[];
  };
  const r = model.config.reduction_factor;
  const frameS = config.audio.hop_length / config.audio.sample_rate_hz;
  const gap = Math.round(PIECE_GAP_S * config.audio.sample_rate_hz);
  let pending: Spoken | undefined;
  for (let start = 0; start < jobs.length && !o.control?.stop && !writeFailed; start += batchSize) {
    const batch = jobs.slice(start, start + batchSize);
    const results = await model.generateBatch(batch, voice, {
      maxFrames,
      logDurationVariance: state.logDurationVariance ?? 0,
    });
    for (const [j, g] of results.entries()) {
      if (o.control?.stop) break;
      const job = batch[j];
      const logMel = g.mel.map((v, i) => v * stats.std[i % nMels] + stats.mean[i % nMels]);
      const audio = await vocoder.vocode(logMel, g.frames);
      const perSymbol = framesPerSymbol(g.alignment, g.textTokens, g.frames, r);
      const spoken: Spoken = {
        samples: [audio],
        texts: [job.cleanedText],
        frames: g.frames,
        cut: g.stopReason,
        symbols: symbolTimings(job.symbols, perSymbol, frameS, audio.length / config.audio.sample_rate_hz),
      };
      // A text spoken in pieces: its audio so far waits for the last piece, then is written as one WAV.
      if (job.part) {
        if (job.part.index > 0 && pending) {
          const offsetS = pending.samples.reduce((n, p) => n + p.length + gap, 0) / config.audio.sample_rate_hz;
          for (const t of spoken.symbols) t.startS = round3(t.startS + offsetS);
          spoken.symbols.unshift(...pending.symbols);
          spoken.samples.unshift(...pending.samples);
          spoken.texts.unshift(...pending.texts);
          spoken.frames += pending.frames;
          if (pending.cut === 'max_frames') spoken.cut = 'max_frames';
        }
        if (job.part.index < job.part.of - 1) {
          pending = spoken;
          continue;
        }
        pending = undefined;
      }
      const samples = joinPieces(spoken.samples, gap);
      try {
        writeOutputFile(job.input.out, encodeWav(samples, config.audio.sample_rate_hz), 'the WAV', overwrite);
      } catch (e) {
        // The first WAV's failure is the command's error; a later one ends the synthesis with what was written.
        if (utterances.length === 0 || !isXttsError(e)) throw e;
        const { code, exitCode, message, suggestions } = e;
        writeFailed = { out: job.input.out, code, exitCode, message, suggestions };
        break;
      }
      utterances.push({
        ...(job.input.where ? { where: job.input.where } : {}),
        text: job.input.text,
        cleanedText: spoken.texts.join(' '),
        out: job.input.out,
        frames: spoken.frames,
        durationS: samples.length / config.audio.sample_rate_hz,
        stopReason: spoken.cut,
        ...(spoken.cut === 'max_frames' ? { cutBy: { bound, seconds } } : {}),
        ...(job.part ? { pieces: job.part.of } : {}),
        vocoder: vocoder.used.kind,
        symbols: spoken.symbols,
      });
      o.onUtterance?.(utterances[utterances.length - 1]);
      // A turn of the event loop, where a signal's handler runs (on the CPU backends every await here is a
      // microtask, and a Ctrl-C would wait for the last text).
      await new Promise((next) => setImmediate(next));
    }
  }
  return { utterances, writeFailed };
}
