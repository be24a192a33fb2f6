import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  cleanText,
  detectLanguage,
  languageFromFilename,
  Phonemizer,
  Tokenizer,
  cardinal,
  ordinal,
  year,
} from '../../src/core/data/text/index.js';

const en = (s: string) => cleanText(s, { cleaners: 'english', unicode_normalization: 'NFC' });

describe('english cleaner', () => {
  const cases: [string, string][] = [
    ['Dr. Smith lives on Main St.', 'doctor smith lives on main street.'],
    ['St. Louis is far.', 'saint louis is far.'],
    ['The drum and the stop sign.', 'the drum and the stop sign.'],
    ['Mr. and Mrs. Jones, etc.', 'mister and missus jones, et cetera.'],
    ['He paid $12 for 3 apples.', 'he paid twelve dollars for three apples.'],
    ['It costs $5.50 now.', 'it costs five dollars, fifty cents now.'],
    ['A £3 fee and €2.', 'a three pounds fee and two euros.'],
    [
      'We met on the 21st, the 2nd and the 103rd day.',
      'we met on the twenty-first, the second and the one hundred third day.',
    ],
    ['Pi is 3.14 roughly.', 'pi is three point one four roughly.'],
    ['In 1999, 2005 and 2010.', 'in nineteen ninety-nine, two thousand five and twenty ten.'],
    [
      'About 1,234 people, 45% of them.',
      'about one thousand two hundred thirty-four people, forty-five percent of them.',
    ],
    ['It was -5 degrees at 7:45.', 'it was minus five degrees at seven forty-five.'],
    ['Room No. 5 said “hi” — twice…', 'room number five said "hi" - twice...'],
  ];
  for (const [input, expected] of cases) test(input, () => assert.equal(en(input), expected));
  test('number words', () => {
    assert.equal(cardinal('1000001'), 'one million one');
    assert.equal(ordinal('12'), 'twelfth');
    assert.equal(ordinal('40'), 'fortieth');
    assert.equal(year('1900'), 'nineteen hundred');
    assert.equal(year('1905'), 'nineteen oh five');
  });
});

test('multilingual and basic cleaners', () => {
  assert.equal(
    cleanText('  Über  «Straße»  ', { cleaners: 'multilingual', unicode_normalization: 'NFC' }),
    'über "straße"',
  );
  assert.equal(cleanText('Привет,   МИР', { cleaners: 'multilingual', unicode_normalization: 'NFC' }), 'привет, мир');
  assert.equal(cleanText('  Keep  Case 12 ', { cleaners: 'basic', unicode_normalization: 'NFC' }), 'Keep Case 12');
  // NFC composes e + combining acute into one code point; NFD keeps them apart.
  assert.equal([...cleanText('e\u0301', { cleaners: 'basic', unicode_normalization: 'NFC' })].length, 1);
  assert.equal([...cleanText('\u00e9', { cleaners: 'basic', unicode_normalization: 'NFD' })].length, 2);
});

test('tokenizer: round trip, JSON, identity, unmappable characters reported', () => {
  const t = Tokenizer.fromTexts(['hello world', 'bonjour'], ['en', 'fr']);
  const { ids, unmappable } = t.encode('hello', 'en');
  assert.deepEqual(unmappable, []);
  assert.equal(ids[0], 1);
  assert.equal(ids[ids.length - 1], 2);
  assert.equal(t.decode(ids), 'hello');
  const again = Tokenizer.fromJSON(JSON.parse(JSON.stringify(t.toJSON())));
  assert.deepEqual(again.encode('bonjour', 'fr').ids, t.encode('bonjour', 'fr').ids);
  assert.equal(again.identity(), t.identity());
  assert.notEqual(Tokenizer.fromTexts(['hello world!', 'bonjour'], ['en', 'fr']).identity(), t.identity());
  assert.deepEqual(t.encode('hex!', 'en').unmappable, ['x', '!']);
  assert.throws(() => t.encode('hello', 'de'), /not one of the tokenizer's/);
  assert.equal(
    Tokenizer.fromTexts(['ba', 'ab'], ['en']).identity(),
    Tokenizer.fromTexts(['ab', 'ba'], ['en']).identity(),
    'deterministic',
  );
});

test('language from file names and text', () => {
  assert.equal(languageFromFilename('wavs/de_0001.wav'), 'de');
  assert.equal(languageFromFilename('corpus/fr/0001.wav'), 'fr');
  assert.equal(languageFromFilename('wavs/LJ001-0001.wav'), undefined);
  const samples: [string, string][] = [
    ['The cat sat on the mat and it was happy with the sun.', 'en'],
    ['Der Hund ist nicht zu Hause, und die Katze schläft.', 'de'],
    ['Le chat est dans la maison et les enfants jouent.', 'fr'],
    ['El perro está en la casa y los niños juegan con una pelota.', 'es'],
    ['Il gatto è nella casa e non vuole uscire per la pioggia.', 'it'],
    ['O menino não quer sair de casa com a chuva.', 'pt'],
    ['Кошка спит на диване.', 'ru'],
    ['Η γάτα κοιμάται.', 'el'],
  ];
  for (const [text, lang] of samples) assert.equal(detectLanguage(text).language, lang, text);
  assert.equal(detectLanguage('Кошка спит', ['uk', 'en']).language, 'uk', 'restricted to the configured languages');
});

test('phonemizer: one espeak-ng process for 200 sentences, outputs aligned with inputs', async () => {
  const p = new Phonemizer();
  const sentences = Array.from({ length: 200 }, (_, i) =>
    i % 2 ? `Sentence number ${i}, with a pause. And a second clause.` : `Hello world ${i}.`,
  );
  const batched = await Promise.all(sentences.map((s) => p.phonemize(s, 'en')));
  assert.equal(p.spawned, 1);
  assert.match(p.identity, /^espeak-ng@\d+\.\d+/);
  assert.ok(batched.every((x) => x.length > 0));
  p.close();
  for (const i of [0, 1, 57, 198, 199]) {
    const single = new Phonemizer();
    assert.equal(await single.phonemize(sentences[i], 'en'), batched[i], `sentence ${i}`);
    single.close();
  }
  assert.notEqual(batched[0], batched[2], 'different numbers, different phonemes');
});
