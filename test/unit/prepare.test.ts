// Dataset preparation end to end on real files: espeak-ng speech, a real SQLite cache, every skip
// reason produced by a crafted row, and exactly-what-changed invalidation.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/core/config/load.js';
import { encodeWav } from '../../src/core/data/audio/wav.js';
import { SKIP_REASONS } from '../../src/core/data/manifest.js';
import { prepareDataset } from '../../src/core/data/prepare.js';
import { describeDataset } from '../../src/core/data/describe.js';
import { pcm16Wav, tone } from '../helpers/wav.js';

function speak(path: string, text: string, voice = 'en-us') {
  execFileSync('espeak-ng', ['-v', voice, '-w', path, text]);
}

function configFor(dir: string, extra = ''): string {
  const p = join(dir, 'config.yaml');
  writeFileSync(
    p,
    `extends: quickstart\ndataset:\n  path: ${dir}\n  validation_fraction: 0\n  ` +
      `language_source: metadata\ntext:\n  cleaners: english\n  languages: [en, ` +
      `de]\nlimits:\n  min_audio_s: 0.5\n  max_audio_s: 6\n  max_text_chars: 120\n  ` +
      `min_text_chars: 3\npipeline:\n  workers: 1\n  cache:\n    ` +
      `path: ${join(dir, 'cache.sqlite')}\n${extra}`,
  );
  return p;
}

test('every skip reason comes from a crafted row, and the good rows are all kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-prep-'));
  mkdirSync(join(dir, 'wavs'));
  const good = ['The first good sentence.', 'A second good sentence here.', 'And the third one.'];
  good.forEach((t, i) => speak(join(dir, 'wavs', `g${i}.wav`), t));
  speak(
    join(dir, 'wavs', 'long.wav'),
    'This sentence is spoken on purpose for much longer than the limit allows, going ' +
      'on and on and on about nothing in particular at all.',
  );
  writeFileSync(join(dir, 'wavs', 'short.wav'), pcm16Wav(tone(0.2, 22050), 22050));
  writeFileSync(join(dir, 'wavs', 'garbage.wav'), 'definitely not a wav file');
  const ulaw = join(dir, 'wavs', 'ulaw.wav');
  execFileSync('sox', [join(dir, 'wavs', 'g0.wav'), '-e', 'u-law', ulaw]);
  for (const id of ['dup', 'uni', 'tl', 'ts', 'lang', 'empty', 'punct'])
    copyFileSync(join(dir, 'wavs', 'g1.wav'), join(dir, 'wavs', `${id}.wav`));
  const rows = [
    'g0|x|The first good sentence.|alice|en',
    'g1|x|A second good sentence here.|alice|en',
    'g2|x|And the third one.|bob|en',
    'g0|x|A duplicate id.|alice|en',
    'missing|x|No audio for this one.|alice|en',
    'garbage|x|Garbage bytes in a wav.|alice|en',
    'ulaw|x|Mu-law is not supported.|alice|en',
    'short|x|Too short audio here.|alice|en',
    'long|x|Too long audio.|alice|en',
    'uni|x|Snowman ☃ is not in the vocabulary.|alice|en',
    `tl|x|${'word '.repeat(40)}|alice|en`,
    'ts|x|Hi|alice|en',
    'lang|x|Bonjour tout le monde.|alice|fr',
    'empty| | |alice|en',
    'punct|x|...!!!? --|alice|en',
    '../../outside|x|Escapes the root.|alice|en',
    'only|two',
    'nobody|x|Whose voice is this?||en',
  ];
  // A float WAV with one NaN sample, and one line in Latin-1 among UTF-8 lines.
  const nan = tone(0.8, 22050);
  nan[100] = Number.NaN;
  writeFileSync(join(dir, 'wavs', 'nan.wav'), encodeWav(nan, 22050, { float: true }));
  rows.push('nan|x|One sample is not a number.|alice|en');
  writeFileSync(
    join(dir, 'metadata.csv'),
    Buffer.concat([Buffer.from(rows.join('\n') + '\n'), Buffer.from('latin|x|Caf\xe9 cr\xe8me.|alice|en\n', 'latin1')]),
  );
  const loaded = loadConfig(configFor(dir)).loaded!;
  const p = await prepareDataset(loaded);
  assert.deepEqual(p.train.map((i) => i.id).sort(), ['g0', 'g1', 'g2']);
  const reasons = Object.fromEntries(p.skipped.map((s) => [s.id === '' ? 'only' : s.id, s.reason]));
  assert.deepEqual(reasons, {
    g0: 'duplicate_id',
    missing: 'missing_audio',
    garbage: 'unsupported_format',
    ulaw: 'unsupported_format',
    short: 'audio_too_short',
    long: 'audio_too_long',
    uni: 'unmappable_characters',
    tl: 'text_too_long',
    ts: 'text_too_short',
    lang: 'unknown_language',
    empty: 'empty_text',
    punct: 'empty_text',
    '../../outside': 'path_escapes_root',
    only: 'malformed_row',
    nan: 'unreadable_audio',
    latin: 'not_utf8',
    nobody: 'no_speaker',
  });
  assert.match(p.skipped.find((s) => s.id === 'nan')!.detail, /sample 100 .* is NaN/);
  assert.match(p.skipped.find((s) => s.id === 'punct')!.detail, /nothing to speak: ".*" has no letter or digit/);
  const covered = new Set(p.skipped.map((s) => s.reason));
  assert.deepEqual(
    Object.keys(SKIP_REASONS).filter((r) => !covered.has(r as never)),
    [],
  );
  for (const s of p.skipped)
    assert.ok(s.line > 0 && s.file.endsWith('metadata.csv') && s.detail.length > 0, JSON.stringify(s));
  assert.deepEqual(p.speakers, ['alice', 'bob']);
  // The first named is the first in the file (line 4, the duplicate id), whichever check skipped it.
  await assert.rejects(
    prepareDataset(loaded, { strict: true }),
    /cannot be used \(--strict\); first: .*metadata\.csv:4 \(g0\): duplicate_id/,
  );
});

