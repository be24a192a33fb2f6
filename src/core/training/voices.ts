// Voices: whose voice synthesis speaks in. A voice is the conditioning encoder's latents
// ([cond_latents, d_model], model/generate.ts voiceLatents), averaged over the reference windows of one
// or more clips (a long clip is several windows of reference_frames, as training reads it; short clips share
// windows where training joined them, batching.reference_join). Every
// checkpoint carries the voice of each trained speaker (voices.safetensors, from up to VOICE_CLIPS of
// their training clips, computed with that checkpoint's weights), so `synthesize --speaker NAME`
// needs no audio; `xtts voices --out` writes one voice to a file that `synthesize --voice` reads.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { FeatureCache } from '../cache/index.js';
import type { XttsConfig } from '../config/index.js';
import { type ProcessedClip, processAudioFile, readAudioFile, referenceLogF0 } from '../data/index.js';
import { rateClips, referenceLogRate, speakerName } from '../data/index.js';
import type { PreparedDataset, PreparedItem } from '../data/index.js';
import { ExitCode, isXttsError, XttsError } from '../errors.js';
import { type LatentVoice, type ReferenceMel, voiceLatents, type XttsModel } from '../model/index.js';
import type { CheckpointState, NamedArray } from './checkpoint.js';
import { decodeSafetensors, encodeSafetensors, safetensorsMetadata } from './safetensors.js';
import { didYouMean, requireRegularFile, unreadableWhy } from '../util/index.js';

/** Clips per trained speaker that make their voice: more agree better, and each costs an encoder pass a checkpoint. */
export const VOICE_CLIPS = 4;
/** The tensor-name prefix of a speaker's voice in voices.safetensors ("voice/<speaker>"). */
const VOICE_PREFIX = 'voice/';
/** A speaker's median log F0 beside their voice ("voice-pitch/<speaker>", [1]), for a model that reads pitch. */
const PITCH_PREFIX = 'voice-pitch/';
/** A speaker's log speaking rate beside their voice ("voice-rate/<speaker>", [1]), for model.reference_rate. */
const RATE_PREFIX = 'voice-rate/';
const VOICE_FILE_FORMAT = 'xtts-voice/1';

/** Each speaker's training clips in dataset order; a speaker heard only in validation rows, those. */
function speakerClips(data: Pick<PreparedDataset, 'train' | 'validation' | 'speakers'>): PreparedItem[][] {
  const bySpeaker = data.speakers.map(() => ({ train: [] as PreparedItem[], validation: [] as PreparedItem[] }));
  for (const item of data.train) bySpeaker[item.speaker]?.train.push(item);
  for (const item of data.validation) bySpeaker[item.speaker]?.validation.push(item);
  return bySpeaker.map(({ train, validation }) => (train.length ? train : validation));
}

/**
 * A speaker's clips for their voice: the longest (a reference fills the reference window), ties broken by row id so
 * every checkpoint of a run uses the same ones.
 */
function voiceClips(clips: readonly PreparedItem[]): PreparedItem[] {
  const order = (a: PreparedItem, b: PreparedItem) => b.frames - a.frames || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return [...clips].sort(order).slice(0, VOICE_CLIPS);
}

/** At most this many reference windows from one clip (a minute of speech at the default settings). */
const MAX_WINDOWS_PER_CLIP = 64;

/**
 * A clip's log-mel in the model's units (the dataset's statistics), as windows of the reference
 * length: training conditions each step on a random window of `reference_frames` of a clip, so a
 * longer clip is read as consecutive windows (the last one ending at the clip's end, when at least
 * half a window is left over) whose voices are averaged; a clip shorter than a window is one window.
 */
