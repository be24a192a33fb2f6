import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { buildManifest, detectFormat, inValidationSplit } from '../../src/core/data/manifest.js';
import type { DatasetConfig } from '../../src/core/config/schema.js';
import type { XttsError } from '../../src/core/errors.js';
import { writeToneWav } from '../helpers/wav.js';

const dataset = (over: Partial<DatasetConfig> = {}): DatasetConfig => ({
  path: '.',
  format: 'auto',
  metadata: 'metadata.csv',
  validation_metadata: null,
  validation_fraction: 0,
  split_seed: 1,
  follow_symlinks: false,
  language: 'en',
  language_source: 'fixed',
  columns: { audio: 'audio', text: 'text', speaker: null, language: null },
  ...over,
});

function makeDataset(metadata: string, wavs: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-ds-'));
  mkdirSync(join(dir, 'wavs'));
  for (const w of wavs) writeToneWav(join(dir, 'wavs', `${w}.wav`), 0.5);
  writeFileSync(join(dir, 'metadata.csv'), metadata);
  return dir;
}

test('LJSpeech rows with BOM, CRLF and a header; normalized text preferred', () => {
  const dir = makeDataset('\ufeffid|text|normalized_text\r\nA1|Dr. Who|Doctor Who\r\nA2|Plain text|\r\n', ['A1', 'A2']);
  const m = buildManifest(dir, dataset());
  assert.equal(m.format, 'ljspeech');
  assert.deepEqual(
    m.train.map((r) => [r.id, r.text, r.line]),
    [
      ['A1', 'Doctor Who', 2],
      ['A2', 'Plain text', 3],
    ],
  );
  assert.deepEqual(m.skipped, []);
});

test('a metadata name that is a folder is refused as one', () => {
  const dir = makeDataset('A1|x|x\n', ['A1']);
  mkdirSync(join(dir, 'meta.csv'));
  assert.throws(() => buildManifest(dir, dataset({ format: 'ljspeech', metadata: 'meta.csv' })), {
    code: 'DATASET_METADATA_MISSING',
    message: `${join(dir, 'meta.csv')} is a folder, not a metadata file`,
  });
});

test('every manifest-level skip reason is produced, with line and id, and good rows are kept', () => {
  const meta = [
    'G1|good one',
    'G2|good two',
    'G1|duplicate of the first',
    'M1|no audio file',
    'E1|   ',
    'X1|too|many|columns|here|and|more',
    '../../etc/passwd|escape attempt',
    'G3|good three',
  ].join('\n');
  const dir = makeDataset(meta, ['G1', 'G2', 'G3', 'E1']);
  const m = buildManifest(dir, dataset({ format: 'ljspeech' }));
  assert.deepEqual(
    m.train.map((r) => r.id),
    ['G1', 'G2', 'G3'],
  );
  const got = m.skipped.map((s) => `${s.line}:${s.id}:${s.reason}`).sort();
  assert.deepEqual(
    got,
    [
      '3:G1:duplicate_id',
      '4:M1:missing_audio',
      '5:E1:empty_text',
      '6:X1:malformed_row',
      '7:../../etc/passwd:path_escapes_root',
    ].sort(),
  );
  assert.ok(m.skipped.every((s) => s.file.endsWith('metadata.csv') && s.detail.length > 0));
});

test('an id written with its folder or its .wav, whose file is in wavs/, is skipped with the id to write', () => {
  const dir = makeDataset('B1.wav|with the extension\nwavs/B2|with the folder\nB3|as it should be\nB4.wav|nowhere\n', [
    'B1',
    'B2',
    'B3',
  ]);
  const m = buildManifest(dir, dataset({ format: 'ljspeech' }));
  assert.deepEqual(
    m.train.map((r) => r.id),
    ['B3'],
  );
  const detail = (id: string) => m.skipped.find((r) => r.id === id)!.detail;
  assert.equal(
    detail('B1.wav'),
    `${join(dir, 'B1.wav')} does not exist, but ${join('wavs', 'B1.wav')} does: write the id as B1 (an id names ` +
      'wavs/<id>.wav; one ending in .wav, a file in the dataset folder itself)',
  );
  assert.match(detail('wavs/B2'), /wavs\/wavs\/B2\.wav does not exist, but wavs\/B2\.wav does: write the id as B2 /);
  assert.equal(detail('B4.wav'), `${join(dir, 'B4.wav')} does not exist`);
});

