// describeDataset: the line a command prints about the dataset it found, and its warnings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeDataset, speechLength } from '../../src/core/data/describe.js';
import type { PreparedDataset, PreparedItem } from '../../src/core/data/prepare.js';

let clipCount = 0;
const item = (durationS: number) => ({ durationS, id: `c${clipCount}`, featureKey: `k${clipCount++}` }) as PreparedItem;

function dataset(o: {
  train: number[];
  validation: number[];
  skipped?: number;
  speakers?: string[];
  languages?: string[];
  split?: PreparedDataset['manifest']['split'];
  format?: PreparedDataset['manifest']['format'];
  sourceNotes?: PreparedDataset['sourceNotes'];
}): PreparedDataset {
  return {
    train: o.train.map(item),
    validation: o.validation.map(item),
    skipped: Array.from({ length: o.skipped ?? 0 }, (_, i) => ({
      file: '/data/metadata.csv',
      line: i + 2,
      id: `LJ${i}`,
      reason: 'missing_audio',
      detail: i === 0 ? 'wavs/LJ0.wav does not exist' : '',
    })),
    speakers: o.speakers ?? ['default'],
    languages: o.languages ?? ['en'],
    manifest: { format: o.format ?? 'vctk', split: o.split ?? { source: 'seeded', seed: 1, fraction: 0.05 } },
    sourceNotes: o.sourceNotes ?? {},
  } as unknown as PreparedDataset;
}

test('speechLength: seconds, minutes, hours', () => {
  assert.equal(speechLength(42.4), '42 s');
  assert.equal(speechLength(750), '12.5 min');
  assert.equal(speechLength(3.2 * 3600), '3.2 h');
});

test('the line: layout, rows, hours per split, speakers, languages, skipped rows', () => {
  const d = describeDataset(
    dataset({
      train: [3600, 3600, 1800],
      validation: [90],
      skipped: 2,
      speakers: ['p225', 'p226'],
      languages: ['en', 'fr'],
    }),
  );
  assert.equal(
    d.line,
    'data: VCTK, 6 rows: 3 training (2.5 h) and 1 validation (1.5 min) utterances, 2 speakers, 2 languages ' +
      '(en, fr); 2 rows skipped (`xtts analyze-data-pipeline` lists them with their reasons)',
  );
  // The skipped rows are named where they are (the reason's detail, else its code).
  assert.deepEqual(d.warnings, [
    '2 rows skipped: /data/metadata.csv:2 (LJ0): wavs/LJ0.wav does not exist; /data/metadata.csv:3 (LJ1): ' +
      'missing_audio (--strict refuses a dataset with any)',
  ]);
  const five = describeDataset(dataset({ train: [1], validation: [1], skipped: 5 }));
  assert.match(five.warnings[0], /^5 rows skipped: .*metadata\.csv:4 \(LJ2\): missing_audio; and 2 more \(--strict/);
  const many = describeDataset(dataset({ train: [1], validation: [1], languages: ['a', 'b', 'c', 'd', 'e', 'f'] }));
  assert.match(many.line, /1 speaker, 6 languages; 0 rows skipped$/);
});

test('no validation utterance is a warning naming the key, for a seeded split and for a validation file', () => {
  const seeded = describeDataset(dataset({ train: [2, 2, 2], validation: [] }));
  assert.match(seeded.warnings[0], /dataset\.validation_fraction 0\.05 drew none of the 3 usable rows/);
  const file = describeDataset(dataset({ train: [2], validation: [], split: { source: 'file' } }));
  assert.match(file.warnings[0], /the validation metadata gave no usable row/);
});

test('clips recorded below the model rate, and 8-bit ones, are warnings naming the lowest rate and an example', () => {
  const d = describeDataset(
    dataset({
      train: [2, 2, 2],
      validation: [2],
      sourceNotes: {
        belowRate: { clips: 3, lowestHz: 8000, modelHz: 22050, example: '/data/wavs/phone.wav' },
        eightBit: { clips: 1, example: '/data/wavs/old.wav' },
      },
    }),
  );
  assert.deepEqual(d.warnings, [
    "3 clips were recorded below the model's 22050 Hz (the lowest at 8000 Hz: /data/wavs/phone.wav): upsampled, " +
      'they hold nothing above 4000 Hz, and the model learns that muffled sound as part of the voice. Leave them ' +
      'out, or train at their rate (audio.sample_rate_hz)',
    '1 clip is 8-bit PCM (e.g. /data/wavs/old.wav): its quantisation hiss, about 48 dB below full scale, is learnt ' +
      'as part of the voice. Use 16-bit recordings where there are any, or leave these out',
  ]);
});

test('speakers whose names differ only in case are a warning naming them with their utterances', () => {
  const d = dataset({ train: [2, 2, 2, 2], validation: [2], speakers: ['Alice', 'alice', 'bob'] });
  // Speaker indices: train Alice, Alice, alice, bob; validation Alice.
  for (const [i, s] of [0, 0, 1, 2].entries()) (d.train[i] as { speaker: number }).speaker = s;
  (d.validation[0] as { speaker: number }).speaker = 0;
  assert.deepEqual(describeDataset(d).warnings, [
    'speakers whose names differ only in case are trained as separate voices: Alice (3 utterances), alice ' +
      '(1 utterance). If each is one person, write one name',
  ]);
});

test("rows whose audio is another row's byte for byte are a warning, saying when a copy crosses the splits", () => {
  const d = dataset({ train: [2, 2, 2], validation: [2] });
  for (const [i, [id, key]] of [
    ['a', 'k1'],
    ['b', 'k2'],
    ['a-copy', 'k1'],
  ].entries())
    Object.assign(d.train[i], { id, featureKey: key });
  Object.assign(d.validation[0], { id: 'b-again', featureKey: 'k2' });
  assert.deepEqual(describeDataset(d).warnings, [
    "2 rows repeat another row's audio byte for byte (e.g. a and a-copy); 1 of them across training and " +
      'validation, so the validation loss is measured on audio the model trains on. Remove the copies',
  ]);
});

test('a speaker whose rows all went to validation is named: the model never trains on that voice', () => {
  const d = dataset({ train: [2, 2, 2], validation: [2, 2], speakers: ['alice', 'bob', 'dave'] });
  d.train.forEach((it, i) => Object.assign(it, { speaker: i % 2 }));
  d.validation.forEach((it, i) => Object.assign(it, { speaker: i === 0 ? 0 : 2 }));
  const { warnings } = describeDataset(d);
  assert.deepEqual(
    warnings.filter((w) => w.includes('no training utterance')),
    [
      '1 speaker has no training utterance (all their rows were drawn for validation): dave. The model never ' +
        "trains on that voice, and a checkpoint's voice for them is read from their validation clips. Give them " +
        'more clips, or lower dataset.validation_fraction',
    ],
  );
  d.train[0].speaker = 2;
  assert.ok(!describeDataset(d).warnings.some((w) => w.includes('no training utterance')));
});