export function referenceWindows(
  mel: Float32Array,
  frames: number,
  stats: { mean: ArrayLike<number>; std: ArrayLike<number> },
  config: XttsConfig,
  maxWindows = MAX_WINDOWS_PER_CLIP,
): Float32Array[] {
  const nMels = config.audio.n_mels;
  if (frames < 1) return [];
  const size = Math.min(frames, config.batching.reference_frames);
  const starts: number[] = [];
  for (let at = 0; at + size <= frames && starts.length < maxWindows; at += size) starts.push(at);
  const rest = frames - (starts.at(-1)! + size);
  if (rest >= size / 2 && starts.length < maxWindows) starts.push(frames - size);
  return starts.map((start) => {
    const out = new Float32Array(size * nMels);
    const from = start * nMels;
    for (let i = 0; i < out.length; i++) out[i] = (mel[from + i] - stats.mean[i % nMels]) / stats.std[i % nMels];
    return out;
  });
}

/**
 * Several clips of one voice as reference windows: each clip's own windows; or, for a model trained with
 * batching.reference_join (whose windows were filled from several clips), the clips joined in order first, so that
 * short clips fill windows together as they did in training. A window's pitch (model.speaker_pitch) is that of the
 * clips it is read from, as the training batches' were: its own clip's, or the joined clips' together. Its rate
 * (model.reference_rate) is that of all the clips, as a training speaker's was pooled over its clips.
 */
export function voiceWindows(
  clips: readonly { mel: Float32Array; frames: number }[],
  stats: { mean: ArrayLike<number>; std: ArrayLike<number> },
  config: XttsConfig,
): ReferenceMel[] {
  const pitch = (of: readonly { mel: Float32Array; frames: number }[]) =>
    readsPitch(config) ? referenceLogF0(of, config.audio) : 0;
  const rate = config.model.reference_rate ? { logRate: referenceLogRate(clips, config.audio) } : {};
  if (!config.batching.reference_join || clips.length < 2)
    return clips.flatMap((c) => {
      const logF0 = pitch([c]);
      return referenceWindows(c.mel, c.frames, stats, config).map((mel) => ({ mel, logF0, ...rate }));
    });
  const frames = clips.reduce((n, c) => n + c.frames, 0);
  const joined = new Float32Array(frames * config.audio.n_mels);
  let at = 0;
  for (const c of clips) {
    joined.set(c.mel.subarray(0, c.frames * config.audio.n_mels), at);
    at += c.frames * config.audio.n_mels;
  }
  // As many windows as the clips would give apart: each clip's minute counts, joined or not.
  const logF0 = pitch(clips);
  return referenceWindows(joined, frames, stats, config, MAX_WINDOWS_PER_CLIP * clips.length).map((mel) => ({
    mel,
    logF0,
    ...rate,
  }));
}

/** Every trained speaker's voice with the model's current weights, as checkpoint arrays ("voice/<speaker>"). */
export async function speakerVoices(
  model: XttsModel,
  data: Pick<PreparedDataset, 'train' | 'validation' | 'speakers' | 'stats' | 'cachePath'>,
  config: XttsConfig,
): Promise<NamedArray[]> {
  const clips = speakerClips(data);
  const cache = FeatureCache.openReadonly(data.cachePath);
  const shape = [config.model.cond_latents, config.model.d_model];
  const out: NamedArray[] = [];
  try {
    for (const [s, own] of clips.entries()) {
      const features = voiceClips(own).flatMap((item) => cache.getFeature(item.featureKey) ?? []);
      const mels = voiceWindows(features, data.stats, config);
      if (mels.length === 0) continue;
      const latents = await voiceLatents(model, mels);
      out.push({ name: `${VOICE_PREFIX}${data.speakers[s]}`, shape, dtype: 'float32', data: latents });
      const { logF0 } = windowsProsody(mels);
      const scalar = (prefix: string, value: number): NamedArray => ({
        name: `${prefix}${data.speakers[s]}`,
        shape: [1],
        dtype: 'float32',
        data: Float32Array.of(value),
      });
      if (readsPitch(config)) out.push(scalar(PITCH_PREFIX, logF0));
      // The rate it was trained at: over the producers' clips of the speaker (rateClips), not the voice's longest.
      if (config.model.reference_rate) out.push(scalar(RATE_PREFIX, trainedLogRate(own, cache, config)));
    }
  } finally {
    cache.close();
  }
  return out;
}

