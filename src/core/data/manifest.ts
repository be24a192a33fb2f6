// The manifest: metadata rows read, validated and split. A row that cannot be used is skipped with
// its file, line, id and a reason code; the good rows are all kept. Checks that need the audio or
// the tokenizer (unreadable audio, lengths, unmappable characters) happen later, in preprocessing,
// and report through the same SkippedRow shape.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';
import {
  COMMON_VOICE_FILES,
  inferCsvColumns,
  isCommonVoiceHeader,
  looksLikeLibriTts,
  looksLikeVctk,
  notUtf8Skip,
  readCommonVoice,
  readCsv,
  readLibriTts,
  readVctk,
} from './corpora.js';
import { otherFileKind } from '../util/index.js';
import type { DatasetConfig } from '../config/index.js';
import { settleSpeakers } from './speakers.js';
import { readLines } from './text-lines.js';

export const SKIP_REASONS = {
  malformed_row: 'the row does not have the columns of the metadata format',
  not_utf8: "the line is not UTF-8 (the file's other lines are)",
  empty_text: 'the text is empty, or has no letter or digit to speak (punctuation alone)',
  missing_audio: 'the audio file does not exist, or is not a regular file',
  unreadable_audio: 'the audio file cannot be read or decoded (a broken header, a cut file, NaN samples, silence)',
  unsupported_format: 'a codec, sample format, rate or channel count xtts does not read',
  text_too_short: 'the cleaned text is shorter than limits.min_text_chars',
  text_too_long: 'the cleaned text is longer than limits.max_text_chars',
  audio_too_short: 'the audio (after trimming) is shorter than limits.min_audio_s',
  audio_too_long: 'the audio (after trimming) is longer than limits.max_audio_s, or the file is over 600 s',
  unmappable_characters: 'the text has characters the tokenizer cannot map',
  duplicate_id: 'another row above has the same id',
  path_escapes_root: 'the audio path points outside the dataset folder',
  unknown_language: "the row's language is not in text.languages",
  no_speaker: 'the speaker column is empty where the other rows name their speaker',
} as const;
export type SkipReason = keyof typeof SKIP_REASONS;

export interface SkippedRow {
  file: string;
  /** 1-based line of the metadata file. */
  line: number;
  id: string;
  reason: SkipReason;
  detail: string;
}

export interface ManifestRow {
  id: string;
  /** Metadata file and 1-based line the row came from. */
  file: string;
  line: number;
  /** Absolute path of the audio file. */
  audioPath: string;
  /** The text to speak: the normalized column when the format has one, else the text column. */
  text: string;
  /** Whose voice: speakerName of the metadata's, DEFAULT_SPEAKER where the dataset names none. */
  speaker: string;
  /** Language from the metadata or file name; undefined means "decide later" (fixed or detected). */
  language?: string;
}

export type MetadataFormat =
  | 'ljspeech'
  | 'ljspeech_multispeaker'
  | 'wav_path_speaker_text'
  | 'vctk'
  | 'libritts'
  | 'common_voice'
  | 'csv';

export interface ManifestPart {
  file: string;
  format: MetadataFormat;
  rows: ManifestRow[];
  skipped: SkippedRow[];
  /** What was read, where the layout alone does not say: a release's TSV, a CSV's columns. */
  detail?: string;
}

const HEADER_FIRST_CELLS = new Set([
  'id',
  'wav',
  'wav_path',
  'wav_file',
  'audio',
  'audio_file',
  'audio_path',
  'path',
  'file',
  'filename',
  'file_name',
  'utterance',
  'utterance_id',
]);
const LANGUAGE_RE = /^[a-z]{2,3}(-[A-Za-z0-9]+)?$/;

function looksLikeAudioPath(cell: string): boolean {
  return /\.(wav|wave)$/i.test(cell) || cell.includes('/');
}

/** Decide the layout from the first data rows: column counts and whether the first cell is a path. */
export function detectFormat(lines: readonly string[]): MetadataFormat {
  const sample = lines
    .filter((l) => l.trim() !== '')
    .slice(0, 50)
    .map((l) => l.split('|'));
  if (sample.length === 0) return 'ljspeech';
  const counts = new Map<number, number>();
  for (const cells of sample) counts.set(cells.length, (counts.get(cells.length) ?? 0) + 1);
  const common = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
  if (common === 3 && sample.filter((c) => looksLikeAudioPath(c[0])).length > sample.length / 2)
    return 'wav_path_speaker_text';
  if (common >= 4) return 'ljspeech_multispeaker';
  return 'ljspeech';
}

