// The corpora speech engineers have, read as they are distributed:
//   vctk          txt/<speaker>/<speaker>_<n>.txt with the audio in wav48_silence_trimmed/<speaker>/
//                 <speaker>_<n>_mic1.flac (VCTK 0.92; `_mic2` when mic1 is missing) or
//                 wav48/<speaker>/<speaker>_<n>.wav (VCTK 0.80)
//   libritts      <subset>/<speaker>/<chapter>/<id>.normalized.txt beside <id>.wav (LibriTTS, LibriTTS-R)
//   common_voice  a Common Voice TSV (validated.tsv, train.tsv, …; `dataset.metadata`) with a header
//                 naming client_id, path, sentence and (newer releases) locale; clips/<path> (MP3)
//   csv           any delimited file with a header row: `dataset.columns` names the audio, text,
//                 speaker and language columns (`auto` also reads a header's common names for them:
//                 file, path, transcript, sentence, speaker_id, locale, …); the delimiter (, ; tab |) is
//                 read from the header, quoted fields (RFC 4180, csv-parse) may hold delimiters and line breaks
// Each gives ManifestRows with the file and line (or the transcript file) they came from; the audio's
// existence is checked afterwards with every other format's (manifest.ts).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import type { DatasetConfig } from '../config/index.js';
import { ExitCode, XttsError } from '../errors.js';
import type { ManifestPart, ManifestRow, SkippedRow } from './manifest.js';
import { readLines } from './text-lines.js';

/** A Common Voice release's TSVs, the validated rows first: read where the folder has no `dataset.metadata`. */
export const COMMON_VOICE_FILES = ['validated.tsv', 'train.tsv'] as const;

/** Whether a TSV header is a Common Voice release's. */
export function isCommonVoiceHeader(head: string): boolean {
  const cells = head.split('\t').map((x) => x.trim());
  return ['path', 'sentence', 'client_id'].every((c) => cells.includes(c));
}

/** The header names `auto` reads a column as (any case), in order of preference. */
const COLUMN_NAMES = {
  audio: [
    'audio',
    'file',
    'path',
    'filename',
    'file_name',
    'audio_path',
    'audio_file',
    'audio_filepath',
    'wav',
    'clip',
  ],
  text: ['text', 'transcript', 'transcription', 'sentence', 'normalized_text', 'utterance', 'caption'],
  speaker: ['speaker', 'speaker_id', 'speaker_name', 'client_id', 'spk', 'voice'],
  language: ['language', 'lang', 'locale', 'language_code'],
} as const;

/**
 * A header's columns by the names xtts knows for them (COLUMN_NAMES), a name the config gives (dataset.columns) first:
 * the audio and text columns, with the speaker and language ones where it has them; `missing` names the required ones
 * it lacks.
 */
export function inferCsvColumns(
  header: readonly string[],
  configured?: DatasetConfig['columns'],
): { columns: DatasetConfig['columns']; missing: [] } | { columns: null; missing: ('audio' | 'text')[] } {
  const find = (names: readonly string[], own?: string | null) => {
    for (const n of own ? [own.trim().toLowerCase(), ...names] : names) {
      const hit = header.find((h) => h.trim().toLowerCase() === n);
      if (hit !== undefined) return hit.trim();
    }
    return null;
  };
  const [audio, text] = [find(COLUMN_NAMES.audio, configured?.audio), find(COLUMN_NAMES.text, configured?.text)];
  if (audio === null || text === null)
    return {
      columns: null,
      missing: [...(audio === null ? ['audio' as const] : []), ...(text === null ? ['text' as const] : [])],
    };
  return {
    columns: {
      audio,
      text,
      speaker: find(COLUMN_NAMES.speaker, configured?.speaker),
      language: find(COLUMN_NAMES.language, configured?.language),
    },
    missing: [],
  };
}