/** A speaker's log rate as the training batches read it (model.reference_rate): pooled over rateClips of its clips. */
function trainedLogRate(clips: readonly PreparedItem[], cache: FeatureCache, config: XttsConfig): number {
  return referenceLogRate(
    rateClips(clips).flatMap((item) => cache.getFeature(item.featureKey) ?? []),
    config.audio,
  );
}

/**
 * The trained speakers that have a voice in a checkpoint's voices.safetensors (none before voices existed), with
 * their median log F0 where the model reads pitch and their log speaking rate where it reads one.
 */
export function trainedVoices(voices: readonly NamedArray[] | undefined): Map<string, LatentVoice> {
  const out = new Map<string, LatentVoice>();
  const scalars = (prefix: string) => {
    const values = new Map<string, number>();
    for (const a of voices ?? [])
      if (a.name.startsWith(prefix) && a.data instanceof Float32Array)
        values.set(a.name.slice(prefix.length), a.data[0]);
    return values;
  };
  const pitch = scalars(PITCH_PREFIX);
  const rate = scalars(RATE_PREFIX);
  for (const a of voices ?? [])
    if (a.name.startsWith(VOICE_PREFIX) && a.data instanceof Float32Array) {
      const name = a.name.slice(VOICE_PREFIX.length);
      out.set(name, {
        latents: a.data,
        ...(pitch.has(name) ? { logF0: pitch.get(name) } : {}),
        ...(rate.has(name) ? { logRate: rate.get(name) } : {}),
      });
    }
  return out;
}

/** Whether a model reads a reference's pitch (model.speaker_pitch or pitch_contour). */
export function readsPitch(config: Pick<XttsConfig, 'model'>): boolean {
  return config.model.speaker_pitch || config.model.pitch_contour;
}

/**
 * The median log F0 and the log speaking rate of a voice read from several windows (or voices): each the mean of the
 * known ones' (0: none known).
 */
export function windowsProsody(windows: readonly Pick<LatentVoice, 'logF0' | 'logRate'>[]): {
  logF0: number;
  logRate: number;
} {
  const mean = (key: 'logF0' | 'logRate') => {
    const known = windows.filter((w) => w[key]);
    return known.length ? known.reduce((a, w) => a + w[key]!, 0) / known.length : 0;
  };
  return { logF0: mean('logF0'), logRate: mean('logRate') };
}

/** A median log F0 in Hz, to 0.1 Hz (as results and listings give it). */
export const hzOf = (logF0: number) => Math.round(Math.exp(logF0) * 10) / 10;

/** The voice of trained speaker `name` (as speakerName reads it); refuses an unknown name with the names there are. */
export function speakerVoice<V>(dir: string, voices: ReadonlyMap<string, V>, name: string): V {
  // As the dataset's names were read: composed or not, with invisible characters or doubled spaces, one name.
  const wanted = speakerName(name);
  const voice = voices.get(name) ?? [...voices].find(([k]) => speakerName(k) === wanted)?.[1];
  if (voice) return voice;
  if (voices.size === 0)
    throw new XttsError(
      'SYNTH_SPEAKER',
      `${dir} holds no trained voices (it was written before checkpoints had them)`,
      {
        exitCode: ExitCode.usage,
        suggestions: ['pass --reference with a clip of the speaker, or train on with this xtts (--resume) to add them'],
      },
    );
  const names = [...voices.keys()];
  const near = name.trim() === '' ? undefined : didYouMean(name, names);
  throw new XttsError(
    'SYNTH_SPEAKER',
    `--speaker ${JSON.stringify(name)} is not a voice of ${dir}; it has ${names.length}: ` +
      names.slice(0, 20).join(', ') +
      (names.length > 20 ? ', …' : ''),
    {
      exitCode: ExitCode.usage,
      suggestions: [
        ...(near ? [`did you mean --speaker ${near}?`] : []),
        '`xtts voices --checkpoint DIR` lists them all',
      ],
    },
  );
}

