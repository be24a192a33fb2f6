// The text front end as the data pipeline, trainer and synthesis call it per row: raw text ->
// cleaned text -> (phonemes) -> token ids, with the characters that have no id reported.
import type { TextConfig } from '../../config/index.js';
import { ExitCode, XttsError } from '../../errors.js';
import { CLEANER_VERSIONS, cleanText } from './cleaners.js';
import type { Phonemizer } from './phonemizer.js';
import type { Tokenizer } from './tokenizer.js';

export type TextFrontConfig = Pick<TextConfig, 'cleaners' | 'unicode_normalization'>;

export interface PreparedText {
  /** The cleaned text. */
  cleaned: string;
  /** espeak-ng's IPA of the cleaned text in phonemes mode (what was tokenized); undefined in characters mode. */
  phonemes?: string;
  /** [<bos>, [language], ...symbols, <eos>] */
  ids: Int32Array;
  /** Characters with no id, once each; non-empty means: skip the row as `unmappable_characters`. */
  unmappable: string[];
}

export interface TextRowInput {
  text: string;
  language: string;
}

/**
 * What decides a row's cleaned (and phonemized) text, besides the text and its language: the part
 * of a text cache key that comes from the front end.
 */
export function textIdentity(
  config: TextFrontConfig,
  phonemizer: Pick<Phonemizer, 'identity'> | undefined,
): { cleaner: string; normalization: string; phonemizer: string | null } {
  return {
    cleaner: CLEANER_VERSIONS[config.cleaners],
    normalization: config.unicode_normalization,
    phonemizer: phonemizer?.identity ?? null,
  };
}

function needsPhonemizer(tokenizer: Tokenizer): XttsError {
  return new XttsError(
    'PHONEMIZER_REQUIRED',
    `the tokenizer reads phonemes (${tokenizer.phonemizer}) but no phonemizer was given`,
    {
      exitCode: ExitCode.environment,
      suggestions: ['create one Phonemizer per worker (new Phonemizer(config.text.phonemizer_command)) and pass it'],
    },
  );
}

/** Characters mode, synchronous: clean, then encode. */
export function prepareText(
  raw: string,
  language: string,
  config: TextFrontConfig,
  tokenizer: Tokenizer,
): PreparedText {
  if (tokenizer.mode !== 'characters') throw needsPhonemizer(tokenizer);
  const cleaned = cleanText(raw, config, language);
  const { ids, unmappable } = tokenizer.encode(cleaned, language);
  return { cleaned, ids, unmappable };
}

/** Either mode: in phonemes mode the cleaned text goes through the phonemizer before encoding. */
export async function preparePhonemes(
  raw: string,
  language: string,
  config: TextFrontConfig,
  tokenizer: Tokenizer,
  phonemizer: Phonemizer | undefined,
): Promise<PreparedText> {
  if (tokenizer.mode === 'characters') return prepareText(raw, language, config, tokenizer);
  if (!phonemizer) throw needsPhonemizer(tokenizer);
  const cleaned = cleanText(raw, config, language);
  const phonemes = await phonemizer.phonemize(cleaned, language);
  const { ids, unmappable } = tokenizer.encode(phonemes, language);
  return { cleaned, phonemes, ids, unmappable };
}

/** Many rows, in order; in phonemes mode they are pipelined through each voice's one process. */
export async function prepareTextBatch(
  rows: readonly TextRowInput[],
  config: TextFrontConfig,
  tokenizer: Tokenizer,
  phonemizer?: Phonemizer,
): Promise<PreparedText[]> {
  if (tokenizer.mode === 'characters') return rows.map((r) => prepareText(r.text, r.language, config, tokenizer));
  return Promise.all(rows.map((r) => preparePhonemes(r.text, r.language, config, tokenizer, phonemizer)));
}

/**
 * The string the tokenizer reads for a row — cleaned text, or its IPA when a phonemizer is given —
 * for building a tokenizer's vocabulary before any tokenizer exists (Tokenizer.fromTexts).
 */
export async function tokenizerText(
  raw: string,
  language: string,
  config: TextFrontConfig,
  phonemizer?: Phonemizer,
): Promise<string> {
  const cleaned = cleanText(raw, config, language);
  return phonemizer ? phonemizer.phonemize(cleaned, language) : cleaned;
}