test(
  'invalidation: nothing changed -> nothing recomputed; one text edited -> one ' + 'text; hop changed -> all features',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-inval-'));
    mkdirSync(join(dir, 'wavs'));
    const texts = ['One two three.', 'Four five six.', 'Seven eight nine.', 'Ten eleven twelve.'];
    texts.forEach((t, i) => speak(join(dir, 'wavs', `u${i}.wav`), t));
    const meta = (ts: string[]) => ts.map((t, i) => `u${i}|${t}|${t}|spk|en`).join('\n') + '\n';
    writeFileSync(join(dir, 'metadata.csv'), meta(texts));
    const cold = await prepareDataset(loadConfig(configFor(dir)).loaded!);
    assert.deepEqual(cold.cacheUse.texts, { computed: 4, cached: 0 });
    assert.deepEqual(cold.cacheUse.features, { computed: 4, cached: 0 });
    const warm = await prepareDataset(loadConfig(configFor(dir)).loaded!);
    assert.deepEqual(warm.cacheUse, {
      texts: { computed: 0, cached: 4 },
      tokens: { computed: 0, cached: 4 },
      features: { computed: 0, cached: 4 },
    });
    assert.deepEqual([...warm.stats.mean], [...cold.stats.mean]);
    writeFileSync(
      join(dir, 'metadata.csv'),
      meta(['One two three.', 'Four five sixteen.', 'Seven eight nine.', 'Ten eleven twelve.']),
    );
    const edited = await prepareDataset(loadConfig(configFor(dir)).loaded!);
    assert.deepEqual(edited.cacheUse.texts, { computed: 1, cached: 3 });
    assert.deepEqual(edited.cacheUse.features, { computed: 0, cached: 4 });
    const hop = await prepareDataset(loadConfig(configFor(dir), { set: ['audio.hop_length=200'] }).loaded!);
    assert.deepEqual(hop.cacheUse.texts, { computed: 0, cached: 4 });
    assert.deepEqual(hop.cacheUse.features, { computed: 4, cached: 0 });
    assert.ok(hop.train[0].frames > edited.train[0].frames);
  },
);

