// `synthesize --pitch`: speak a voice at another median F0 than the one its clips were measured at. A model with
// model.pitch_contour speaks every text symbol at the voice's median log F0 plus the rise its pitch predictor gives
// the symbol, so the number is what sets the voice's pitch (bench/voices: every voice's F0 within 8% of its own in
// three seeds); --pitch replaces it, in Hz or as a shift in semitones. model.speaker_pitch alone reads the number
// only through reference clips' latents (a trained speaker's or a voice file's latents hold it already), so there
// --pitch takes --reference.
import type { XttsConfig } from '../config/index.js';
import { ExitCode, XttsError } from '../errors.js';
import type { ReferenceMel, Voice } from '../model/index.js';
import { PITCH_MAX_HZ, PITCH_MIN_HZ } from '../data/index.js';
import { hzOf, windowsProsody } from './voices.js';

/** What --pitch asks: a median F0 in Hz, or a shift of the voice's own in semitones. */
export type PitchRequest = { hz: number } | { semitones: number };

/** The most a shift may move a voice: two octaves either way. */
const MAX_SEMITONES = 24;

/** Reads --pitch: "180" or "180hz" (Hz), "+3st" or "-2st" (semitones); refuses anything else by name. */
export function parsePitch(text: string): PitchRequest {
  const bad = (why: string) =>
    new XttsError('USAGE', `--pitch ${JSON.stringify(text)}: ${why}`, {
      exitCode: ExitCode.usage,
      suggestions: ['--pitch 180 speaks the voice at a median F0 of 180 Hz; --pitch +3st three semitones higher'],
    });
  const st = /^\s*([+-]?\d+(?:\.\d+)?)\s*st\s*$/i.exec(text);
  if (st) {
    const semitones = Number(st[1]);
    if (Math.abs(semitones) > MAX_SEMITONES) throw bad(`a shift of at most ${MAX_SEMITONES} semitones either way`);
    return { semitones };
  }
  const hz = /^\s*(\d+(?:\.\d+)?)\s*(?:hz)?\s*$/i.exec(text);
  if (!hz) throw bad('give a median F0 in Hz (180) or a shift in semitones (+3st, -2st)');
  const value = Number(hz[1]);
  if (value < PITCH_MIN_HZ || value > PITCH_MAX_HZ)
    throw bad(`${value} Hz is outside the ${PITCH_MIN_HZ}-${PITCH_MAX_HZ} Hz the model's pitch is read in`);
  return { hz: value };
}

/** The pitch a synthesis spoke at, in its result: the F0 it was told, and the voice's own where it was changed. */
export interface PitchUsed {
  hz: number;
  /** The voice's own median F0 (measured on its clips, or stored with it), where --pitch replaced it. */
  voiceHz?: number;
}

/**
 * The voice (and its reference windows) with its pitch as --pitch asks, and the pitch spoken at (undefined for a
 * model that reads no pitch, or a voice whose pitch is unknown and left so). Refuses --pitch where the model would
 * not hear it, and a shift of a voice whose pitch is unknown.
 */
export function withPitch(
  source: { voice: Voice; mels: ReferenceMel[] },
  request: PitchRequest | undefined,
  config: Pick<XttsConfig, 'model'>,
): { voice: Voice; mels: ReferenceMel[]; pitch?: PitchUsed } {
  const { pitch_contour: contour, speaker_pitch: latents } = config.model;
  const own = voicePitch(source);
  if (!request) return own ? { ...source, pitch: { hz: hzOf(own) } } : source;
  const refuse = (why: string, suggestion: string) =>
    new XttsError('SYNTH_PITCH', `--pitch: ${why}`, { exitCode: ExitCode.usage, suggestions: [suggestion] });
  if (!contour && !latents)
    throw refuse(
      'this model reads no pitch (it was trained without model.pitch_contour and model.speaker_pitch)',
      'train with model.pitch_contour: true to set a voice’s pitch at synthesis',
    );
  if (!contour && source.mels.length === 0)
    throw refuse(
      'this model reads a voice’s pitch only from reference clips (model.speaker_pitch, without pitch_contour)',
      'pass the voice as --reference clips, or train with model.pitch_contour: true',
    );
  if ('semitones' in request && !own)
    throw refuse(
      'the voice’s own pitch is unknown (no voiced speech was found in its clips), so it cannot be shifted',
      'give the pitch in Hz (--pitch 180)',
    );
  const logF0 = 'hz' in request ? Math.log(request.hz) : own + (request.semitones * Math.LN2) / 12;
  const pitched = { logF0 };
  const voice =
    source.voice instanceof Float32Array ? { mel: source.voice, ...pitched } : { ...source.voice, ...pitched };
  return {
    voice,
    mels: source.mels.map((m) => ({ ...m, ...pitched })),
    pitch: { hz: hzOf(logF0), ...(own ? { voiceHz: hzOf(own) } : {}) },
  };
}

/** The voice's own median log F0: its windows' or its own (0: unknown). */
function voicePitch(source: { voice: Voice; mels: ReferenceMel[] }): number {
  return windowsProsody(source.mels).logF0 || (source.voice instanceof Float32Array ? 0 : (source.voice.logF0 ?? 0));
}