/** A reference whose loudest sample is below this (dBFS) holds noise or dither, not a voice. */
const QUIET_REFERENCE_DBFS = -50;

/** A reference shorter than this carries too little of a voice to clone it from (3 to 10 s is asked for). */
const SHORT_REFERENCE_S = 1.5;
/** A clip with less sound than this (a click, one sample) is refused: a voice read from it would be noise. */
const MIN_REFERENCE_S = 0.25;

/**
 * Reference clips (any audio xtts reads) -> their normalised log-mels as reference windows (voiceWindows:
 * the clips' windows in order, or the clips joined first), and warnings for clips too short to carry a voice;
 * a clip that cannot be read is named.
 */
export async function referenceMels(
  files: readonly string[],
  config: XttsConfig,
  stats: CheckpointState['stats'],
): Promise<{ mels: ReferenceMel[]; warnings: string[] }> {
  const clips: { mel: Float32Array; frames: number }[] = [];
  const warnings: string[] = [];
  const refused = (file: string, why: string, suggestion: string) =>
    new XttsError('SYNTH_REFERENCE', `cannot read --reference ${file}: ${why}`, {
      exitCode: ExitCode.usage,
      position: { file },
      suggestions: [suggestion],
    });
  const asked = 'name an audio file of the voice (WAV, FLAC, MP3 or Ogg; 3 to 10 s is enough), once per clip';
  const seen = new Map<string, string>();
  for (const file of files) {
    let bytes: Buffer;
    try {
      bytes = readAudioFile(file, file, { pipes: true });
    } catch (e) {
      if (isXttsError(e)) throw e;
      throw refused(file, unreadableWhy(e), asked);
    }
    const weights = safetensorsKind(bytes);
    if (weights === 'voice')
      throw refused(
        file,
        'it is an xtts voice file (written by `xtts voices --out`), not a recording',
        'speak in a saved voice with `xtts synthesize --voice FILE`; --reference takes recordings',
      );
    if (weights) throw refused(file, 'it is a safetensors file (weights), not a recording', asked);
    let clip: Awaited<ReturnType<typeof processAudioFile>>;
    try {
      clip = await processAudioFile(bytes, config.audio, file);
    } catch (e) {
      // A dataset row's advice (remove the row) is not a flag's.
      if (isXttsError(e) && e.code === 'AUDIO_SILENT') throw refused(file, 'the clip is silent', asked);
      throw e;
    }
    if (clip.durationS < MIN_REFERENCE_S)
      throw refused(
        file,
        `it holds ${clip.durationS.toFixed(2)} s of sound (after trimming silence): nothing to read a voice from`,
        asked,
      );
    warnings.push(...clipWarnings(file, clip, config));
    const real = regularFilePath(file);
    if (real !== undefined && seen.has(real))
      warnings.push(
        `--reference ${file} is given twice (as ${seen.get(real)} too): its windows count twice in the voice`,
      );
    else if (real !== undefined) seen.set(real, file);
    clips.push(clip);
  }
  return { mels: voiceWindows(clips, stats, config), warnings };
}

/** A regular file's real path (a pipe is read once and is no file to name twice), or undefined. */
function regularFilePath(file: string): string | undefined {
  try {
    return statSync(file).isFile() ? realpathSync(file) : undefined;
  } catch {
    return undefined;
  }
}

