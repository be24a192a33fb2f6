// What a command found in a dataset, said in one line before it works on it: the layout, the rows, the
// training and validation utterances with their hours, the speakers and languages, and the skipped
// rows; and a warning where no row was drawn for validation (the validation loss, the best checkpoint
// and early stopping then have nothing to measure).
import type { Manifest, MetadataFormat, SkippedRow } from './manifest.js';
import type { PreparedDataset, PreparedItem } from './prepare.js';
import { sourceNoteWarnings } from './source-notes.js';
import { plural } from '../util/index.js';

const LAYOUTS: Record<MetadataFormat, string> = {
  ljspeech: 'LJSpeech metadata (id|text|normalized text)',
  ljspeech_multispeaker: 'multi-speaker LJSpeech metadata (…|speaker[|language])',
  wav_path_speaker_text: 'metadata of audio paths (path|speaker|text)',
  common_voice: 'a Common Voice release',
  vctk: 'VCTK',
  libritts: 'LibriTTS',
  csv: 'a CSV with a header',
};

/** "42 s", "12.5 min", "3.2 h". */
export function speechLength(seconds: number): string {
  if (seconds < 60) return `${seconds.toFixed(0)} s`;
  if (seconds < 3600) return `${(seconds / 60).toFixed(1)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

/** Skipped rows a warning names (analyze-data-pipeline lists all). */
const SKIPPED_SHOWN = 3;

const seconds = (items: readonly PreparedItem[]) => items.reduce((a, x) => a + x.durationS, 0);

/**
 * Rows whose audio is another row's byte for byte (their features share the content key): how many, how many of them
 * have the copy in the other split, and one pair ("LJ001 and LJ001-copy").
 */
function copiedClips(data: Pick<PreparedDataset, 'train' | 'validation'>) {
  const first = new Map<string, { id: string; validation: boolean }>();
  let clips = 0;
  let acrossSplits = 0;
  let example = '';
  for (const [validation, items] of [
    [false, data.train],
    [true, data.validation],
  ] as const)
    for (const item of items) {
      const seen = first.get(item.featureKey);
      if (!seen) {
        first.set(item.featureKey, { id: item.id, validation });
        continue;
      }
      clips++;
      if (seen.validation !== validation) acrossSplits++;
      example ||= `${seen.id} and ${item.id}`;
    }
  return { clips, acrossSplits, example };
}

/** Speakers whose names are one but for case ("Alice" and "alice"), with their utterances: "Alice (12), alice (3)". */
function caseTwins(data: Pick<PreparedDataset, 'train' | 'validation' | 'speakers'>): string[] {
  const rows = new Map<number, number>();
  for (const item of [...data.train, ...data.validation]) rows.set(item.speaker, (rows.get(item.speaker) ?? 0) + 1);
  const groups = new Map<string, number[]>();
  for (const [i, name] of data.speakers.entries()) {
    const key = name.toLowerCase();
    groups.set(key, [...(groups.get(key) ?? []), i]);
  }
  return [...groups.values()]
    .filter((g) => g.length > 1)
    .map((g) => g.map((i) => `${data.speakers[i]} (${plural(rows.get(i) ?? 0, 'utterance')})`).join(', '));
}

/** The warning that names the first few skipped rows where they are (none when no row was skipped). */
export function skippedRowsWarning(skipped: readonly SkippedRow[]): string | undefined {
  if (skipped.length === 0) return undefined;
  // The first few where they are, so that a skipped row is seen without running another command.
  const shown = skipped
    .slice(0, SKIPPED_SHOWN)
    .map((r) => `${r.file}:${r.line} (${r.id}): ${r.detail || r.reason}`)
    .join('; ');
  const more = skipped.length > SKIPPED_SHOWN ? `; and ${skipped.length - SKIPPED_SHOWN} more` : '';
  return `${plural(skipped.length, 'row')} skipped: ${shown}${more} (--strict refuses a dataset with any)`;
}

/**
 * The warning for a run with nothing to validate on: why the split drew none of the `usable` rows, what then
 * has nothing to measure (`measures`), and what to change.
 */
export function noValidationWarning(
  manifest: Pick<Manifest, 'split'>,
  usable: number,
  what: string,
  measures = 'the validation loss, the best checkpoint and early stopping',
): string {
  const { split } = manifest;
  const why =
    split.source === 'seeded'
      ? `dataset.validation_fraction ${split.fraction} drew none of the ${usable} usable rows`
      : 'the validation metadata gave no usable row';
  return (
    `no validation ${what}: ${why}; ${measures} ` +
    'have nothing to measure. Raise dataset.validation_fraction (or name dataset.validation_metadata)'
  );
}

/** The dataset line, and the warnings a person should read before training on it. */
export function describeDataset(data: PreparedDataset): { line: string; warnings: string[] } {
  const { train, validation, skipped, manifest } = data;
  const rows = train.length + validation.length + skipped.length;
  const languages = data.languages.length <= 5 ? ` (${data.languages.join(', ')})` : '';
  const line =
    `data: ${LAYOUTS[manifest.format]}${manifest.detail ? ` (${manifest.detail})` : ''}, ${plural(rows, 'row')}: ` +
    `${train.length} training (${speechLength(seconds(train))}) and ${validation.length} validation ` +
    `(${speechLength(seconds(validation))}) utterances, ${plural(data.speakers.length, 'speaker')}, ` +
    `${plural(data.languages.length, 'language')}${languages}; ${plural(skipped.length, 'row')} skipped` +
    (skipped.length > 0 ? ' (`xtts analyze-data-pipeline` lists them with their reasons)' : '');
  const warnings: string[] = [];
  const shown = skippedRowsWarning(skipped);
  if (shown) warnings.push(shown);
  const copies = copiedClips(data);
  if (copies.clips)
    warnings.push(
      `${plural(copies.clips, 'row')} repeat${copies.clips === 1 ? 's' : ''} another row's audio byte for byte ` +
        `(e.g. ${copies.example})` +
        (copies.acrossSplits
          ? `; ${copies.acrossSplits} of them across training and validation, so the validation loss is measured ` +
            'on audio the model trains on'
          : '') +
        '. Remove the copies',
    );
  const twins = caseTwins(data);
  if (twins.length)
    warnings.push(
      `speakers whose names differ only in case are trained as separate voices: ${twins.slice(0, 3).join('; ')}` +
        `${twins.length > 3 ? `; and ${twins.length - 3} more` : ''}. If each is one person, write one name`,
    );
  warnings.push(...sourceNoteWarnings(data.sourceNotes));
  const foreign = data.foreignText;
  if (foreign)
    warnings.push(
      `${plural(foreign.rows, 'row')} of language ${foreign.language} ${foreign.rows === 1 ? 'is' : 'are'} written ` +
        `mostly in letters its alphabet lacks (e.g. ${foreign.example}: "${foreign.text}"): another language, ` +
        `which the model learns as ${foreign.language}. Give each row its language (a language column with ` +
        'dataset.language_source: metadata), or set dataset.language to the one the text is in',
    );
  const unheard = validationOnlySpeakers(data);
  if (unheard.length)
    warnings.push(
      `${plural(unheard.length, 'speaker')} ${unheard.length === 1 ? 'has' : 'have'} no training utterance (all ` +
        `their rows were drawn for validation): ${unheard.slice(0, 5).join(', ')}` +
        `${unheard.length > 5 ? `, and ${unheard.length - 5} more` : ''}. The model never trains on ` +
        `${unheard.length === 1 ? 'that voice' : 'those voices'}, and a checkpoint's voice for them is read from ` +
        'their validation clips. Give them more clips, or lower dataset.validation_fraction',
    );
  if (validation.length === 0) warnings.push(noValidationWarning(manifest, train.length, 'utterances'));
  return { line, warnings };
}

/** Speakers (in a dataset of several) with validation rows and no training row, by name. */
function validationOnlySpeakers(data: Pick<PreparedDataset, 'train' | 'validation' | 'speakers'>): string[] {
  if (data.speakers.length < 2) return [];
  const trained = new Set(data.train.map((item) => item.speaker));
  const held = new Set(data.validation.map((item) => item.speaker));
  return [...held].filter((s) => !trained.has(s)).map((s) => data.speakers[s]);
}
