// `xtts analyze-data-pipeline` as a process: it measures every stage on the quickstart data, grades
// the ring against a consumer's step, reports skipped rows with positions, and the utility binary
// gives the same envelope shape.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot, runCli, hasStackTrace } from '../helpers/cli.js';
import { joinedRegExp } from '../helpers/regexp.js';

const quick = join(repoRoot, 'configs', 'quickstart');

function dataset(extraRows: string[] = []): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-analyze-'));
  mkdirSync(join(dir, 'wavs'));
  for (const f of readdirSync(join(quick, 'wavs')).slice(0, 12))
    copyFileSync(join(quick, 'wavs', f), join(dir, 'wavs', f));
  const rows = readFileLines(join(quick, 'metadata.csv')).slice(0, 12);
  writeFileSync(join(dir, 'metadata.csv'), [...rows, ...extraRows].join('\n') + '\n');
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}\ndataset:\n  ` +
      `path: ${dir}\npipeline:\n  cache:\n    path: ${join(dir, 'cache.sqlite')}\n`,
  );
  return { dir, config };
}

/**
 * analyze-data-pipeline on `config` for `batches` batches of 200 ms steps (one loader thread assembles a batch in
 * 10–50 ms here, more while CI runs a bundle build beside it).
 */
function analyze(config: string, batches: number, ...more: string[]): string[] {
  return ['analyze-data-pipeline', '--config', config, '--step-ms', '200', '--batches', String(batches), ...more];
}

function readFileLines(p: string): string[] {
  return readFileSync(p, 'utf8').trim().split('\n');
}

test('measures every stage and grades a generous step as not input-bound', async () => {
  const { config } = dataset();
  const r = await runCli(analyze(config, 12, '--json'));
  assert.equal(r.code, 0, r.stderr);
  const a = r.json.result;
  const stages = a.stages.map((s: { stage: string }) => s.stage);
  for (const name of [
    'manifest',
    'text front end, cold',
    'text front end, warm',
    'audio read',
    'audio decode',
    'resample',
    'trim',
    'log-mel',
    'batch assembly',
  ]) {
    assert.ok(
      stages.some((s: string) => s.startsWith(name) || s.includes(name)),
      `stage ${name} missing: ${stages}`,
    );
  }
  const mel = a.stages.find((s: { stage: string }) => s.stage === 'log-mel');
  assert.equal(mel.ms.n, 12);
  assert.ok(mel.ms.p95 >= mel.ms.p50 && mel.ms.max >= mel.ms.p95 && mel.ms.cv >= 0);
  assert.equal(a.ring.stepMs, 200);
  assert.equal(a.ring.batches, 12);
  assert.equal(a.ring.grade, 'not');
  assert.ok(a.ring.waitShare < 0.05);
  assert.equal(a.rows.train + a.rows.validation, 12);
});

test('skipped rows are listed with file:line and reason; --strict exits 1', async () => {
  const { dir, config } = dataset(['QS-999|Missing audio.|Missing audio.', 'QS-001|Duplicate.|Duplicate.']);
  const r = await runCli(analyze(config, 4), {
    cwd: dir,
  });
  assert.equal(r.code, 0, r.stderr);
  // What it found, in one line: layout, rows, hours, speakers and languages, skipped rows.
  assert.match(
    r.stdout,
    joinedRegExp(
      /data: LJSpeech metadata \(id\|text\|normalized text\), 14 rows: \d+ training \([\d.]+ (s|min)\) and /,
      /\d+ validation \([\d.]+ (s|min)\) utterances, 1 speaker, 1 language \([\w-]+\); 2 rows skipped/,
    ),
  );
  assert.match(r.stdout, /metadata\.csv:13 .*QS-999 .*missing_audio/);
  assert.match(r.stdout, /metadata\.csv:14 .*QS-001 .*duplicate_id/);
  const strict = await runCli(analyze(config, 4, '--strict', '--json'));
  assert.equal(strict.code, 1);
  assert.equal(strict.json.result.skipped.length, 2);
});

test('a dataset with no usable row says why in the error itself: the reasons, counted, and the first row', async () => {
  const { dir, config } = dataset();
  rmSync(join(dir, 'wavs'), { recursive: true });
  const r = await runCli(['analyze-data-pipeline', '--config', config, '--json']);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.json.error.code, 'DATASET_EMPTY');
  assert.match(
    r.json.error.message,
    joinedRegExp(
      /no usable training rows in .* \(12 skipped: 12 missing_audio\); first: /,
      /.*metadata\.csv:1 \(QS-\d+\): missing_audio — .*wavs\/QS-\d+\.wav does not exist/,
    ),
  );
  // It does not send the user to the command that just failed.
  assert.doesNotMatch(r.json.error.suggestions.join(' '), /analyze-data-pipeline/);
});

test(
  'a Common Voice release and a CSV with its own header names are found without settings; a header without a text ' +
    'column and a missing metadata file name the keys to set',
  async () => {
    const lines = readFileLines(join(quick, 'metadata.csv')).slice(0, 6);
    const args = (dir: string) => [
      'analyze-data-pipeline',
      '--config',
      join(repoRoot, 'configs', 'quickstart.yaml'),
      '--dataset',
      dir,
      '--set',
      `pipeline.cache.path=${join(dir, 'cache.sqlite')}`,
      '--step-ms',
      '200',
      '--batches',
      '2',
    ];
    // Common Voice: clips/*.mp3 (sox writes them) and validated.tsv, no metadata.csv.
    const cv = mkdtempSync(join(tmpdir(), 'xtts-analyze-cv-'));
    mkdirSync(join(cv, 'clips'));
    const tsv = ['client_id\tpath\tsentence_id\tsentence\tup_votes\tdown_votes\tlocale'];
    lines.forEach((row, i) => {
      const [id, text] = row.split('|');
      execFileSync('sox', [join(quick, 'wavs', `${id}.wav`), join(cv, 'clips', `cv_${id}.mp3`)]);
      tsv.push(`speaker${i % 2}\tcv_${id}.mp3\ts${i}\t${text}\t2\t0\ten`);
    });
    writeFileSync(join(cv, 'validated.tsv'), `${tsv.join('\n')}\n`);
    const found = await runCli(args(cv));
    assert.equal(found.code, 0, found.stderr);
    assert.match(
      found.stdout,
      /data: a Common Voice release \(validated\.tsv\), 6 rows: .* 2 speakers, 1 language \(en\); 0 rows skipped/,
    );
    // A CSV whose header says file, transcript and speaker_id.
    const csv = mkdtempSync(join(tmpdir(), 'xtts-analyze-csv-'));
    mkdirSync(join(csv, 'audio'));
    const rows = lines.map((row, i) => {
      const [id, text] = row.split('|');
      copyFileSync(join(quick, 'wavs', `${id}.wav`), join(csv, 'audio', `${id}.wav`));
      return `audio/${id}.wav,"${text}",reader${i % 3}`;
    });
    writeFileSync(join(csv, 'metadata.csv'), `file,transcript,speaker_id\n${rows.join('\n')}\n`);
    const named = await runCli(args(csv));
    assert.equal(named.code, 0, named.stderr);
    assert.match(
      named.stdout,
      joinedRegExp(
        /data: a CSV with a header \(audio: file, text: transcript, speaker: speaker_id\), /,
        /6 rows: .* 3 speakers, .*; 0 rows/,
      ),
    );
    // A header with no text column xtts knows: the key to set, not six rows rejected as LJSpeech.
    writeFileSync(join(csv, 'metadata.csv'), `file,words,speaker_id\n${rows.join('\n')}\n`);
    const header = await runCli([...args(csv), '--json']);
    assert.equal(header.code, 2, header.stderr);
    assert.equal(header.json.error.code, 'DATASET_HEADER');
    assert.match(
      header.json.error.message,
      /is a header \(file, words, speaker_id\) with no column xtts reads as the text/,
    );
    assert.match(header.json.error.suggestions.join(' '), /set dataset\.columns\.text to the header's name/);
    // Doing so is enough: the header's other columns are still found by their names.
    const told = await runCli([...args(csv), '--set', 'dataset.columns.text=words', '--json']);
    assert.equal(told.code, 0, told.stderr);
    assert.match(told.json.result.dataset.line, /6 rows: .*; 0 rows skipped/);
    // No metadata.csv and no release TSV: the key that names the file, and the files that are there.
    rmSync(join(csv, 'metadata.csv'));
    writeFileSync(join(csv, 'lines.tsv'), 'x');
    const missing = await runCli([...args(csv), '--json']);
    assert.equal(missing.json.error.code, 'DATASET_METADATA_MISSING');
    assert.match(missing.json.error.suggestions.join(' '), /set dataset\.metadata .*\(the folder has lines\.tsv\)/);
  },
);

test('FLAC, MP3, Ogg Vorbis and Opus rows are decoded and timed like WAV, the decode stage names them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-analyze-compressed-'));
  mkdirSync(join(dir, 'clips'));
  const rows = readFileLines(join(quick, 'metadata.csv'))
    .slice(0, 8)
    .map((row, i) => {
      const [id, text] = row.split('|');
      // sox and opusenc (not xtts) write the compressed files.
      const kind = ['flac', 'mp3', 'ogg', 'opus'][i % 4];
      const file = `clips/${id}.${kind}`;
      const wav = join(quick, 'wavs', `${id}.wav`);
      if (kind === 'opus') execFileSync('opusenc', ['--quiet', wav, join(dir, file)]);
      else execFileSync('sox', [wav, join(dir, file)]);
      return `${file}|speaker-a|${text}`;
    });
  writeFileSync(join(dir, 'metadata.csv'), `${rows.join('\n')}\n`);
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}\ndataset:\n  path: ${dir}\n` +
      `pipeline:\n  cache:\n    path: ${join(dir, 'cache.sqlite')}\n`,
  );
  const r = await runCli(analyze(config, 2, '--json'));
  assert.equal(r.code, 0, r.stderr);
  const a = r.json.result;
  assert.equal(a.audio.files, 8);
  assert.ok(a.audio.audioSeconds > 8, JSON.stringify(a.audio));
  const decode = a.stages.find((s: { stage: string }) => s.stage.startsWith('audio decode'));
  // Each container counted (in the order the decoders met them, which concurrent decoding does not fix).
  const counted = /^audio decode \((.*)\)$/.exec(decode.stage)?.[1].split(', ').sort();
  assert.deepEqual(counted, ['2 flac', '2 mp3', '2 ogg-opus', '2 ogg-vorbis'], decode.stage);
  assert.equal(decode.ms.n, 8);
  assert.match(a.dataset.line, /metadata of audio paths .* 8 rows: .*1 speaker/);
});