/** What a user should know of a reference clip: all but silent, too short, past what is read, narrowband. */
export function clipWarnings(file: string, clip: ProcessedClip, config: XttsConfig): string[] {
  const warnings: string[] = [];
  // As recorded: loudness normalisation (audio.loudness) would raise noise to speech's level.
  const peakDb = 20 * Math.log10(Math.max(clip.sourcePeak, 1e-10));
  if (peakDb < QUIET_REFERENCE_DBFS)
    warnings.push(
      `--reference ${file} peaks at ${peakDb.toFixed(0)} dBFS: it is all but silent (speech peaks above ` +
        `${QUIET_REFERENCE_DBFS} dBFS), and a voice is read from its levels; give a clip of the voice speaking, ` +
        'or raise its level (sox IN OUT --norm=-3)',
    );
  if (clip.durationS < SHORT_REFERENCE_S)
    warnings.push(
      `--reference ${file} holds ${clip.durationS.toFixed(2)} s of sound (after trimming silence): too little to ` +
        'carry a voice; 3 to 10 s of speech clones it',
    );
  const { hop_length: hop, sample_rate_hz: rate, fmax_hz: fmax } = config.audio;
  const readS = (MAX_WINDOWS_PER_CLIP * config.batching.reference_frames * hop) / rate;
  if (clip.melFrames > MAX_WINDOWS_PER_CLIP * config.batching.reference_frames)
    warnings.push(
      `--reference ${file} holds ${clip.durationS.toFixed(0)} s of sound; its first ${readS.toFixed(0)} s make the ` +
        'voice (the rest is not read): pass its best stretch, or several clips',
    );
  if (clip.originalSampleRateHz / 2 < fmax)
    warnings.push(
      `--reference ${file} was recorded at ${clip.originalSampleRateHz} Hz: it holds no sound above ` +
        `${clip.originalSampleRateHz / 2} Hz, which the model reads up to ${fmax} Hz, so the voice may come out ` +
        'duller; a clip recorded at 16 kHz or more clones it better',
    );
  if (readsPitch(config) && referenceLogF0([clip], config.audio) === 0)
    warnings.push(
      `--reference ${file}: no voiced speech found in it (whispered, noise, or too short), so the model, which ` +
        "reads a reference's pitch (model.speaker_pitch or pitch_contour), is told none and speaks at a pitch of " +
        'its own; ' +
        'give a clip of the voice speaking aloud',
    );
  return warnings;
}

/** Whether bytes are safetensors, and then an xtts voice file: what a recording never is, named as such. */
function safetensorsKind(bytes: Uint8Array): 'voice' | 'weights' | undefined {
  const metadata = safetensorsMetadata(bytes);
  if (!metadata) return undefined;
  return metadata.format === VOICE_FILE_FORMAT ? 'voice' : 'weights';
}

/** Where a voice file's voice came from, and for which model: written into its header. */
export interface VoiceFileInfo {
  /** The checkpoint that computed it, its run and step. */
  checkpoint: string;
  runId?: string;
  step: number;
  /** `speaker NAME` or the reference clips' paths. */
  source: string;
  latents: number;
  dModel: number;
  /** Its median log F0, for a model that reads pitch (model.pitch_contour speaks at it); absent: unknown. */
  logF0?: number;
  /** Its log speaking rate, for a model with model.reference_rate (which speaks at it); absent: unknown. */
  logRate?: number;
}

/** One voice as a safetensors file (tensor `voice`, [cond_latents, d_model]; the header says whose and for what). */
export function encodeVoiceFile(latents: Float32Array, info: VoiceFileInfo): Uint8Array {
  const meta: Record<string, string> = { format: VOICE_FILE_FORMAT, info: JSON.stringify(info) };
  return encodeSafetensors(
    [{ name: 'voice', shape: [info.latents, info.dModel], dtype: 'float32', data: latents }],
    meta,
  );
}

/**
 * A voice file for a model of `config`: refused when it is not one, or its shape is another model's;
 * a voice not known to be of this run (another run's, or either run unknown) is a warning (the latents mean what that
 * run's encoder meant).
 */
