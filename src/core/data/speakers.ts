// Speakers as the metadata names them: one name per voice however it was typed, and no made-up voice for a row that
// names none among rows that do.
import type { ManifestPart, ManifestRow } from './manifest.js';

/** The speaker of every row of a dataset that names none (a single-speaker layout, or an empty speaker column). */
export const DEFAULT_SPEAKER = 'default';

/** Characters that never tell two names apart: zero-width space, word joiner, BOM, soft hyphen, bidi controls. */
const INVISIBLE = /[\u00AD\u200B\u200E\u200F\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/g;

/**
 * A speaker's name as one voice, however it was typed: Unicode NFC ("Zoë" composed or not), the invisible characters
 * dropped, every run of spaces (no-break ones too) one space, none at the ends.
 */
export function speakerName(raw: string): string {
  return raw.normalize('NFC').replace(INVISIBLE, '').replace(/\s+/g, ' ').trim();
}

/**
 * Every row's speaker as one name (speakerName); where no row names one, all are DEFAULT_SPEAKER; where some do, a row
 * with an empty speaker is skipped (no_speaker) rather than merged into a made-up voice.
 */
export function settleSpeakers(parts: readonly ManifestPart[]): void {
  let example: ManifestRow | undefined;
  for (const part of parts)
    for (const row of part.rows) {
      row.speaker = speakerName(row.speaker);
      if (row.speaker !== '') example ??= row;
    }
  for (const part of parts) {
    if (!example) {
      for (const row of part.rows) row.speaker = DEFAULT_SPEAKER;
      continue;
    }
    part.rows = part.rows.filter((row) => {
      if (row.speaker !== '') return true;
      part.skipped.push({
        file: row.file,
        line: row.line,
        id: row.id,
        reason: 'no_speaker',
        detail:
          `the speaker column is empty; other rows name their speaker (line ${example!.line}: ` +
          `${JSON.stringify(example!.speaker)}): write whose voice this is`,
      });
      return false;
    });
  }
}
