// What a dataset's recordings lack, said once for the whole dataset: clips recorded below the model's
// sample rate (upsampled, they hold nothing above half their rate), 8-bit PCM clips (their
// quantisation hiss) and clips that peak 40 dB or more below full scale (hum, hiss or a cable left
// unplugged, not speech at a level anyone recorded it). The acoustic model's preparation (prepare.ts,
// from the notes its feature cache keeps) and the vocoder's clip loading (vocoder/data.ts) count them
// alike, and both say them in the same words (describe.ts for the acoustic model, the vocoder
// trainer's data line).
import { plural } from '../util/index.js';

/** A clip whose loudest sample is below this (full scale 1: -40 dBFS) is noted as quiet. */
export const QUIET_PEAK = 0.01;

/**
 * How many usable clips were recorded below the model's rate (the lowest rate), in 8-bit PCM, and below QUIET_PEAK
 * (the quietest's peak in dBFS); an example each.
 */
export interface SourceNotes {
  belowRate?: { clips: number; lowestHz: number; modelHz: number; example: string };
  eightBit?: { clips: number; example: string };
  quiet?: { clips: number; quietestDb: number; example: string };
}

/** Counts one usable clip's recording (its rate, PCM bits and peak) into `notes`; `example` names it. */
export function noteSource(
  notes: SourceNotes,
  source: { hz: number; pcmBits?: number; peak?: number },
  example: string,
  modelHz: number,
): void {
  if (source.peak !== undefined && source.peak < QUIET_PEAK) {
    const db = 20 * Math.log10(source.peak);
    const q = (notes.quiet ??= { clips: 0, quietestDb: db, example });
    q.clips++;
    if (db < q.quietestDb) Object.assign(q, { quietestDb: db, example });
  }
  if (source.hz < modelHz) {
    const b = (notes.belowRate ??= { clips: 0, lowestHz: source.hz, modelHz, example });
    b.clips++;
    if (source.hz < b.lowestHz) Object.assign(b, { lowestHz: source.hz, example });
  }
  if (source.pcmBits !== undefined && source.pcmBits <= 8) (notes.eightBit ??= { clips: 0, example }).clips++;
}

/** The warnings the notes call for (none when the recordings lack nothing). */
export function sourceNoteWarnings({ belowRate, eightBit, quiet }: SourceNotes): string[] {
  const warnings: string[] = [];
  if (belowRate) {
    const hz = belowRate.modelHz;
    warnings.push(
      `${plural(belowRate.clips, 'clip')} ${belowRate.clips === 1 ? 'was' : 'were'} recorded below the model's ` +
        `${hz} Hz (the lowest at ${belowRate.lowestHz} Hz: ${belowRate.example}): upsampled, ` +
        `${belowRate.clips === 1 ? 'it holds' : 'they hold'} nothing above ${belowRate.lowestHz / 2} Hz, and the ` +
        'model learns that muffled sound as part of the voice. ' +
        (belowRate.clips === 1 ? 'Leave it out, or train at its rate ' : 'Leave them out, or train at their rate ') +
        '(audio.sample_rate_hz)',
    );
  }
  if (eightBit)
    warnings.push(
      `${plural(eightBit.clips, 'clip')} ${eightBit.clips === 1 ? 'is' : 'are'} 8-bit PCM ` +
        `(e.g. ${eightBit.example}): ` +
        'its quantisation hiss, about 48 dB below full scale, is learnt as part of the voice. Use 16-bit ' +
        'recordings where there are any, or leave these out',
    );
  if (quiet)
    warnings.push(
      `${plural(quiet.clips, 'clip')} ${quiet.clips === 1 ? 'peaks' : 'peak'} 40 dB or more below full scale ` +
        `(the quietest at ${quiet.quietestDb.toFixed(0)} dBFS: ${quiet.example}): near-silence, hum or hiss rather ` +
        'than speech, which loudness normalisation raises to speech level and the model learns as a voice. ' +
        `Listen to ${quiet.clips === 1 ? 'it' : 'them'}, and leave out what holds no speech`,
    );
  return warnings;
}
