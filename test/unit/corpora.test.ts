// The corpora as they are distributed, built here in miniature with real audio (sox: FLAC for VCTK,
// MP3 for Common Voice, WAV elsewhere): every row is found with its speaker, text, language and
// place; `auto` recognises each layout; bad rows are skipped with their file and line.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { DatasetConfig } from '../../src/core/config/schema.js';
import { buildManifest } from '../../src/core/data/manifest.js';
import { writeToneWav } from '../helpers/wav.js';

const dataset = (over: Partial<DatasetConfig> = {}): DatasetConfig => ({
  path: '.',
  format: 'auto',
  metadata: 'metadata.csv',
  validation_metadata: null,
  validation_fraction: 0,
  split_seed: 1,
  language: 'en',
  language_source: 'fixed',
  columns: { audio: 'audio', text: 'text', speaker: null, language: null },
  ...over,
});

function tone(path: string): void {
  const wav = path.replace(/\.\w+$/, '.tmp.wav');
  writeToneWav(wav, 0.5);
  execFileSync('sox', [wav, path]);
}

test('VCTK 0.92: txt/<speaker>/ and wav48_silence_trimmed/<speaker>/<id>_mic1.flac', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-vctk-'));
  for (const [spk, n, text] of [
    ['p225', '001', 'Please call Stella.'],
    ['p225', '002', 'Ask her to bring these things.'],
    ['p226', '001', 'Please call Stella.'],
  ]) {
    mkdirSync(join(dir, 'txt', spk), { recursive: true });
    mkdirSync(join(dir, 'wav48_silence_trimmed', spk), { recursive: true });
    writeFileSync(join(dir, 'txt', spk, `${spk}_${n}.txt`), `${text}\n`);
    tone(join(dir, 'wav48_silence_trimmed', spk, `${spk}_${n}_mic1.flac`));
  }
  writeFileSync(join(dir, 'txt', 'p226', 'p226_002.txt'), 'No audio for this one.\n');
  for (const format of ['auto', 'vctk'] as const) {
    const m = buildManifest(dir, dataset({ format }));
    assert.equal(m.format, 'vctk');
    assert.deepEqual(
      m.train.map((r) => [r.id, r.speaker, r.text]),
      [
        ['p225_001', 'p225', 'Please call Stella.'],
        ['p225_002', 'p225', 'Ask her to bring these things.'],
        ['p226_001', 'p226', 'Please call Stella.'],
      ],
    );
    assert.ok(m.train[0].audioPath.endsWith('p225_001_mic1.flac'));
    assert.deepEqual(
      m.skipped.map((s) => [s.id, s.reason]),
      [['p226_002', 'missing_audio']],
    );
    assert.ok(m.skipped[0].file.endsWith('p226_002.txt'));
  }
});

test('LibriTTS: <speaker>/<chapter>/<id>.normalized.txt beside <id>.wav', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-libritts-'));
  const ch = join(dir, 'train-clean-100', '19', '198');
  mkdirSync(ch, { recursive: true });
  for (const [id, text] of [
    ['19_198_000000_000000', 'Northanger Abbey.'],
    ['19_198_000000_000001', 'Chapter one.'],
  ]) {
    writeFileSync(join(ch, `${id}.normalized.txt`), text);
    writeFileSync(join(ch, `${id}.original.txt`), text.toUpperCase());
    writeToneWav(join(ch, `${id}.wav`), 0.5);
  }
  const m = buildManifest(dir, dataset());
  assert.equal(m.format, 'libritts');
  assert.deepEqual(
    m.train.map((r) => [r.id, r.speaker, r.text]),
    [
      ['19_198_000000_000000', '19', 'Northanger Abbey.'],
      ['19_198_000000_000001', '19', 'Chapter one.'],
    ],
  );
});