/** Files under `dir` (recursively, following no links) whose names end with `suffix`, sorted. */
function filesUnder(dir: string, suffix: string, limit = 5_000_000): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (out.length >= limit) return;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && e.name.endsWith(suffix)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

function readText(file: string): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true })
      .decode(readFileSync(file))
      .replace(/^\uFEFF/, '')
      .trim();
  } catch {
    return undefined;
  }
}

/** Whether `datasetDir` is laid out as VCTK. */
export function looksLikeVctk(datasetDir: string): boolean {
  return (
    existsSync(join(datasetDir, 'txt')) &&
    ['wav48_silence_trimmed', 'wav48'].some((d) => existsSync(join(datasetDir, d)))
  );
}

/** Whether `datasetDir` holds LibriTTS transcripts (a `.normalized.txt` within three levels). */
export function looksLikeLibriTts(datasetDir: string): boolean {
  const probe = (d: string, depth: number): boolean => {
    if (depth > 4) return false;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isFile() && e.name.endsWith('.normalized.txt')) return true;
      if (e.isDirectory() && probe(join(d, e.name), depth + 1)) return true;
    }
    return false;
  };
  return probe(datasetDir, 0);
}

export function readVctk(datasetDir: string): ManifestPart {
  const rows: ManifestRow[] = [];
  const skipped: SkippedRow[] = [];
  for (const file of filesUnder(join(datasetDir, 'txt'), '.txt')) {
    const id = basename(file, '.txt');
    const speaker = id.split('_')[0];
    const text = readText(file);
    if (text === undefined) {
      skipped.push({ file, line: 1, id, reason: 'not_utf8', detail: `${file} is not UTF-8` });
      continue;
    }
    const candidates = [
      join(datasetDir, 'wav48_silence_trimmed', speaker, `${id}_mic1.flac`),
      join(datasetDir, 'wav48_silence_trimmed', speaker, `${id}_mic2.flac`),
      join(datasetDir, 'wav48', speaker, `${id}.wav`),
    ];
    const audioPath = candidates.find((c) => existsSync(c)) ?? candidates[0];
    if (text === '') skipped.push({ file, line: 1, id, reason: 'empty_text', detail: `${file} is empty` });
    else rows.push({ id, file, line: 1, audioPath, text, speaker });
  }
  return { file: join(datasetDir, 'txt'), format: 'vctk', rows, skipped };
}

export function readLibriTts(datasetDir: string): ManifestPart {
  const rows: ManifestRow[] = [];
  const skipped: SkippedRow[] = [];
  for (const file of filesUnder(datasetDir, '.normalized.txt')) {
    const id = basename(file, '.normalized.txt');
    const text = readText(file);
    if (text === undefined) {
      skipped.push({ file, line: 1, id, reason: 'not_utf8', detail: `${file} is not UTF-8` });
      continue;
    }
    if (text === '') {
      skipped.push({ file, line: 1, id, reason: 'empty_text', detail: `${file} is empty` });
      continue;
    }
    rows.push({ id, file, line: 1, audioPath: join(file, '..', `${id}.wav`), text, speaker: id.split('_')[0] });
  }
  return { file: datasetDir, format: 'libritts', rows, skipped };
}

function requireFile(file: string, what: string): void {
  if (!existsSync(file) || !statSync(file).isFile()) {
    const found = existsSync(file) ? `${file} is a folder, not a metadata file` : `metadata file not found: ${file}`;
    throw new XttsError('DATASET_METADATA_MISSING', found, {
      exitCode: ExitCode.usage,
      position: { file },
      suggestions: [`set dataset.metadata to the ${what} (relative to dataset.path)`],
    });
  }
}

