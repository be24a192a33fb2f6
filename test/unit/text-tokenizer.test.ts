import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isXttsError } from '../../src/core/errors.js';
import {
  BOS,
  CLEANER_VERSIONS,
  EOS,
  PAD,
  SPECIAL_TOKENS,
  Tokenizer,
  UNK,
  cleanText,
  prepareText,
  prepareTextBatch,
  textIdentity,
  type TokenizerJSON,
} from '../../src/core/data/text/index.js';

const config = { cleaners: 'english', unicode_normalization: 'NFC' } as const;
const corpus = [
  'Dr. Smith lives on Main St. with 3 cats.',
  'The committee met on the 22nd of November, 1963.',
  'It cost $5.50, which was 45% more than before!',
].map((t) => cleanText(t, config));

test('vocabulary: specials, one token per language, sorted characters of the corpus', () => {
  const t = Tokenizer.fromTexts(corpus, ['en', 'de']);
  assert.deepEqual(SPECIAL_TOKENS, ['<pad>', '<bos>', '<eos>', '<unk>']);
  assert.equal(PAD, 0);
  assert.equal(t.token(PAD), '<pad>');
  assert.equal(t.token(UNK), '<unk>');
  assert.equal(t.token(4), '[en]');
  assert.equal(t.token(5), '[de]');
  assert.equal(t.languageId('de'), 5);
  assert.deepEqual([...t.symbols], [...new Set(corpus.join(''))].sort());
  assert.equal(t.vocabSize, 4 + 2 + t.symbols.length);
  assert.equal(t.symbolId(t.symbols[0]), 6);
  assert.equal(t.mode, 'characters');
  assert.equal(t.phonemizer, null);
  // Built the same whatever the order of the texts.
  assert.equal(Tokenizer.fromTexts([...corpus].reverse(), ['en', 'de']).identity(), t.identity());
});

test('encode: [<bos>, [lang], ...chars, <eos>]; decode round trip', () => {
  const t = Tokenizer.fromTexts(corpus, ['en', 'de']);
  for (const text of corpus) {
    const { ids, unmappable } = t.encode(text, 'en');
    assert.ok(ids instanceof Int32Array);
    assert.deepEqual(unmappable, []);
    assert.equal(ids[0], BOS);
    assert.equal(ids[1], t.languageId('en'));
    assert.equal(ids[ids.length - 1], EOS);
    assert.equal(ids.length, [...text].length + 3);
    assert.equal(t.decode(ids), text);
  }
  assert.equal(t.encode(corpus[0], 'de').ids[1], t.languageId('de'));
  assert.throws(
    () => t.encode('hello', 'fr'),
    (e: unknown) => isXttsError(e) && e.code === 'TOKENIZER_UNKNOWN_LANGUAGE',
  );
});

test('astral characters are one symbol each', () => {
  const t = Tokenizer.fromTexts(['a𝒜b'], ['en']);
  const { ids } = t.encode('a𝒜b', 'en');
  assert.equal(ids.length, 6);
  assert.equal(t.decode(ids), 'a𝒜b');
});

test('unmappable characters are reported once each, not dropped', () => {
  const t = Tokenizer.fromTexts(['hello world'], ['en']);
  const { ids, unmappable } = t.encode('hex wox!', 'en');
  assert.deepEqual(unmappable, ['x', '!']);
  assert.equal(ids.length, 8 + 3, 'every character keeps a place');
  assert.equal(ids.filter((id) => id === UNK).length, 3);
  // Symbols, emoji and controls never enter a vocabulary: rows with them are reported.
  const withSymbols = Tokenizer.fromTexts(['snow ☃ and 🙂 and \u0007'], ['en']);
  assert.ok(
    !withSymbols.symbols.includes('☃') &&
      !withSymbols.symbols.includes('🙂') &&
      !withSymbols.symbols.includes('\u0007'),
  );
  assert.deepEqual(withSymbols.encode('snow ☃', 'en').unmappable, ['☃']);
});