test('Common Voice: validated.tsv with client_id, path, sentence and locale; MP3 clips in clips/', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-cv-'));
  mkdirSync(join(dir, 'clips'));
  tone(join(dir, 'clips', 'common_voice_de_1.mp3'));
  tone(join(dir, 'clips', 'common_voice_de_2.mp3'));
  const rows = [
    'client_id\tpath\tsentence_id\tsentence\tsentence_domain\tup_votes\tdown_votes\t' +
      'age\tgender\taccents\tvariant\tlocale\tsegment',
    'abc123\tcommon_voice_de_1.mp3\ts1\tGuten Morgen, "Welt".\t\t2\t0\t\t\t\t\tde\t',
    'def456\tcommon_voice_de_2.mp3\ts2\tWie geht es dir?\t\t2\t0\t\t\t\t\tde\t',
    'def456\tcommon_voice_de_3.mp3\ts3\t\t\t2\t0\t\t\t\t\tde\t',
  ];
  writeFileSync(join(dir, 'validated.tsv'), rows.join('\n') + '\n');
  const m = buildManifest(dir, dataset({ metadata: 'validated.tsv', language_source: 'metadata' }));
  assert.equal(m.format, 'common_voice');
  assert.deepEqual(
    m.train.map((r) => [r.id, r.speaker, r.text, r.language]),
    [
      ['common_voice_de_1', 'abc123', 'Guten Morgen, "Welt".', 'de'],
      ['common_voice_de_2', 'def456', 'Wie geht es dir?', 'de'],
    ],
  );
  assert.deepEqual(
    m.skipped.map((s) => [s.line, s.reason]),
    [[4, 'empty_text']],
  );
});

test('a generic CSV with named columns, quoted fields (a comma and a line break inside), any order', () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-csv-'));
  mkdirSync(join(dir, 'audio'));
  writeToneWav(join(dir, 'audio', 'a.wav'), 0.5);
  writeToneWav(join(dir, 'audio', 'b.wav'), 0.5);
  writeFileSync(
    join(dir, 'transcripts.csv'),
    'transcript,who,file\n"Hello, ' +
      'world.",anna,audio/a.wav\n"Two\nlines",ben,audio/b.wav\nmissing ' +
      'columns\nEscapes.,carl,../../etc/passwd\n',
  );
  const columns = { audio: 'file', text: 'transcript', speaker: 'who', language: null };
  for (const format of ['auto', 'csv'] as const) {
    const m = buildManifest(dir, dataset({ format, metadata: 'transcripts.csv', columns }));
    assert.equal(m.format, 'csv');
    assert.deepEqual(
      m.train.map((r) => [r.id, r.speaker, r.text, r.line]),
      [
        ['audio/a', 'anna', 'Hello, world.', 2],
        ['audio/b', 'ben', 'Two\nlines', 3], // named where the row starts
      ],
    );
    assert.deepEqual(
      m.skipped.map((s) => [s.line, s.reason]),
      [
        [5, 'malformed_row'],
        [6, 'path_escapes_root'],
      ],
    );
  }
  // A quote opened and never closed is named on the row where it opens, not at the end of the file.
  writeFileSync(
    join(dir, 'unclosed.csv'),
    'transcript,who,file\nFine.,anna,audio/a.wav\n"Two\nlines",ben,audio/b.wav\n"Never closed,carl,audio/a.wav\n' +
      'More.,anna,audio/a.wav\nAnd more.,ben,audio/b.wav\n',
  );
  assert.throws(
    () => buildManifest(dir, dataset({ format: 'csv', metadata: 'unclosed.csv', columns })),
    (e: Error & { code?: string; position?: { line?: number } }) =>
      e.code === 'DATASET_CSV' &&
      e.position?.line === 5 &&
      e.message.startsWith(`${join(dir, 'unclosed.csv')}:5: the row starting here opens a quoted field`),
  );
  assert.throws(
    () => buildManifest(dir, dataset({ format: 'csv', metadata: 'nope.csv', columns })),
    (e: Error & { code?: string }) => e.code === 'DATASET_METADATA_MISSING',
  );
  // A folder where the metadata file should be is called one (not 'not found', beside 'the folder has it').
  mkdirSync(join(dir, 'folder.csv'), { recursive: true });
  assert.throws(
    () => buildManifest(dir, dataset({ format: 'csv', metadata: 'folder.csv', columns })),
    (e: Error & { code?: string }) =>
      e.code === 'DATASET_METADATA_MISSING' &&
      e.message === `${join(dir, 'folder.csv')} is a folder, not a metadata file`,
  );
  assert.throws(
    () =>
      buildManifest(
        dir,
        dataset({ format: 'csv', metadata: 'transcripts.csv', columns: { ...columns, text: 'sentence' } }),
      ),
    (e: Error & { code?: string }) =>
      e.code === 'DATASET_HEADER' &&
      /no "sentence" column for the text \(dataset\.columns\.text\); the header has transcript, who, file/.test(
        e.message,
      ),
  );
});
