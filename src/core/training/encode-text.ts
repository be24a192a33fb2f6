// A text as an acoustic checkpoint reads it: cleaned as its config cleans, phonemized where it reads
// phonemes, encoded by its tokenizer; or why it cannot be spoken. `xtts synthesize` speaks such texts,
// a vocoder's fine-tuning (vocoder-finetune.ts) aligns them to their recordings.
import type { XttsConfig } from '../config/index.js';
import { cleanText, hasSpeech, type Phonemizer, type Tokenizer } from '../data/index.js';

/**
 * A text as the checkpoint's token ids: cleaned as its config cleans, phonemized where it reads
 * phonemes, encoded by its tokenizer; or why it cannot be spoken (nothing left after cleaning,
 * symbols without a token, too many tokens). `readAs`: the tag the cleaner reads the text as, where it is more
 * than the trained language (en-GB's dates for an en model).
 */
export async function encodeText(
  input: string,
  language: string,
  config: XttsConfig,
  tokenizer: Tokenizer,
  phonemizer: Phonemizer | undefined,
  readAs = language,
): Promise<{ ids: Int32Array; text: string } | { reason: string; tooLong?: boolean }> {
  let text = cleanText(input, config.text, readAs);
  if (text.trim() === '') return { reason: 'nothing to speak after cleaning' };
  // Punctuation alone ("?!...") spoke a third of a second of noise.
  if (!hasSpeech(text)) return { reason: 'nothing to speak: the text has no letters or digits' };
  if (phonemizer) text = await phonemizer.phonemize(text, language);
  const enc = tokenizer.encode(text, language);
  const refused = unspeakable(text, enc, config, phonemizer ? 'phonemes' : text === input ? 'text' : 'cleaned');
  return refused ?? { ids: enc.ids, text };
}

/**
 * Why an encoded text cannot be spoken (symbols without a token, too many tokens), or undefined; `tooLong` where its
 * length alone is why (synthesize speaks such a text in pieces: text-pieces.ts).
 */
function unspeakable(
  text: string,
  enc: ReturnType<Tokenizer['encode']>,
  config: XttsConfig,
  read: 'text' | 'cleaned' | 'phonemes',
): { reason: string; tooLong?: boolean } | undefined {
  if (enc.unmappable.length) {
    // Positions count in what was tokenized: the cleaner's output (numbers read out) need not line up with the line.
    const of = read === 'text' ? '' : read === 'cleaned' ? ' of the cleaned text' : ' of the phonemes';
    const what = enc.unmappable
      .map(
        (c, i) =>
          `${JSON.stringify(c)} at character ${(enc.unmappableAt?.[i] ?? 0) + 1}${of} ` +
          `("${around(text, enc.unmappableAt?.[i] ?? 0)}")`,
      )
      .join(', ');
    return {
      reason:
        `${read === 'phonemes' ? 'the phonemes have' : 'the text has'} symbols the model has no ` +
        `token for: ${what}; rephrase without them or spell them out in words`,
    };
  }
  if (enc.ids.length > config.model.max_text_tokens)
    return {
      reason:
        `${enc.ids.length} tokens; the model takes at most ${config.model.max_text_tokens}: split it into ` +
        'sentences',
      tooLong: true,
    };
  return undefined;
}

/** Up to 24 characters either side of a position, for messages. */
function around(text: string, at: number): string {
  const chars = [...text];
  const from = Math.max(0, at - 24);
  return `${from > 0 ? '…' : ''}${chars.slice(from, at + 25).join('')}${at + 25 < chars.length ? '…' : ''}`;
}