/** The skip of a metadata line that is not UTF-8: where, how it reads as Latin-1, and a fix for that line alone. */
export function notUtf8Skip(file: string, line: number, id: string, bad: { at: number; asLatin1: string }): SkippedRow {
  const text = `${bad.asLatin1.slice(0, 60)}${bad.asLatin1.length > 60 ? '…' : ''}`;
  return {
    file,
    line,
    id,
    reason: 'not_utf8',
    detail:
      `byte ${bad.at + 1} of the line is not UTF-8 (read as Latin-1 it says ` +
      `"${text}"); save this line as UTF-8 (\`sed -n ${line}p FILE | iconv -f LATIN1 ` +
      `-t UTF-8\` prints it converted); converting the whole file would break its ` +
      `UTF-8 lines`,
  };
}

function skipNotUtf8(
  file: string,
  notUtf8: Map<number, { at: number; asLatin1: string }>,
  delimiter: string,
  idColumn: number,
): SkippedRow[] {
  return [...notUtf8.entries()].map(([i, bad]) =>
    notUtf8Skip(file, i + 1, bad.asLatin1.split(delimiter)[idColumn]?.trim() ?? '', bad),
  );
}

export function readCommonVoice(datasetDir: string, metadataName: string): ManifestPart {
  const file = join(datasetDir, metadataName);
  requireFile(file, "release's TSV (validated.tsv, train.tsv, …)");
  const { lines, notUtf8 } = readLines(file);
  const header = (lines[0] ?? '').split('\t').map((h) => h.trim());
  const col = (name: string) => header.indexOf(name);
  const [cPath, cText, cSpeaker, cLocale] = [col('path'), col('sentence'), col('client_id'), col('locale')];
  if (cPath < 0 || cText < 0) {
    throw new XttsError(
      'DATASET_HEADER',
      `${file}: a Common Voice TSV has a header with "path" and "sentence" columns; ` +
        `this one has ${header.join(', ') || 'none'}`,
      {
        exitCode: ExitCode.usage,
        position: { file, line: 1 },
        suggestions: [
          'set dataset.metadata to validated.tsv (or train.tsv) of the Common Voice ' +
            'release, or dataset.format: csv with dataset.columns',
        ],
      },
    );
  }
  const rows: ManifestRow[] = [];
  const skipped = skipNotUtf8(file, notUtf8, '\t', cPath);
  for (let i = 1; i < lines.length; i++) {
    if (notUtf8.has(i) || lines[i].trim() === '') continue;
    const cells = lines[i].split('\t');
    const path = cells[cPath]?.trim() ?? '';
    const id = path.replace(/\.(mp3|wav|ogg|opus|flac)$/i, '');
    if (cells.length < header.length || path === '') {
      skipped.push({
        file,
        line: i + 1,
        id,
        reason: 'malformed_row',
        detail: `${cells.length} columns; the header has ${header.length}`,
      });
      continue;
    }
    const text = cells[cText].trim();
    if (text === '') {
      skipped.push({ file, line: i + 1, id, reason: 'empty_text', detail: 'the sentence column is empty' });
      continue;
    }
    const language = cLocale >= 0 ? cells[cLocale].trim() || undefined : undefined;
    rows.push({
      id,
      file,
      line: i + 1,
      audioPath: resolve(datasetDir, 'clips', path),
      text,
      speaker: cSpeaker >= 0 ? cells[cSpeaker] : '',
      language,
    });
  }
  return { file, format: 'common_voice', rows, skipped, detail: basename(file) };
}