test(
  'FLAC, MP3, Ogg Vorbis and Opus clips in a CSV dataset are decoded in the ' + 'feature threads and all kept',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'xtts-prep-mixed-'));
    mkdirSync(join(dir, 'clips'));
    const texts = [
      'The small boy sold the rare fish.',
      'A quiet river runs past the mill.',
      'She opened the window to the rain.',
      'Bring me the red box from there.',
    ];
    const rows = ['audio,text'];
    texts.forEach((t, i) => {
      const wav = join(dir, `s${i}.wav`);
      speak(wav, t);
      const [name, cmd] = [
        [`c${i}.flac`, ['sox', wav, join(dir, 'clips', `c${i}.flac`)]],
        [`c${i}.mp3`, ['sox', wav, join(dir, 'clips', `c${i}.mp3`)]],
        [`c${i}.ogg`, ['sox', wav, join(dir, 'clips', `c${i}.ogg`)]],
        [`c${i}.opus`, ['opusenc', '--quiet', wav, join(dir, 'clips', `c${i}.opus`)]],
      ][i] as [string, string[]];
      execFileSync(cmd[0], cmd.slice(1));
      rows.push(`clips/${name},"${t}"`);
    });
    writeFileSync(join(dir, 'metadata.csv'), rows.join('\n') + '\n');
    const p = await prepareDataset(loadConfig(configFor(dir, 'batching:\n  buckets: 1\n')).loaded!);
    assert.deepEqual(p.skipped, []);
    assert.deepEqual(p.train.map((i) => i.id).sort(), ['clips/c0', 'clips/c1', 'clips/c2', 'clips/c3']);
    for (const item of p.train) assert.ok(item.durationS > 1 && item.durationS < 4, `${item.id}: ${item.durationS} s`);
  },
);

test("each row's numbers are read in its own language (multilingual cleaner, language from metadata)", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-prep-lang-'));
  mkdirSync(join(dir, 'wavs'));
  const rows = [
    ['en1', 'I have 3 dogs and 25 cats.', 'en', 'en-us'],
    ['de1', 'Ich habe 3 Hunde und 25 Katzen.', 'de', 'de'],
    ['es1', 'Tengo 3 perros y 25 gatos.', 'es', 'es'],
  ];
  for (const [id, text, , voice] of rows) speak(join(dir, 'wavs', `${id}.wav`), text, voice);
  writeFileSync(
    join(dir, 'metadata.csv'),
    rows.map(([id, text, lang]) => `${id}|${text}|${text}|spk|${lang}`).join('\n'),
  );
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `extends: quickstart\ndataset:\n  path: ${dir}\n  validation_fraction: 0\n  language_source: metadata\n` +
      `text:\n  cleaners: multilingual\n  languages: [en, de, es]\npipeline:\n  workers: 1\n  cache:\n` +
      `    path: ${join(dir, 'cache.sqlite')}\n`,
  );
  const p = await prepareDataset(loadConfig(config).loaded!);
  const spoken = Object.fromEntries(p.train.map((i) => [i.id, p.tokenizer.decode(i.tokens)]));
  assert.match(spoken.en1, /i have three dogs and twenty-five cats\./);
  assert.match(spoken.de1, /ich habe drei hunde und fünfundzwanzig katzen\./);
  assert.match(spoken.es1, /tengo tres perros y veinticinco gatos\./);
});

