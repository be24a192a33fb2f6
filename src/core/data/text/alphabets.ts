// What a tokenizer must cover whatever its training texts happened to contain: the letters of each
// language's alphabet (Unicode CLDR, alphabets.generated.ts) in characters mode, the IPA that
// espeak-ng writes in phonemes mode, and the punctuation the cleaners and the phonemizer keep. A
// symbol that is in the vocabulary but never occurred in training has an untrained embedding: the
// trainer records those (Tokenizer.unseenIn) so that synthesis can say so instead of failing.
import type { TextConfig } from '../../config/index.js';
import { ALPHABETS } from './alphabets.generated.js';

/** Punctuation the cleaners leave (ASCII after folding) and the phonemizer puts back, and the space. */
const PUNCTUATION = ' !"\'(),-.:;?¡¿';

/**
 * The IPA chart (International Phonetic Association, 2020 revision: pulmonic and non-pulmonic
 * consonants, other symbols, vowels, suprasegmentals, tones as letters) and the symbols espeak-ng's
 * --ipa output adds to it (ᵻ ᵿ ɚ ɝ, the r-coloured ˞, the glottal stop in "button" bʌʔn̩), with the
 * diacritics as combining marks. Plain Latin letters are in it too: most IPA consonants are.
 */
const IPA =
  'abcdefghijklmnopqrstuvwxyz' +
  'æçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɝɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʤʧβθχᵻᵿⱱ' +
  'ʰʱʲʷˀˁˈˌːˑ˞ˠˡˤ˥˦˧˨˩ⁿ↓↑→↗↘‖' +
  '\u0300\u0301\u0302\u0303\u0304\u0306\u0308\u030a\u030b\u030f\u0318\u0319\u031a\u031c\u031d\u031e' +
  '\u031f\u0320\u0324\u0325\u0329\u032a\u032c\u032f\u0330\u0334\u0339\u033a\u033b\u033c\u033d\u0361';

function codePoints(s: string): string[] {
  return [...new Set([...s])];
}

/** The alphabet CLDR gives for a language code ("pt-br" -> pt, "sr-latn" -> sr-latn), or undefined. */
export function cldrAlphabet(language: string): string | undefined {
  const code = language.toLowerCase();
  return ALPHABETS[code] ?? ALPHABETS[code.split('-')[0]];
}

/**
 * Symbols the vocabulary holds for these languages before any text is seen, written as the text
 * front end writes them (Unicode normalisation applied; upper case too when the cleaner keeps case).
 */
export function baseSymbols(
  text: Pick<TextConfig, 'tokenizer' | 'cleaners' | 'unicode_normalization'>,
  languages: readonly string[],
): string[] {
  let symbols = PUNCTUATION;
  if (text.tokenizer === 'phonemes') symbols += IPA;
  else {
    for (const language of languages) {
      const letters = cldrAlphabet(language) ?? '';
      symbols += letters;
      // The english and multilingual cleaners lower-case; basic keeps what the text has.
      if (text.cleaners === 'basic') symbols += letters.toLocaleUpperCase(language.split('-')[0]);
      // Digits are spelt out by the english cleaner only.
      if (text.cleaners !== 'english') symbols += '0123456789';
    }
  }
  if (text.unicode_normalization !== 'none') symbols = symbols.normalize(text.unicode_normalization);
  return codePoints(symbols);
}

/**
 * The share of a text's letters that its language's alphabet lacks (lower-cased, accents taken apart from their
 * letters first, so café counts as Latin for English), or undefined where CLDR gives no alphabet or the text has no
 * letter: near 1 for a sentence in another script ("Привет, мир" as English), near 0 for the language's own text
 * with a loanword in it.
 */
export function foreignLetterShare(text: string, language: string): number | undefined {
  const alphabet = cldrAlphabet(language);
  if (!alphabet) return undefined;
  const own = new Set(alphabet.normalize('NFD').replace(/\p{M}/gu, ''));
  const letters = text.toLocaleLowerCase(language.split('-')[0]).normalize('NFD').match(/\p{L}/gu);
  if (!letters) return undefined;
  return letters.filter((c) => !own.has(c)).length / letters.length;
}
