// The text front end: Unicode normalisation, cleaners, tokenizer, espeak-ng phonemes, languages,
// and the per-row entry points the data pipeline, trainer and synthesis call.
export {
  cleanText,
  cleanerVersion,
  normalizeUnicode,
  foldPunctuation,
  collapseWhitespace,
  lowerCase,
  expandAbbreviations,
  CLEANER_VERSIONS,
  CLEANER_LANGUAGES,
  cleanerClaims,
  type CleanerName,
  type UnicodeNormalization,
} from './cleaners.js';
export { NORMALIZED_LANGUAGES, normalizeForLanguage } from './normalize/index.js';
export { expandNumbers, cardinal, ordinal, year, digitsAsWords } from './numbers.js';
export {
  Tokenizer,
  PAD,
  BOS,
  EOS,
  UNK,
  SPECIAL_TOKENS,
  type TokenizerJSON,
  type TokenizerMode,
  type Encoded,
} from './tokenizer.js';
export { Phonemizer, espeakVersion, espeakVoice, splitPunctuation, type PhonemePiece } from './phonemizer.js';
export { detectLanguage, languageFromFilename, type DetectedLanguage } from './language.js';
export {
  prepareText,
  preparePhonemes,
  prepareTextBatch,
  tokenizerText,
  textIdentity,
  type PreparedText,
  type TextRowInput,
  type TextFrontConfig,
} from './frontend.js';