test('multi-speaker formats: id|text|normalized|speaker and wav_path|speaker|text', () => {
  const d1 = makeDataset('a|x|y|alice\nb|x|y|bob\n', ['a', 'b']);
  const m1 = buildManifest(d1, dataset());
  assert.equal(m1.format, 'ljspeech_multispeaker');
  assert.deepEqual(
    m1.train.map((r) => r.speaker),
    ['alice', 'bob'],
  );
  const d2 = makeDataset('wavs/a.wav|alice|hello there\nwavs/b.wav|bob|general kenobi\n', ['a', 'b']);
  const m2 = buildManifest(d2, dataset());
  assert.equal(m2.format, 'wav_path_speaker_text');
  assert.deepEqual(
    m2.train.map((r) => [r.id, r.speaker, r.text]),
    [
      ['wavs/a', 'alice', 'hello there'],
      ['wavs/b', 'bob', 'general kenobi'],
    ],
  );
  assert.equal(detectFormat(['x|y']), 'ljspeech');
});

test('speaker names are one voice however typed; an empty speaker is skipped where others are named', () => {
  // "Zoë" composed and decomposed, with a zero-width space, a BOM and a no-break space: one speaker.
  const composed = 'Zo\u00eb Smith';
  const decomposed = 'Zoe\u0308 Smith';
  const d = makeDataset(
    `a|x|y|${composed}\nb|x|y|${decomposed}\nc|x|y|Zo\u00eb\u200b Smith\nd|x|y|\ufeffZo\u00eb\u00a0 Smith \n` +
      'e|x|y|\nf|x|y|bob\n',
    ['a', 'b', 'c', 'd', 'e', 'f'],
  );
  const m = buildManifest(d, dataset());
  assert.deepEqual(
    m.train.map((r) => [r.id, r.speaker]),
    [
      ['a', composed],
      ['b', composed],
      ['c', composed],
      ['d', composed],
      ['f', 'bob'],
    ],
  );
  assert.deepEqual(
    m.skipped.map((r) => [r.line, r.id, r.reason]),
    [[5, 'e', 'no_speaker']],
  );
  assert.match(m.skipped[0].detail, /speaker column is empty; other rows name their speaker \(line 1: "Zoë Smith"\)/);
  // No row names a speaker: one voice, "default", and nothing skipped.
  const none = buildManifest(makeDataset('a|x|y| \nb|x|y|\n', ['a', 'b']), dataset());
  assert.deepEqual(
    none.train.map((r) => r.speaker),
    ['default', 'default'],
  );
  assert.equal(none.skipped.length, 0);
});

test('the seeded split is stable: adding rows never moves existing ones', () => {
  const ids = Array.from({ length: 400 }, (_, i) => `U${i}`);
  const before = ids.filter((id) => inValidationSplit(id, 7, 0.1));
  const more = [...ids, ...Array.from({ length: 100 }, (_, i) => `V${i}`)];
  const after = more.filter((id) => inValidationSplit(id, 7, 0.1));
  assert.deepEqual(
    after.filter((id) => id.startsWith('U')),
    before,
  );
  assert.ok(before.length > 20 && before.length < 60, `~10% of 400, got ${before.length}`);
  assert.notDeepEqual(
    ids.filter((id) => inValidationSplit(id, 8, 0.1)),
    before,
    'another seed gives another split',
  );
});

test('a separate validation file is used as given; ids may not repeat across files', () => {
  const dir = makeDataset('A|one\nB|two\n', ['A', 'B', 'C']);
  writeFileSync(join(dir, 'val.csv'), 'C|three\nA|again\n');
  const m = buildManifest(dir, dataset({ validation_metadata: 'val.csv' }));
  assert.deepEqual(
    m.train.map((r) => r.id),
    ['A', 'B'],
  );
  assert.deepEqual(
    m.validation.map((r) => r.id),
    ['C'],
  );
  assert.deepEqual(
    m.skipped.map((s) => [s.id, s.reason, s.line]),
    [['A', 'duplicate_id', 2]],
  );
});

test('a missing dataset folder is an XttsError with a suggestion', () => {
  assert.throws(
    () => buildManifest('/nonexistent/xtts', dataset()),
    (e: Error & { code?: string; suggestions?: string[] }) =>
      e.code === 'DATASET_NOT_FOUND' && (e.suggestions?.length ?? 0) > 0,
  );
});

test('an "audio file" that is a folder, a FIFO or a looping link is named as what it is, and never read', () => {
  const dir = makeDataset('F1|a folder\nP1|a pipe\nL1|a loop\nG1|good\n', ['G1']);
  mkdirSync(join(dir, 'wavs', 'F1.wav'));
  execFileSync('mkfifo', [join(dir, 'wavs', 'P1.wav')]);
  symlinkSync('L1.wav', join(dir, 'wavs', 'L1.wav'));
  const m = buildManifest(dir, dataset());
  assert.deepEqual(
    m.train.map((r) => r.id),
    ['G1'],
  );
  const detail = Object.fromEntries(m.skipped.map((s) => [s.id, s.detail]));
  assert.match(detail.F1, /is a folder, not an audio file/);
  assert.match(detail.P1, /is a named pipe \(FIFO\), not an audio file/);
  assert.match(detail.L1, /is a symbolic link that loops/);
});

