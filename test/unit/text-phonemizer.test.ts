// The phonemizer against the real espeak-ng: one process per voice, answers aligned with requests.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isXttsError } from '../../src/core/errors.js';
import {
  Phonemizer,
  Tokenizer,
  cleanText,
  espeakVoice,
  prepareTextBatch,
  preparePhonemes,
  splitPunctuation,
} from '../../src/core/data/text/index.js';

const open: Phonemizer[] = [];
const phonemizer = () => {
  const p = new Phonemizer();
  open.push(p);
  return p;
};
after(() => Promise.all(open.map((p) => p.close())));

/** espeak-ng processes whose parent is this test process, from ps. */
function espeakChildren(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([, comm]) => comm === 'espeak-ng')
    .map(([pid]) => Number(pid));
}

const SUBJECTS = [
  'The old ship',
  'A quiet river',
  'My neighbour',
  'The committee',
  'Her brother',
  'The red train',
  'This small book',
  'The winter wind',
];
const VERBS = ['crossed', 'watched', 'remembered', 'followed', 'carried', 'described', 'ignored', 'announced'];
const OBJECTS = [
  'the bridge',
  'a letter',
  'the harbour lights',
  'seven horses',
  'the evening news',
  'a broken clock',
  'the mountain road',
  'an empty house',
];
/** 200 different sentences with commas, questions, quotes and numbers, plus rows that could confuse a sentinel. */
function sentences(): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < 190; i++) {
    const s = `${SUBJECTS[i % 8]} ${VERBS[Math.floor(i / 8) % 8]} ${OBJECTS[(i + Math.floor(i / 64)) % 8]}`;
    const form = i % 4;
    out.push(
      form === 0
        ? `${s}.`
        : form === 1
          ? `${s}, and then it was ${i} o'clock.`
          : form === 2
            ? `Why? ${s}!`
            : `"${s}," she said; nobody answered.`,
    );
  }
  out.push('q', 'Q.', '', '...', "'", '— q —', 'zyzzyva', 'a', '(q)', 'The end.');
  return out.map((s) => cleanText(s, { cleaners: 'english', unicode_normalization: 'NFC' }));
}

test(
  '200 sentences through one phonemizer: one espeak-ng process, each answer equals ' + 'the sentence phonemized alone',
  async () => {
    const p = phonemizer();
    const rows = sentences();
    assert.equal(rows.length, 200);
    const batched = await p.phonemizeBatch(rows, 'en');
    assert.equal(p.spawned, 1);
    assert.equal(p.pids().length, 1);
    assert.deepEqual(espeakChildren(), p.pids(), 'the OS sees exactly that one espeak-ng');
    assert.match(p.identity, /^espeak-ng@\d+\.\d+[^/]*\/xtts-phonemes@\d+$/);

    // Alone: one request at a time through a fresh phonemizer, awaited before the next is written.
    const alone = phonemizer();
    for (let i = 0; i < rows.length; i++)
      assert.equal(await alone.phonemize(rows[i], 'en'), batched[i], `row ${i}: ${rows[i]}`);
    // And a few through brand-new processes.
    for (const i of [0, 1, 2, 3, 199]) {
      const fresh = new Phonemizer();
      assert.equal(await fresh.phonemize(rows[i], 'en'), batched[i]);
      await fresh.close();
    }
    assert.equal(alone.spawned, 1);

    assert.ok(
      batched.slice(0, 190).every((x) => /\p{L}/u.test(x)),
      'every sentence has phonemes',
    );
    assert.equal(new Set(batched.slice(0, 190)).size, 190, 'different sentences, different answers');
    assert.equal(batched[190], 'kjˈuː', 'a row that is the sentinel letter is answered, not mistaken for the sentinel');
    assert.equal(batched[192], '');
    assert.equal(batched[193], '...');
    await p.close();
    await alone.close();
    assert.deepEqual(espeakChildren(), [], 'close() ends the processes');
  },
);

test('punctuation is kept around the phonemes', async () => {
  const p = phonemizer();
  const out = await p.phonemize('"Hello," she said - twice... (quietly)!', 'en');
  assert.match(out, /^"\S+," \S+ \S+ - \S+\.\.\. \(\S+\)!$/u);
  assert.doesNotMatch(out, /[a-z]{5}/, 'no English spelling left');
  assert.deepEqual(
    splitPunctuation('Hi, there - well-known; ok?').map((piece) => piece.text),
    ['Hi', ', ', 'there', ' - ', 'well-known', '; ', 'ok', '?'],
  );
});