test('JSON round trip keeps ids and identity; identity follows vocabulary, languages, mode and phonemizer', () => {
  const t = Tokenizer.fromTexts(corpus, ['en', 'de']);
  const again = Tokenizer.fromJSON(JSON.parse(JSON.stringify(t)));
  assert.equal(again.identity(), t.identity());
  for (const text of corpus) assert.deepEqual(again.encode(text, 'de').ids, t.encode(text, 'de').ids);
  // Same content, keys in another order: same identity.
  const json = t.toJSON();
  const reordered = {
    symbols: json.symbols,
    languages: json.languages,
    phonemizer: json.phonemizer,
    mode: json.mode,
    format: json.format,
  } as TokenizerJSON;
  assert.equal(Tokenizer.fromJSON(reordered).identity(), t.identity());
  assert.match(t.identity(), /^[0-9a-f]{64}$/);

  const identities = new Set([
    t.identity(),
    Tokenizer.fromTexts([...corpus, 'ü'], ['en', 'de']).identity(),
    Tokenizer.fromTexts(corpus, ['de', 'en']).identity(),
    Tokenizer.fromTexts(corpus, ['en']).identity(),
    Tokenizer.fromTexts(corpus, ['en', 'de'], 'phonemes', 'espeak-ng@1.51/xtts-phonemes@2').identity(),
    Tokenizer.fromTexts(corpus, ['en', 'de'], 'phonemes', 'espeak-ng@1.52/xtts-phonemes@2').identity(),
  ]);
  assert.equal(identities.size, 6);
});

test('a stored tokenizer that is not one is refused with a reason', () => {
  const good = Tokenizer.fromTexts(['ab'], ['en']).toJSON();
  const bad: [Partial<TokenizerJSON> & Record<string, unknown>, RegExp][] = [
    [{ ...good, format: 'other' as never }, /format/],
    [{ ...good, symbols: ['a', 'a'] }, /twice/],
    [{ ...good, symbols: ['ab'] }, /single characters/],
    [{ ...good, languages: [] }, /languages/],
    [{ ...good, mode: 'phonemes' }, /phonemizer identity/],
  ];
  for (const [json, reason] of bad) {
    assert.throws(
      () => Tokenizer.fromJSON(json as TokenizerJSON),
      (e: unknown) => isXttsError(e) && e.code === 'TOKENIZER_INVALID' && reason.test(e.message),
    );
  }
});

test('prepareText: clean and encode one row; unmappable characters reported for skipping', async () => {
  const t = Tokenizer.fromTexts(corpus, ['en']);
  const row = prepareText('Dr. Smith lives on Main St. with 3 cats.', 'en', config, t);
  assert.equal(row.cleaned, 'doctor smith lives on main street with three cats.');
  assert.equal(t.decode(row.ids), row.cleaned);
  assert.deepEqual(row.unmappable, []);
  assert.equal(row.phonemes, undefined);
  const odd = prepareText('Zebras: 7 ☃', 'en', config, t);
  assert.deepEqual(odd.unmappable, ['z', ':', '☃']);
  const batch = await prepareTextBatch(
    corpus.map((text) => ({ text, language: 'en' })),
    config,
    t,
  );
  assert.deepEqual(
    batch.map((b) => b.cleaned),
    corpus,
  );
  // A phonemes tokenizer needs a phonemizer.
  const ph = Tokenizer.fromTexts(['ə'], ['en'], 'phonemes', 'espeak-ng@1.51/xtts-phonemes@2');
  assert.throws(
    () => prepareText('hi', 'en', config, ph),
    (e: unknown) => isXttsError(e) && e.code === 'PHONEMIZER_REQUIRED',
  );
  assert.deepEqual(textIdentity(config, undefined), {
    cleaner: CLEANER_VERSIONS.english,
    normalization: 'NFC',
    phonemizer: null,
  });
  assert.equal(
    textIdentity({ cleaners: 'basic', unicode_normalization: 'NFD' }, { identity: 'espeak-ng@1.51/x' }).phonemizer,
    'espeak-ng@1.51/x',
  );
});