export function readCsv(datasetDir: string, metadataName: string, columns: DatasetConfig['columns']): ManifestPart {
  const file = join(datasetDir, metadataName);
  requireFile(file, 'CSV file');
  const { lines, notUtf8 } = readLines(file);
  const headerLine = lines[0] ?? '';
  const delimiter = [',', ';', '\t', '|']
    .map((d) => ({ d, n: headerLine.split(d).length }))
    .sort((a, b) => b.n - a.n)[0].d;
  let records: string[][];
  // Each record's first line: a quoted field may run over several lines, and a row is named where it starts.
  let startLines: number[];
  let parsedTo = 0;
  try {
    const parsed = parse(lines.map((l, i) => (notUtf8.has(i) ? '' : l)).join('\n'), {
      delimiter,
      relax_column_count: true,
      skip_empty_lines: false,
      info: true,
      bom: true,
      on_record: (record: string[], context: { lines: number }) => {
        parsedTo = context.lines;
        return record;
      },
    }) as unknown as { record: string[]; info: { lines: number } }[];
    records = parsed.map((p) => p.record);
    startLines = parsed.map((_, r) => (r === 0 ? 1 : parsed[r - 1].info.lines + 1));
  } catch (e) {
    const err = e as Error & { lines?: number; code?: string };
    // An unclosed quote is found only at the end of the file: name the row where it opens.
    const unclosed = err.code === 'CSV_QUOTE_NOT_CLOSED';
    const line = unclosed ? parsedTo + 1 : err.lines;
    const message = unclosed
      ? `the row starting here opens a quoted field (") that no later quote closes, so the rest of the file ` +
        `(to line ${err.lines ?? lines.length}) was read as that one field`
      : err.message;
    throw new XttsError('DATASET_CSV', `${file}${line ? `:${line}` : ''}: ${message}`, {
      exitCode: ExitCode.usage,
      position: { file, line },
      suggestions: ['a field with the delimiter, a quote or a line break must be in double quotes, its quotes doubled'],
    });
  }
  const header = (records[0] ?? []).map((h) => h.trim());
  const want = { audio: columns.audio, text: columns.text, speaker: columns.speaker, language: columns.language };
  const index = Object.fromEntries(
    Object.entries(want).map(([k, name]) => [k, name === null ? -1 : header.indexOf(name)]),
  ) as Record<keyof typeof want, number>;
  // Every column the header lacks in one error, not one a run.
  const missing = (['audio', 'text', 'speaker', 'language'] as const).filter((k) => want[k] !== null && index[k] < 0);
  if (missing.length > 0) {
    throw new XttsError(
      'DATASET_HEADER',
      `${file}: ${missing.map((k) => `no "${want[k]}" column for the ${k} (dataset.columns.${k})`).join(', ')}; ` +
        `the header has ${header.join(', ') || 'nothing'}`,
      {
        exitCode: ExitCode.usage,
        position: { file, line: 1 },
        suggestions: missing.map(
          (k) =>
            `set dataset.columns.${k} to the header's name for it` +
            (k === 'speaker' || k === 'language' ? ', or to null' : ''),
        ),
      },
    );
  }
  const rows: ManifestRow[] = [];
  const skipped = skipNotUtf8(file, notUtf8, delimiter, index.audio);
  for (let r = 1; r < records.length; r++) {
    const cells = records[r];
    const line = startLines[r];
    if (cells.length === 1 && cells[0].trim() === '') continue;
    const path = cells[index.audio]?.trim() ?? '';
    const id = path.replace(/\.[A-Za-z0-9]+$/, '');
    if (cells.length !== header.length || path === '') {
      skipped.push({
        file,
        line,
        id,
        reason: 'malformed_row',
        detail: `${cells.length} columns; the header has ${header.length}`,
      });
      continue;
    }
    const text = cells[index.text].trim();
    if (text === '') {
      skipped.push({ file, line, id, reason: 'empty_text', detail: `the ${want.text} column is empty` });
      continue;
    }
    rows.push({
      id,
      file,
      line,
      audioPath: resolve(datasetDir, path),
      text,
      speaker: index.speaker >= 0 ? cells[index.speaker] : '',
      language: index.language >= 0 ? cells[index.language].trim() || undefined : undefined,
    });
  }
  const named = (['audio', 'text', 'speaker', 'language'] as const).filter((k) => want[k] !== null);
  return { file, format: 'csv', rows, skipped, detail: named.map((k) => `${k}: ${want[k]}`).join(', ') };
}