test('clips below the model rate, in 8-bit PCM or 40 dB down are counted, from the cache too, and named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-prep-source-'));
  mkdirSync(join(dir, 'wavs'));
  const rows: string[] = [];
  for (const i of [0, 1, 2]) {
    speak(join(dir, 'wavs', `g${i}.wav`), `Good sentence number ${i + 1}.`);
    rows.push(`g${i}|x|Good sentence number ${i + 1}.|alice|en`);
  }
  // A telephone clip: stereo, 8-bit, 8 kHz (sox from espeak-ng's speech).
  speak(join(dir, 'wavs', 'tel.22k.wav'), 'A call from far away.');
  execFileSync('sox', [
    join(dir, 'wavs', 'tel.22k.wav'),
    '-r',
    '8000',
    '-b',
    '8',
    '-c',
    '2',
    join(dir, 'wavs', 'tel.wav'),
  ]);
  rows.push('tel|x|A call from far away.|alice|en');
  // Speech 54 dB down, and a mains hum 60 dB down where speech should be.
  execFileSync('sox', [join(dir, 'wavs', 'g0.wav'), join(dir, 'wavs', 'faint.wav'), 'gain', '-n', '-54']);
  writeFileSync(join(dir, 'wavs', 'hum.wav'), pcm16Wav(tone(1.5, 22050, 50, 0.001), 22050));
  rows.push('faint|x|Good sentence number 1.|alice|en', 'hum|x|Nothing but hum.|alice|en');
  writeFileSync(join(dir, 'metadata.csv'), `${rows.join('\n')}\n`);
  const loaded = loadConfig(configFor(dir)).loaded!;
  for (const pass of ['computed', 'cached']) {
    const p = await prepareDataset(loaded);
    assert.equal(p.train.length, 6, pass);
    const { quiet, ...others } = p.sourceNotes;
    assert.deepEqual(
      others,
      {
        belowRate: { clips: 1, lowestHz: 8000, modelHz: 22050, example: join(dir, 'wavs', 'tel.wav') },
        eightBit: { clips: 1, example: join(dir, 'wavs', 'tel.wav') },
      },
      pass,
    );
    assert.equal(quiet?.clips, 2, pass);
    assert.equal(quiet?.example, join(dir, 'wavs', 'hum.wav'), pass);
    assert.ok(Math.abs(quiet!.quietestDb + 60) < 0.5, `${quiet?.quietestDb}`);
    assert.ok(
      describeDataset(p).warnings.some((w) =>
        w.startsWith(`2 clips peak 40 dB or more below full scale (the quietest at -60 dBFS: ${quiet?.example})`),
      ),
      pass,
    );
    const warnings = describeDataset(p).warnings;
    assert.ok(
      warnings.some((w) => w.startsWith("1 clip was recorded below the model's 22050 Hz")),
      pass,
    );
    assert.ok(
      warnings.some((w) => w.startsWith('1 clip is 8-bit PCM')),
      pass,
    );
  }
});

test("rows written mostly in letters their language's alphabet lacks are counted and named in a warning", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-prep-script-'));
  mkdirSync(join(dir, 'wavs'));
  const rows = [
    ['g0', 'A plain English sentence.'],
    ['g1', 'We met at a café in Zürich.'],
    ['ru', 'Привет, как дела у тебя сегодня?'],
    ['ru2', 'Это тоже русский текст.'],
  ];
  for (const [id, text] of rows) speak(join(dir, 'wavs', `${id}.wav`), text, id.startsWith('ru') ? 'ru' : 'en-us');
  writeFileSync(join(dir, 'metadata.csv'), `${rows.map(([id, text]) => `${id}|x|${text}|alice|en`).join('\n')}\n`);
  const p = await prepareDataset(loadConfig(configFor(dir)).loaded!);
  assert.deepEqual(p.train.map((i) => i.id).sort(), ['g0', 'g1', 'ru', 'ru2']);
  assert.deepEqual(p.foreignText, {
    rows: 2,
    language: 'en',
    example: `${join(dir, 'metadata.csv')}:3 (ru)`,
    text: 'Привет, как дела у тебя сегодня?',
  });
  assert.ok(
    describeDataset(p).warnings.some((w) =>
      w.startsWith('2 rows of language en are written mostly in letters its alphabet lacks (e.g. '),
    ),
  );
});