function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/** Audio path of an LJSpeech id: wavs/<id>.wav (or <id> itself when it already names a .wav). */
function ljspeechAudio(root: string, id: string): string {
  return /\.wav$/i.test(id) ? resolve(root, id) : resolve(root, 'wavs', `${id}.wav`);
}

/**
 * For an LJSpeech-layout id whose audio is not where the id says: the file it likely meant, where that exists (an id
 * written with its folder or its extension), as advice to append to the skip's detail; else ''.
 */
function misplacedAudio(root: string, id: string, audioPath: string): string {
  const bare = id.replace(/^\.?\/?wavs\//i, '').replace(/\.wav$/i, '');
  const meant = resolve(root, 'wavs', `${bare}.wav`);
  if (bare === id || meant === audioPath || !existsSync(meant)) return '';
  return (
    `, but ${relative(root, meant)} does: write the id as ${bare} (an id names wavs/<id>.wav; one ending in ` +
    '.wav, a file in the dataset folder itself)'
  );
}

/**
 * Read one metadata file. UTF-8 with or without BOM, LF or CRLF, a header line tolerated.
 * Throws XttsError only when the file itself cannot be read; bad rows are skipped and reported.
 */
export function readMetadataFile(
  datasetDir: string,
  metadataName: string,
  formatSetting: 'auto' | 'ljspeech' | 'ljspeech_multispeaker' | 'wav_path_speaker_text',
): ManifestPart {
  const file = join(datasetDir, metadataName);
  if (existsSync(file) && statSync(file).isDirectory())
    throw new XttsError('DATASET_METADATA_MISSING', `${file} is a folder, not a metadata file`, {
      position: { file },
      suggestions: ['set dataset.metadata to the metadata file inside the dataset folder (e.g. metadata.csv)'],
    });
  if (!existsSync(file) || !statSync(file).isFile()) {
    const here = existsSync(datasetDir)
      ? readdirSync(datasetDir)
          .filter((f) => /\.(csv|tsv|txt|list)$/i.test(f))
          .sort()
          .slice(0, 6)
      : [];
    throw new XttsError('DATASET_METADATA_MISSING', `metadata file not found: ${file}`, {
      position: { file },
      suggestions: [
        `set dataset.metadata to the metadata file's name` +
          `${here.length ? ` (the folder has ${here.join(', ')})` : ''}, ` +
          `or dataset.path (--dataset) to the folder that holds ${metadataName}`,
      ],
    });
  }
  const { lines, notUtf8 } = readLines(file);
  const nonEmpty = lines.filter((l, i) => l.trim() !== '' || notUtf8.has(i)).length;
  if (notUtf8.size > 0 && notUtf8.size === nonEmpty) {
    throw new XttsError(
      'DATASET_METADATA_NOT_UTF8',
      `${file} is not UTF-8: none of its lines is (Latin-1 or another single-byte encoding?)`,
      {
        position: { file },
        suggestions: [
          `convert the whole file, e.g. iconv -f LATIN1 -t UTF-8 ${file} > ${file}.utf8 && ` +
            `mv ${file}.utf8 ${file} (if it is Latin-1)`,
        ],
      },
    );
  }
  let first = 0;
  // Blank lines before the first row or header; a line that is not UTF-8 is a row (skipped and named below).
  while (first < lines.length && lines[first].trim() === '' && !notUtf8.has(first)) first++;
  const hasHeader = first < lines.length && HEADER_FIRST_CELLS.has(lines[first].split('|')[0].trim().toLowerCase());
  const dataStart = hasHeader ? first + 1 : first;
  const format: MetadataFormat = formatSetting === 'auto' ? detectFormat(lines.slice(dataStart)) : formatSetting;
  const rows: ManifestRow[] = [];
  const skipped: SkippedRow[] = [];
  const expected = format === 'ljspeech' ? [2, 3] : format === 'ljspeech_multispeaker' ? [4, 5] : [3, 4];
  for (let i = dataStart; i < lines.length; i++) {
    const raw = lines[i];
    const line = i + 1;
    const bad = notUtf8.get(i);
    if (bad) {
      const id = bad.asLatin1.split('|')[0].trim();
      skipped.push(notUtf8Skip(file, line, id, bad));
      continue;
    }
    if (raw.trim() === '') continue;
    const cells = raw.split('|');
    const skip = (id: string, reason: SkipReason, detail: string) => skipped.push({ file, line, id, reason, detail });
    if (!expected.includes(cells.length)) {
      skip(
        cells[0]?.trim() ?? '',
        'malformed_row',
        `${cells.length} column${cells.length === 1 ? '' : 's'}; ${format} rows ` +
          `have ${expected.join(' or ')} separated by |`,
      );
      continue;
    }
    let id: string;
    let audioPath: string;
    let rowText: string;
    let speaker = '';
    let language: string | undefined;
    if (format === 'wav_path_speaker_text') {
      const [path, spk, txt, lang] = cells;
      id = path.trim().replace(/\.wav$/i, '');
      audioPath = resolve(datasetDir, path.trim());
      speaker = spk;
      rowText = txt;
      language = lang?.trim() || undefined;
    } else {
      id = cells[0].trim();
      audioPath = ljspeechAudio(datasetDir, id);
      rowText =
        format === 'ljspeech'
          ? cells[2] !== undefined && cells[2].trim() !== ''
            ? cells[2]
            : cells[1]
          : cells[2].trim() !== ''
            ? cells[2]
            : cells[1];
      if (format === 'ljspeech_multispeaker') {
        speaker = cells[3];
        language = cells[4]?.trim() || undefined;
      }
    }
    if (id === '') {
      skip('', 'malformed_row', 'the id column is empty');
      continue;
    }
    if (language !== undefined && !LANGUAGE_RE.test(language)) {
      skip(id, 'malformed_row', `language column ${JSON.stringify(language)} is not a language code like "en"`);
      continue;
    }
    if (!isInside(datasetDir, audioPath)) {
      skip(id, 'path_escapes_root', `${audioPath} is outside ${datasetDir}`);
      continue;
    }
    if (rowText.trim() === '') {
      skip(id, 'empty_text', 'the text column is empty');
      continue;
    }
    rows.push({ id, file, line, audioPath, text: rowText.trim(), speaker, language });
  }
  return { file, format, rows, skipped };
}

/** Where `p` resolves to through symbolic links, or undefined when it does not exist (the stat below names that). */
function realPathOf(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/**
 * Drop later rows whose id repeats an earlier one (across files too), rows whose audio lies outside
 * the dataset folder (as written, and, unless dataset.follow_symlinks, as resolved through symbolic
 * links), and rows whose audio is missing.
 */
function dedupeAndCheckAudio(datasetDir: string, parts: ManifestPart[], followSymlinks: boolean): void {
  const seen = new Map<string, ManifestRow>();
  const realRoot = realPathOf(datasetDir) ?? datasetDir;
  for (const part of parts) {
    const kept: ManifestRow[] = [];
    for (const row of part.rows) {
      const prior = seen.get(row.id);
      if (prior) {
        part.skipped.push({
          file: row.file,
          line: row.line,
          id: row.id,
          reason: 'duplicate_id',
          detail: `id also on line ${prior.line} of ${prior.file}`,
        });
        continue;
      }
      seen.set(row.id, row);
      if (!isInside(datasetDir, row.audioPath)) {
        part.skipped.push({
          file: row.file,
          line: row.line,
          id: row.id,
          reason: 'path_escapes_root',
          detail: `${row.audioPath} is outside ${datasetDir}`,
        });
        continue;
      }
      const real = followSymlinks ? undefined : realPathOf(row.audioPath);
      if (real !== undefined && !isInside(realRoot, real)) {
        part.skipped.push({
          file: row.file,
          line: row.line,
          id: row.id,
          reason: 'path_escapes_root',
          detail:
            `${row.audioPath} is a symbolic link (or lies under one) to ${real}, ` +
            `outside ${datasetDir}; set dataset.follow_symlinks: true to read audio linked ` +
            `from elsewhere`,
        });
        continue;
      }
      // Only a regular file is read: a folder, a FIFO (whose read would wait forever) or a device is named as what it
      // is.
      let notFile: string | undefined;
      try {
        const st = statSync(row.audioPath);
        if (!st.isFile()) notFile = `${row.audioPath} is ${otherFileKind(st)}, not an audio file`;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        notFile =
          code === 'ENOENT'
            ? `${row.audioPath} does not exist${misplacedAudio(datasetDir, row.id, row.audioPath)}`
            : code === 'ELOOP'
              ? `${row.audioPath} is a symbolic link that loops`
              : code === 'EACCES'
                ? `${row.audioPath} cannot be read (permission denied)`
                : `${row.audioPath} cannot be read (${code ?? (e as Error).message})`;
      }
      if (notFile) {
        part.skipped.push({ file: row.file, line: row.line, id: row.id, reason: 'missing_audio', detail: notFile });
        continue;
      }
      kept.push(row);
    }
    part.rows = kept;
  }
}

/** Whether an id goes to validation: a seeded hash of the id, so adding rows never moves others. */
export function inValidationSplit(id: string, seed: number, fraction: number): boolean {
  if (fraction <= 0) return false;
  const h = createHash('sha256').update(`${seed}\u0000${id}`).digest();
  return h.readUInt32BE(0) / 2 ** 32 < fraction;
}

export interface Manifest {
  datasetDir: string;
  format: MetadataFormat;
  train: ManifestRow[];
  validation: ManifestRow[];
  skipped: SkippedRow[];
  /** How the validation rows were chosen. */
  split: { source: 'file' | 'seeded'; seed?: number; fraction?: number };
  /** The training part's ManifestPart.detail. */
  detail?: string;
}

/**
 * A file's first line (from its first 64 KiB, a BOM dropped): enough to tell a layout by its header without reading a
 * large TSV twice.
 */
function firstLine(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(65536);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf
      .subarray(0, n)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .split(/\r?\n/)[0];
  } finally {
    closeSync(fd);
  }
}

/**
 * One metadata file (or, for vctk and libritts, the folder's transcripts), in the layout `dataset.format` names or
 * `auto` finds.
 */
function readPart(datasetDir: string, dataset: DatasetConfig, name: string): ManifestPart {
  const fmt = dataset.format;
  if (fmt !== 'vctk' && fmt !== 'libritts') refuseLinkedMetadata(datasetDir, name, dataset.follow_symlinks);
  if (fmt === 'vctk') return readVctk(datasetDir);
  if (fmt === 'libritts') return readLibriTts(datasetDir);
  if (fmt === 'common_voice') return readCommonVoice(datasetDir, name);
  if (fmt === 'csv') return readCsv(datasetDir, name, dataset.columns);
  if (fmt === 'auto') {
    const file = join(datasetDir, name);
    if (!existsSync(file)) {
      if (looksLikeVctk(datasetDir)) return readVctk(datasetDir);
      if (looksLikeLibriTts(datasetDir)) return readLibriTts(datasetDir);
      // A Common Voice release where the default metadata file is not: its validated rows.
      const cv = COMMON_VOICE_FILES.find((f) => existsSync(join(datasetDir, f)));
      if (name === DEFAULT_METADATA && cv && isCommonVoiceHeader(firstLine(join(datasetDir, cv)))) {
        refuseLinkedMetadata(datasetDir, cv, dataset.follow_symlinks);
        return readCommonVoice(datasetDir, cv);
      }
    } else if (statSync(file).isFile()) {
      const head = firstLine(file);
      if (head.includes('\t') && isCommonVoiceHeader(head)) return readCommonVoice(datasetDir, name);
      if (!head.includes('|')) {
        const csv = csvHeader(file, head, dataset.columns);
        if (csv) return readCsv(datasetDir, name, csv);
      }
    }
  }
  return readMetadataFile(datasetDir, name, fmt);
}

/**
 * A metadata file in the dataset folder that is a symbolic link (or lies under one) to a file outside it is read only
 * with dataset.follow_symlinks, as linked audio is: a dataset cannot make xtts read, and print in its reports, a file
 * elsewhere on the machine. A name that itself leads out of the folder (`metadata: ../lists/train.csv`) is the
 * config's choice, and read.
 */
function refuseLinkedMetadata(datasetDir: string, name: string, followSymlinks: boolean): void {
  const file = join(datasetDir, name);
  if (followSymlinks || !isInside(datasetDir, file)) return;
  const real = realPathOf(file);
  if (real === undefined || isInside(realPathOf(datasetDir) ?? datasetDir, real)) return;
  throw new XttsError(
    'DATASET_METADATA_LINKED',
    `${file} is a symbolic link (or lies under one) to ${real}, outside the dataset folder ${datasetDir}`,
    {
      exitCode: ExitCode.usage,
      position: { file },
      suggestions: [
        'set dataset.follow_symlinks: true if that file is the metadata you mean, or copy it into the dataset folder',
      ],
    },
  );
}

/** dataset.metadata's default. */
const DEFAULT_METADATA = 'metadata.csv';

/**
 * The columns to read a delimited file's header by: `configured` where the header names them, else the header's
 * common names for them (file, transcript, speaker_id, …); null where the first line is no header. A header whose
 * audio or text column has no name xtts knows is refused, naming the keys to set.
 */
function csvHeader(file: string, head: string, configured: DatasetConfig['columns']): DatasetConfig['columns'] | null {
  for (const d of [',', ';', '\t']) {
    const cells = head.split(d).map((x) => x.trim().replace(/^"|"$/g, ''));
    if (cells.length < 2) continue;
    if (cells.includes(configured.audio) && cells.includes(configured.text)) return configured;
    const inferred = inferCsvColumns(cells, configured);
    if (inferred.columns) return inferred.columns;
    // Names, not values: no path, no spaces inside a name, no audio file.
    if (cells.every((c) => /^[A-Za-z][\w.-]*$/.test(c) && !looksLikeAudioPath(c))) {
      throw new XttsError(
        'DATASET_HEADER',
        `${file}: its first line is a header (${cells.join(', ')}) with no column xtts reads as the ` +
          `${inferred.missing.join(' or the ')}`,
        {
          exitCode: ExitCode.usage,
          position: { file, line: 1 },
          suggestions: [
            `set ${inferred.missing.map((k) => `dataset.columns.${k}`).join(' and ')} to the header's ` +
              `name${inferred.missing.length > 1 ? 's' : ''} for ${inferred.missing.length > 1 ? 'them' : 'it'}` +
              ' (with dataset.format: csv)',
          ],
        },
      );
    }
  }
  return null;
}

/** Read, validate and split the dataset's metadata. */
export function buildManifest(datasetDir: string, dataset: DatasetConfig): Manifest {
  if (!existsSync(datasetDir) || !statSync(datasetDir).isDirectory()) {
    const loops = !existsSync(datasetDir) && lstatSync(datasetDir, { throwIfNoEntry: false })?.isSymbolicLink();
    const what = existsSync(datasetDir)
      ? `${datasetDir} is a file, not the dataset's folder`
      : loops
        ? `${datasetDir} is a symbolic link to nothing that exists (or one that loops), not the dataset's folder`
        : undefined;
    throw new XttsError('DATASET_NOT_FOUND', what ?? `dataset folder not found: ${datasetDir}`, {
      exitCode: ExitCode.usage,
      suggestions: [
        'set dataset.path in the config (relative paths are resolved against the config file) or pass --dataset DIR',
      ],
    });
  }
  const trainPart = readPart(datasetDir, dataset, dataset.metadata);
  const parts = [trainPart];
  let validation: ManifestRow[];
  let split: Manifest['split'];
  if (dataset.validation_metadata) {
    if (trainPart.format === 'vctk' || trainPart.format === 'libritts') {
      throw new XttsError(
        'DATASET_VALIDATION_METADATA',
        `dataset.validation_metadata does not apply to a ${trainPart.format} folder (its ` +
          `transcripts are files, not a metadata list)`,
        {
          exitCode: ExitCode.usage,
          suggestions: [
            'remove dataset.validation_metadata; dataset.validation_fraction holds rows out by a seeded split',
          ],
        },
      );
    }
    if (resolve(datasetDir, dataset.validation_metadata) === resolve(datasetDir, dataset.metadata))
      throw new XttsError(
        'DATASET_VALIDATION_METADATA',
        `dataset.validation_metadata names the training metadata itself (${dataset.metadata}): every row would be ` +
          'held out and trained on at once',
        {
          exitCode: ExitCode.usage,
          suggestions: [
            'name a separate validation file, or set dataset.validation_metadata: null to hold rows out by ' +
              'dataset.validation_fraction',
          ],
        },
      );
    const valPart = readPart(datasetDir, dataset, dataset.validation_metadata);
    parts.push(valPart);
    settleSpeakers(parts);
    dedupeAndCheckAudio(datasetDir, parts, dataset.follow_symlinks);
    validation = valPart.rows;
    split = { source: 'file' };
  } else {
    settleSpeakers(parts);
    dedupeAndCheckAudio(datasetDir, parts, dataset.follow_symlinks);
    validation = trainPart.rows.filter((r) => inValidationSplit(r.id, dataset.split_seed, dataset.validation_fraction));
    const valIds = new Set(validation.map((r) => r.id));
    trainPart.rows = trainPart.rows.filter((r) => !valIds.has(r.id));
    split = { source: 'seeded', seed: dataset.split_seed, fraction: dataset.validation_fraction };
  }
  return {
    datasetDir,
    format: trainPart.format,
    train: trainPart.rows,
    validation,
    skipped: parts.flatMap((p) => p.skipped),
    split,
    ...(trainPart.detail ? { detail: trainPart.detail } : {}),
  };
}