test(
  'one Latin-1 line costs that line alone, named with its number; a BOM stays off ' +
    'the first id; a file with no UTF-8 line is refused whole',
  () => {
    const dir = makeDataset('', ['A1', 'B2', 'C3']);
    const latin1 = Buffer.from('B2|Caf\xe9 au lait\n', 'latin1');
    writeFileSync(
      join(dir, 'metadata.csv'),
      Buffer.concat([
        Buffer.from('\ufeffA1|na\u00efve caf\u00e9\r\n', 'utf8'),
        latin1,
        Buffer.from('C3|plain\n', 'utf8'),
      ]),
    );
    const m = buildManifest(dir, dataset());
    assert.deepEqual(
      m.train.map((r) => [r.id, r.text]),
      [
        ['A1', 'na\u00efve caf\u00e9'],
        ['C3', 'plain'],
      ],
    );
    assert.equal(m.skipped.length, 1);
    const s = m.skipped[0];
    assert.deepEqual([s.line, s.id, s.reason], [2, 'B2', 'not_utf8']);
    assert.match(s.detail, /byte 7 of the line is not UTF-8 \(read as Latin-1 it says "B2\|Café au lait"\)/);
    assert.match(s.detail, /sed -n 2p FILE \| iconv -f LATIN1 -t UTF-8/);

    writeFileSync(join(dir, 'metadata.csv'), Buffer.from('A1|Caf\xe9\nB2|d\xe9j\xe0\n', 'latin1'));
    assert.throws(
      () => buildManifest(dir, dataset()),
      (e: Error & { code?: string }) => e.code === 'DATASET_METADATA_NOT_UTF8' && /none of its lines/.test(e.message),
    );

    // The first line is a row like any other (it was taken for a blank line before the rows, and lost unnamed).
    writeFileSync(
      join(dir, 'metadata.csv'),
      Buffer.concat([Buffer.from('\n'), latin1, Buffer.from('A1|plain\nC3|plain too\n', 'utf8')]),
    );
    const firstBad = buildManifest(dir, dataset());
    assert.deepEqual(
      firstBad.train.map((r) => r.id),
      ['A1', 'C3'],
    );
    assert.deepEqual(
      firstBad.skipped.map((r) => [r.line, r.id, r.reason]),
      [[2, 'B2', 'not_utf8']],
    );
  },
);

test('a metadata file in UTF-16 (with a byte-order mark or without) is refused with the command converting it', () => {
  const dir = makeDataset('', ['A1', 'B2']);
  const text = 'A1|one\r\nB2|two\r\n';
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
  const beNoMark = Buffer.from(text, 'utf16le').swap16();
  for (const [bytes, encoding] of [
    [le, 'UTF-16LE'],
    [Buffer.from(text, 'utf16le'), 'UTF-16LE'],
    [beNoMark, 'UTF-16BE'],
  ] as const) {
    writeFileSync(join(dir, 'metadata.csv'), bytes);
    assert.throws(
      () => buildManifest(dir, dataset()),
      (e: XttsError) =>
        e.code === 'DATASET_METADATA_NOT_UTF8' &&
        e.message.includes(`is ${encoding} text, not UTF-8`) &&
        e.suggestions.some((s) => s.includes('iconv -f UTF-16 -t UTF-8')),
      encoding,
    );
  }
  // UTF-8 text is not taken for UTF-16.
  writeFileSync(join(dir, 'metadata.csv'), text);
  assert.deepEqual(
    buildManifest(dir, dataset()).train.map((r) => r.id),
    ['A1', 'B2'],
  );
});

