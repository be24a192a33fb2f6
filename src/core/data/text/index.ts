// The text front end: Unicode normalisation, cleaners, tokenizer, espeak-ng phonemes, languages.
export { cleanText, normalizeUnicode, CLEANER_VERSIONS } from './cleaners.js';
export { expandNumbers, cardinal, ordinal, year } from './numbers.js';
export { Tokenizer, PAD, BOS, EOS, UNK, type TokenizerJSON, type Encoded } from './tokenizer.js';
export { Phonemizer, espeakVersion, espeakVoice } from './phonemizer.js';
export { detectLanguage, languageFromFilename, type DetectedLanguage } from './language.js';