export function readVoiceFile(
  file: string,
  config: XttsConfig,
  runId: string | undefined,
): { latents: Float32Array; info: VoiceFileInfo; warning?: string } {
  const bad = (why: string, suggestion: string) =>
    new XttsError('SYNTH_VOICE_FILE', `--voice ${file}: ${why}`, {
      exitCode: ExitCode.usage,
      position: { file },
      suggestions: [suggestion],
    });
  let bytes: Buffer;
  try {
    requireRegularFile(file);
    bytes = readFileSync(file);
  } catch (e) {
    throw bad(`cannot be read: ${unreadableWhy(e)}`, 'name a voice file written by `xtts voices --out`');
  }
  let decoded: ReturnType<typeof decodeSafetensors>;
  try {
    decoded = decodeSafetensors(bytes, file);
  } catch {
    // Not safetensors at all (text, audio, a file cut short): not a voice file, whatever the decoder's words.
    throw bad('is not an xtts voice file', 'write one with `xtts voices --checkpoint DIR --speaker NAME --out FILE`');
  }
  const { arrays, metadata } = decoded;
  const voice = arrays.find((a) => a.name === 'voice');
  if (metadata.format !== VOICE_FILE_FORMAT || !voice || !(voice.data instanceof Float32Array))
    throw bad('is not an xtts voice file', 'write one with `xtts voices --checkpoint DIR --speaker NAME --out FILE`');
  let info: VoiceFileInfo;
  try {
    info = JSON.parse(metadata.info ?? '') as VoiceFileInfo;
  } catch {
    throw bad('its header is damaged', 'write the voice file again with `xtts voices --out`');
  }
  // A pitch (a median log F0: 4 to 6.1 for 55-420 Hz) that is not one would speak the voice at nonsense.
  if (info.logF0 !== undefined && !(typeof info.logF0 === 'number' && info.logF0 > 3 && info.logF0 < 7))
    throw bad(
      `its header's pitch (logF0 ${JSON.stringify(info.logF0)}) is damaged`,
      'write the voice file again with `xtts voices --out`',
    );
  // A rate (a log of 1 to 50 change peaks a second; speech reads 5 to 15) that is not one would speak at nonsense.
  if (info.logRate !== undefined && !(typeof info.logRate === 'number' && info.logRate > 0 && info.logRate < 4))
    throw bad(
      `its header's speaking rate (logRate ${JSON.stringify(info.logRate)}) is damaged`,
      'write the voice file again with `xtts voices --out`',
    );
  const { cond_latents: latents, d_model: dModel } = config.model;
  if (voice.shape[0] !== latents || voice.shape[1] !== dModel)
    throw bad(
      `it is a voice of a model with ${voice.shape.join('×')} latents (${info.checkpoint}); this one takes ` +
        `${latents}×${dModel}`,
      'compute the voice with this checkpoint: `xtts voices --checkpoint DIR --reference CLIP --out FILE`',
    );
  const notFinite = voice.data.filter((v) => !Number.isFinite(v)).length;
  if (notFinite > 0)
    throw bad(
      `${notFinite} of its ${voice.data.length} values are not finite (NaN or infinite): the file is damaged`,
      'write the voice file again with `xtts voices --out`',
    );
  // A voice is what one run's conditioning encoder made of the clips: only that run's checkpoints read it as meant.
  const warning =
    info.runId !== undefined && runId !== undefined && info.runId === runId
      ? undefined
      : `--voice ${file} was computed by ` +
        (info.runId === undefined || runId === undefined
          ? `${info.checkpoint}, and it cannot be told whether that is this model's run`
          : `another run (${info.checkpoint})`) +
        '; its voice may not carry over: `xtts voices --checkpoint DIR --reference CLIP --out FILE` computes it ' +
        'with this model';
  return { latents: voice.data, info, warning };
}