test(
  'audio that resolves through a symbolic link to outside the dataset folder is ' +
    'skipped as path_escapes_root unless dataset.follow_symlinks; links inside it ' +
    'are read',
  () => {
    const dir = makeDataset('OUT|linked from elsewhere\nIN|linked inside\nUP|under a linked folder\nG1|good\n', ['G1']);
    const elsewhere = mkdtempSync(join(tmpdir(), 'xtts-elsewhere-'));
    writeToneWav(join(elsewhere, 'secret.wav'), 0.5);
    symlinkSync(join(elsewhere, 'secret.wav'), join(dir, 'wavs', 'OUT.wav'));
    symlinkSync('G1.wav', join(dir, 'wavs', 'IN.wav'));
    // wavs/UP.wav as a real file under a folder that is itself a link to elsewhere.
    mkdirSync(join(elsewhere, 'sub'));
    writeToneWav(join(elsewhere, 'sub', 'UP.wav'), 0.5);
    writeFileSync(
      join(dir, 'metadata.csv'),
      'OUT|linked from elsewhere\nIN|linked inside\nlinked/UP|under a linked folder\nG1|good\n',
    );
    symlinkSync(join(elsewhere, 'sub'), join(dir, 'wavs', 'linked'));
    const strict = buildManifest(dir, dataset());
    assert.deepEqual(strict.train.map((r) => r.id).sort(), ['G1', 'IN']);
    const detail = Object.fromEntries(strict.skipped.map((s) => [s.id, s]));
    for (const id of ['OUT', 'linked/UP']) {
      assert.equal(detail[id]?.reason, 'path_escapes_root', JSON.stringify(strict.skipped));
      assert.match(detail[id].detail, /symbolic link .* outside .*dataset\.follow_symlinks: true/);
    }
    const followed = buildManifest(dir, dataset({ follow_symlinks: true }));
    assert.deepEqual(followed.train.map((r) => r.id).sort(), ['G1', 'IN', 'OUT', 'linked/UP']);
  },
);

test(
  'a metadata file linked from outside the dataset folder is refused unless dataset.follow_symlinks; a name the ' +
    'config points outside with, and a link inside the folder, are read',
  () => {
    const dir = makeDataset('', ['G1']);
    const elsewhere = mkdtempSync(join(tmpdir(), 'xtts-elsewhere-'));
    writeFileSync(join(elsewhere, 'secret.txt'), 'G1|not for a report\n');
    rmSync(join(dir, 'metadata.csv'));
    symlinkSync(join(elsewhere, 'secret.txt'), join(dir, 'metadata.csv'));
    assert.throws(
      () => buildManifest(dir, dataset()),
      (e: Error & { code?: string }) =>
        e.code === 'DATASET_METADATA_LINKED' && e.message.includes(`to ${join(elsewhere, 'secret.txt')}, outside`),
    );
    for (const format of ['csv', 'common_voice', 'ljspeech'] as const)
      assert.throws(
        () => buildManifest(dir, dataset({ format })),
        (e: Error & { code?: string }) => e.code === 'DATASET_METADATA_LINKED',
        format,
      );
    assert.deepEqual(
      buildManifest(dir, dataset({ follow_symlinks: true })).train.map((r) => r.id),
      ['G1'],
    );
    const inside = makeDataset('', ['G1']);
    writeFileSync(join(inside, 'real.csv'), 'G1|linked inside\n');
    rmSync(join(inside, 'metadata.csv'));
    symlinkSync('real.csv', join(inside, 'metadata.csv'));
    assert.deepEqual(
      buildManifest(inside, dataset()).train.map((r) => r.text),
      ['linked inside'],
    );
    // The config's own path out of the folder is the user's choice.
    const byName = buildManifest(dir, dataset({ metadata: relative(dir, join(elsewhere, 'secret.txt')) }));
    assert.deepEqual(
      byName.train.map((r) => r.id),
      ['G1'],
    );
  },
);

test('a validation metadata file that is the training metadata itself is refused, naming both ways out', () => {
  const dir = makeDataset('A|one\nB|two\n', ['A', 'B']);
  assert.throws(
    () => buildManifest(dir, dataset({ validation_metadata: './metadata.csv' })),
    (e: Error & { code?: string; suggestions?: string[] }) =>
      e.code === 'DATASET_VALIDATION_METADATA' &&
      /names the training metadata itself/.test(e.message) &&
      /validation_metadata: null/.test(e.suggestions?.[0] ?? ''),
  );
});

test('classic Mac line ends (CR alone) read as lines; a dataset path that is a looping link says so', () => {
  const dir = makeDataset('', ['A1', 'B2']);
  writeFileSync(join(dir, 'metadata.csv'), 'A1|one\rB2|two\r');
  assert.deepEqual(
    buildManifest(dir, dataset()).train.map((r) => [r.id, r.text]),
    [
      ['A1', 'one'],
      ['B2', 'two'],
    ],
  );
  const loop = join(dir, 'loop');
  symlinkSync(loop, loop);
  assert.throws(
    () => buildManifest(loop, dataset()),
    (e: XttsError) =>
      e.code === 'DATASET_NOT_FOUND' &&
      e.message.includes('is a symbolic link to nothing that exists (or one that loops)'),
  );
});