test('a text longer than espeak-ng reads in one line is not cut mid-word', async () => {
  const p = phonemizer();
  const word = await p.phonemize('internationalization', 'en');
  // 80 words, 1,679 bytes: espeak-ng alone would cut this line at 999 bytes, inside a word.
  const out = await p.phonemize(Array(80).fill('internationalization').join(' '), 'en');
  const words = out.split(' ');
  assert.equal(words.length, 80);
  assert.ok(words.every((w) => w === word));
});

test('one process per voice; voices for language codes; language-switch marks removed', async () => {
  const p = phonemizer();
  const [en, de, fr, es, ru] = await Promise.all([
    p.phonemize('The weather is nice today.', 'en'),
    p.phonemize('Das Wetter ist heute schön.', 'de'),
    p.phonemize("Il fait beau aujourd'hui.", 'fr'),
    p.phonemize('Hace buen tiempo hoy.', 'es'),
    p.phonemize('Сегодня хорошая погода, Google.', 'ru'),
  ]);
  assert.equal(p.spawned, 5);
  assert.equal(p.pids().length, 5);
  assert.equal(new Set([en, de, fr, es, ru]).size, 5);
  assert.match(de, /ʃ/);
  assert.doesNotMatch(ru, /\((en|ru)\)/);
  await p.phonemize('Noch ein Satz.', 'de');
  assert.equal(p.spawned, 5, 'the German process is reused');
  assert.equal(espeakVoice('en'), 'en-us');
  assert.equal(espeakVoice('pt'), 'pt-br');
  assert.equal(espeakVoice('pt-PT'), 'pt');
  assert.equal(espeakVoice('fr'), 'fr-fr');
  assert.equal(espeakVoice('zh'), 'cmn');
  assert.equal(espeakVoice('de'), 'de');
});

test('phonemes mode end to end: tokenizer over IPA, rows prepared in a batch', async () => {
  const p = phonemizer();
  const config = { cleaners: 'english', unicode_normalization: 'NFC' } as const;
  const raw = ['Dr. Smith paid $5.', 'It was 1999, wasn\u2019t it?'];
  const ipa = await p.phonemizeBatch(
    raw.map((r) => cleanText(r, config)),
    'en',
  );
  const t = Tokenizer.fromTexts(ipa, ['en'], 'phonemes', p.identity);
  const rows = await prepareTextBatch(
    raw.map((text) => ({ text, language: 'en' })),
    config,
    t,
    p,
  );
  assert.deepEqual(
    rows.map((r) => r.phonemes),
    ipa,
  );
  assert.deepEqual(
    rows.map((r) => t.decode(r.ids)),
    ipa,
  );
  assert.ok(rows.every((r) => r.unmappable.length === 0));
  assert.equal(rows[0].cleaned, 'doctor smith paid five dollars.');
  const single = await preparePhonemes(raw[1], 'en', config, t, p);
  assert.deepEqual(single.ids, rows[1].ids);
  await assert.rejects(
    preparePhonemes(raw[0], 'en', config, t, undefined),
    (e: unknown) => isXttsError(e) && e.code === 'PHONEMIZER_REQUIRED',
  );
});

test('missing espeak-ng is a clear error; an unknown voice rejects, the rest keeps working', async () => {
  assert.throws(
    () => new Phonemizer('/nonexistent/espeak-ng'),
    (e: unknown) =>
      isXttsError(e) &&
      e.code === 'PHONEMIZER_MISSING' &&
      e.suggestions.some((s) => s.includes('apt-get install espeak-ng')) &&
      e.suggestions.some((s) => s.includes('text.phonemizer_command')),
  );
  const p = phonemizer();
  await assert.rejects(
    p.phonemize('hello', 'xx'),
    (e: unknown) => isXttsError(e) && e.code === 'PHONEMIZER_FAILED' && /voice xx/.test(e.message),
  );
  assert.match(await p.phonemize('hello', 'en'), /h/);
});

test('a phonemizer nobody closed does not keep Node from exiting', () => {
  const module = fileURLToPath(new URL('../../src/core/data/text/index.ts', import.meta.url));
  const script =
    `import { Phonemizer } from ${JSON.stringify(module)}; const p = new ` +
    `Phonemizer(); console.log(await p.phonemize('goodbye', 'en'));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.error, undefined, 'exited by itself');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /ɡʊdbˈaɪ/);
});
