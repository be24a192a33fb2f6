// Why a text cannot be spoken names the symbol and where it is, in the text the tokenizer read: the cleaner's output
// (numbers read out) need not line up with what the user wrote, so such a position says so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { XttsConfig } from '../../src/core/config/index.js';
import { Tokenizer } from '../../src/core/data/index.js';
import { encodeText } from '../../src/core/training/encode-text.js';

const config = {
  text: { cleaners: 'english', unicode_normalization: 'NFC', tokenizer: 'characters' },
  model: { max_text_tokens: 256 },
} as XttsConfig;
const tokenizer = Tokenizer.fromTexts(['abcdefghijklmnopqrstuvwxyz ,.-'], ['en']);

test('a symbol without a token is placed in the line as written, or in the cleaned text where it moved', async () => {
  const asIs = await encodeText('no snow ☃ here', 'en', config, tokenizer, undefined);
  assert.ok('reason' in asIs);
  assert.match(asIs.reason, /"☃" at character 9 \("no snow ☃ here"\)/);
  // "3" became "three": the snowman is the 12th character of the cleaned text, the 8th of the line.
  const moved = await encodeText('3 cats ☃', 'en', config, tokenizer, undefined);
  assert.ok('reason' in moved);
  assert.match(moved.reason, /"☃" at character 12 of the cleaned text \("three cats ☃"\)/);
  const spoken = await encodeText('Twelve cats', 'en', config, tokenizer, undefined);
  assert.ok('ids' in spoken && spoken.text === 'twelve cats');
});

test('a text of punctuation alone is not spoken', async () => {
  const r = await encodeText('?!...', 'en', config, tokenizer, undefined);
  assert.deepEqual(r, { reason: 'nothing to speak: the text has no letters or digits' });
});