test('no validation row drawn is a warning that names the key to change', async () => {
  const { config } = dataset();
  const args = ['--config', config, '--set', 'dataset.validation_fraction=0', '--step-ms', '200', '--batches', '2'];
  const r = await runCli(['analyze-data-pipeline', ...args, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.json.result.dataset.line,
    /12 rows: 12 training \([\d.]+ (s|min)\) and 0 validation \(0 s\) utterances/,
  );
  assert.match(
    r.json.result.dataset.warnings.join(' '),
    joinedRegExp(
      /no validation utterances: dataset\.validation_fraction 0 drew none of the 12 usable rows.*/,
      /Raise dataset\.validation_fraction/,
    ),
  );
  // The envelope's warnings carry them too (docs/exit-codes.md), as train's do.
  assert.deepEqual(r.json.warnings, r.json.result.dataset.warnings);
  const human = await runCli(['analyze-data-pipeline', ...args]);
  assert.match(human.stdout, /warning: no validation utterances/);
  assert.equal(human.stdout.match(/warning: no validation utterances/g)?.length, 1);
  assert.doesNotMatch(human.stderr, /no validation utterances/);
  // A batch larger than the training set is measured as train would use it: the training set, said so.
  const big = await runCli(['analyze-data-pipeline', ...args, '--set', 'batching.batch_size=1000', '--json']);
  assert.equal(big.code, 0, big.stderr);
  assert.ok(
    big.json.result.dataset.warnings.some((w: string) => /batch_size 1000 is more than the 12 training utter/.test(w)),
    big.json.result.dataset.warnings.join('\n'),
  );
  for (const shape of big.json.result.buckets.shapes) assert.ok(shape.batchSize <= 12, JSON.stringify(shape));
});

test('a missing dataset and a bad flag are clear errors without stack traces', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-analyze-bad-'));
  const config = join(dir, 'c.yaml');
  writeFileSync(config, `extends: ${join(repoRoot, 'configs', 'quickstart.yaml')}\ndataset:\n  path: ./nowhere\n`);
  const r = await runCli(['analyze-data-pipeline', '--config', config, '--json']);
  assert.equal(r.code, 2);
  assert.equal(r.json.error.code, 'DATASET_NOT_FOUND');
  const bad = await runCli(['analyze-data-pipeline', '--config', config, '--step-ms', 'fast']);
  assert.equal(bad.code, 2);
  assert.ok(!hasStackTrace(bad.stdout + bad.stderr));
  // A config `train` refuses over its texts or features is refused here too, before any timing, naming the key.
  const { config: good } = dataset();
  const german = await runCli([
    'analyze-data-pipeline',
    '--config',
    good,
    '--set',
    'text.languages=[en, de]',
    '--json',
  ]);
  assert.equal(german.code, 2);
  assert.equal(german.json.error.code, 'CONFIG_INVALID');
  assert.match(german.json.error.message, /english cleaner does not read de/);
  const trained = await runCli(['train', '--config', good, '--set', 'text.languages=[en, de]', '--json']);
  assert.equal(trained.json.error.code, 'CONFIG_INVALID', 'train refuses it the same way');
  // A vocoder's config: its pipeline is not the one measured here (it printed the acoustic model's buckets).
  const vocoder = await runCli(['analyze-data-pipeline', '--config', 'configs/vocoder-tiny.yaml', '--json']);
  assert.equal(vocoder.code, 2, vocoder.stderr);
  assert.equal(vocoder.json.error.code, 'TASK_NOT_ACOUSTIC');
  assert.match(vocoder.json.error.message, /vocoder-tiny\.yaml: task: vocoder — analyze-data-pipeline measures/);
});

test('the utility binary runs the same command', async () => {
  const { config } = dataset();
  const r = await runCli(['--config', config, '--step-ms', '200', '--batches', '4', '--json'], {
    bin: join(repoRoot, 'utilities', 'analyze-data-pipeline.js'),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.status, 'success');
  assert.equal(r.json.result.ring.batches, 4);
});
