// Text cleaners. Each has a version that enters the cache keys: change what a cleaner outputs and
// bump its version, and exactly the texts it cleaned are recomputed. The versions also carry the
// Unicode version of the running Node (its ICU decides toLowerCase and normalize), so a Node upgrade
// that changes case mappings invalidates cleaned text instead of silently mixing two spellings.
import type { TextConfig } from '../../config/index.js';
import { languageTag, NORMALIZED_LANGUAGES, normalizeForLanguage } from './normalize/index.js';
import { normalizeEnglish } from './normalize/en.js';

export type CleanerName = TextConfig['cleaners'];
export type UnicodeNormalization = TextConfig['unicode_normalization'];

const UNICODE = `unicode${process.versions.unicode ?? 'unknown'}`;

/** The version of each cleaner's output, as it enters cache keys ("english@4+unicode17.0"). */
export const CLEANER_VERSIONS: Readonly<Record<CleanerName, string>> = {
  english: `english@4+${UNICODE}`,
  multilingual: `multilingual@5+${UNICODE}`,
  basic: `basic@1+${UNICODE}`,
};

/**
 * The languages whose numbers, dates and abbreviations each cleaner reads (primary subtags), or 'any'
 * for a cleaner that reads nothing language-specific. The multilingual cleaner still cleans rows in
 * other languages; it only leaves their digits and abbreviations as written.
 */
export const CLEANER_LANGUAGES: Readonly<Record<CleanerName, readonly string[] | 'any'>> = Object.freeze({
  english: Object.freeze(['en']),
  // A getter: normalize/en.ts imports this module back, so NORMALIZED_LANGUAGES may not be initialised
  // yet while this module loads (when normalize/ is imported first).
  get multilingual() {
    return NORMALIZED_LANGUAGES;
  },
  basic: 'any' as const,
});

/** Whether `cleaner` claims `language` ("pt-BR" matches "pt"; case-insensitive). */
export function cleanerClaims(cleaner: CleanerName, language: string): boolean {
  const claimed = CLEANER_LANGUAGES[cleaner];
  if (claimed === 'any') return true;
  return claimed.includes(languageTag(language).primary);
}

export function cleanerVersion(name: CleanerName): string {
  return CLEANER_VERSIONS[name];
}

export function normalizeUnicode(text: string, form: UnicodeNormalization): string {
  return form === 'none' ? text : text.normalize(form);
}

// Typographic and script-specific variants folded to one spelling, so the vocabulary does not split
// on them: quotes, dashes, ellipsis, full-width ASCII (U+FF01-FF5E), and CJK, Arabic and Devanagari
// sentence punctuation. Unicode spaces are left to collapseWhitespace (JavaScript's \s covers them).
const FOLD: Record<string, string> = {};
for (const ch of '\u2018\u2019\u201a\u201b\u2032\u2035\u00b4`\u2039\u203a') FOLD[ch] = "'";
for (const ch of '\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb\u300c\u300d\u300e\u300f') FOLD[ch] = '"';
for (const ch of '\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63') FOLD[ch] = '-';
FOLD['\u2026'] = '...';
Object.assign(FOLD, {
  '\u3002': '.',
  '\uff61': '.',
  '\u3001': ',',
  '\uff64': ',',
  '\u060c': ',',
  '\u061b': ';',
  '\u061f': '?',
  '\u0964': '.',
  '\u0965': '.',
});
for (let c = 0xff01; c <= 0xff5e; c++) FOLD[String.fromCharCode(c)] = String.fromCharCode(c - 0xfee0);
// Invisible characters that carry no sound: zero-width space, word joiner, BOM, soft hyphen and
// bidirectional controls. ZWJ and ZWNJ (U+200C/D) stay: Persian and Indic spelling depends on them.
for (const ch of '\u200b\u2060\ufeff\u00ad\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069')
  FOLD[ch] = '';
const FOLD_RE = new RegExp(
  `[${Object.keys(FOLD)
    .join('')
    .replace(/[\]\\^-]/g, '\\$&')}]|[\\u0000-\\u0008\\u000e-\\u001f\\u007f-\\u009f]`,
  'g',
);
const PLAIN_ASCII = /^[\x20-\x7e]*$/;

/** Fold punctuation variants and drop invisible characters; control characters become spaces. */
export function foldPunctuation(text: string): string {
  if (PLAIN_ASCII.test(text)) return text;
  return text.replace(FOLD_RE, (ch) => FOLD[ch] ?? ' ');
}

const NEEDS_COLLAPSE = /[^\S ]| {2}/;

export function collapseWhitespace(text: string): string {
  // Most cleaned rows have single spaces only; replacing each of them would copy the row for nothing.
  return (NEEDS_COLLAPSE.test(text) ? text.replace(/\s+/g, ' ') : text).trim();
}

// Languages whose lower-casing differs from the default Unicode mapping (dotted and dotless i).
const LOCALE_LOWER = new Set(['tr', 'az', 'lt']);

/** Unicode-aware lower-casing; Turkish, Azerbaijani and Lithuanian use their own rules. */
export function lowerCase(text: string, language?: string): string {
  const primary = language?.split('-')[0].toLowerCase();
  return primary && LOCALE_LOWER.has(primary) ? text.toLocaleLowerCase(primary) : text.toLowerCase();
}

// English abbreviations, expanded only as whole words ending in a period ("Dr." but never "drum",
// "dr" or "Adr."). From Ito's english_cleaners list, plus common ones his list lacks. Case decides
// nothing here: the cleaner lower-cases afterwards, so "DR." and "dr." read alike. The abbreviation's
// period is consumed, as in Ito's cleaner ("Main St." -> "main street" inside a sentence), unless it also ends the
// sentence (sentenceEnds below).
const ABBREVIATIONS: Record<string, string> = {
  mr: 'mister',
  mrs: 'missus',
  ms: 'miss',
  messrs: 'messieurs',
  dr: 'doctor',
  drs: 'doctors',
  jr: 'junior',
  sr: 'senior',
  rev: 'reverend',
  hon: 'honorable',
  gen: 'general',
  col: 'colonel',
  lt: 'lieutenant',
  sgt: 'sergeant',
  capt: 'captain',
  cmdr: 'commander',
  adm: 'admiral',
  maj: 'major',
  gov: 'governor',
  sen: 'senator',
  rep: 'representative',
  pres: 'president',
  supt: 'superintendent',
  prof: 'professor',
  co: 'company',
  corp: 'corporation',
  ltd: 'limited',
  inc: 'incorporated',
  bros: 'brothers',
  esq: 'esquire',
  ft: 'fort',
  mt: 'mount',
  ave: 'avenue',
  blvd: 'boulevard',
  rd: 'road',
  hwy: 'highway',
  dept: 'department',
  univ: 'university',
  approx: 'approximately',
  vs: 'versus',
  etc: 'et cetera',
  vol: 'volume',
  ch: 'chapter',
};
// Titles that British style writes without a period ("Dr Smith", "St Paul"): expanded without one
// only when written with a capital and followed by a capitalised word.
const TITLES_WITHOUT_PERIOD = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'st',
  'mt',
  'ft',
  'capt',
  'sgt',
  'lt',
  'col',
  'gen',
  'rev',
  'gov',
  'supt',
]);
// Months and days abbreviated with a period, only when capitalised ("Jan." but not "jan.").
const CAPITALISED: Record<string, string> = {
  jan: 'january',
  feb: 'february',
  mar: 'march',
  apr: 'april',
  jun: 'june',
  jul: 'july',
  aug: 'august',
  sep: 'september',
  sept: 'september',
  oct: 'october',
  nov: 'november',
  dec: 'december',
  mon: 'monday',
  tue: 'tuesday',
  tues: 'tuesday',
  wed: 'wednesday',
  thu: 'thursday',
  thur: 'thursday',
  thurs: 'thursday',
  fri: 'friday',
  sat: 'saturday',
};

// Only the words in the tables are candidates; the regex does the filtering so ordinary words cost
// nothing. Letters are matched case-insensitively by class ([dD][rR]) because /i would also make
// \p{Lu} match lower-case letters.
const ABBREVIATION_WORDS = [
  ...new Set([...Object.keys(ABBREVIATIONS), ...TITLES_WITHOUT_PERIOD, ...Object.keys(CAPITALISED), 'no', 'nos', 'st']),
]
  .sort((a, b) => b.length - a.length)
  .map((w) => [...w].map((c) => `[${c}${c.toUpperCase()}]`).join(''));
// Shape: a candidate word (the leading \b lets the regex engine skip ahead cheaply; the lookbehind
// then checks the character before the word with Unicode classes), not followed by a letter, then
// either its period (with what follows it) or, for titles without one, space and a capital.
const ABBREVIATION_RE = new RegExp(
  `\\b(${ABBREVIATION_WORDS.join('|')})(?![\\p{L}\\p{M}\\p{N}_])(?<![\\p{L}\\p{M}\\p{N}_'.]\\1)` +
    `(?:(\\.)(?=(\\s*)(\\p{Lu}|\\p{N})?)|(?=(\\s+)(\\p{Lu})))`,
  'gu',
);
// Words that end a phrase rather than stand before a name or a number: before a capital their period is also the
// sentence's ("We live on Main St. It is quiet."), where a title's is not ("Dr. Smith").
const PHRASE_ENDS = new Set(['jr', 'sr', 'esq', 'co', 'corp', 'ltd', 'inc', 'bros', 'etc', 'ave', 'blvd', 'rd', 'hwy']);
const MONTHS = new Set(['jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec']);
// A title after a determiner and before a word that starts sentences, not a name, is a noun ("I saw the Dr. He
// said …"); "the Rev. Martin Luther King" keeps its title.
const DETERMINER_BEFORE = /\b(?:the|a|an|my|your|his|her|our|their|this|that)\s+$/i;
const SENTENCE_OPENER =
  /^\s+(?:He|She|It|They|We|I|You|The|This|That|These|Those|There|Then|But|And|So|His|Her|Its|Our|Their|My|Your)\b/;

/**
 * Whether an abbreviation's period (the abbreviation from `start`, its period ending at `end`) also ends the
 * sentence, so that the expansion keeps one: nothing but closing quotes or brackets after it, a capital after a word
 * that ends a phrase (Inc., etc., a street, a month), or a title used as a noun (DETERMINER_BEFORE).
 */
function sentenceEnds(text: string, start: number, end: number, key: string, street: boolean): boolean {
  const rest = text.slice(end);
  if (/^["'”’)\]]*\s*$/.test(rest)) return true;
  if (!/^\s+\p{Lu}/u.test(rest)) return false;
  if (PHRASE_ENDS.has(key) || MONTHS.has(key) || street) return true;
  return (
    TITLES_WITHOUT_PERIOD.has(key) &&
    key !== 'st' &&
    SENTENCE_OPENER.test(rest) &&
    DETERMINER_BEFORE.test(text.slice(Math.max(0, start - 12), start))
  );
}
const LETTER_DOTS_RE = /(?<![\p{L}\p{M}\p{N}])(?:e\.g\.|i\.e\.|a\.k\.a\.)/giu;
const LETTER_DOTS: Record<string, string> = { 'e.g.': 'for example', 'i.e.': 'that is', 'a.k.a.': 'also known as' };
const SENTENCE_START = /(?:^|[.!?"(]\s*)$/;

function isCapitalised(word: string): boolean {
  return word[0] !== word[0].toLowerCase();
}

/**
 * "St." is "Saint" before a capitalised word ("St. Louis", "In St. Petersburg") unless it follows a
 * capitalised word inside the sentence or a number ("Main St.", "42nd St."), where it is "Street".
 */
function street(text: string, offset: number, followedByCapital: boolean): boolean {
  const before = text.slice(Math.max(0, offset - 40), offset);
  const prev = /([\p{L}\p{N}]+)(\s+)$/u.exec(before);
  if (!prev) return !followedByCapital;
  const prevWord = prev[1];
  if (/\p{N}/u.test(prevWord)) return true;
  if (isCapitalised(prevWord) && !SENTENCE_START.test(before.slice(0, prev.index))) return true;
  return !followedByCapital;
}

/** Expand English abbreviations that are whole words (documented above each table). */
export function expandAbbreviations(text: string): string {
  if (/\.[gGeEkK]\./.test(text)) text = text.replace(LETTER_DOTS_RE, (m) => LETTER_DOTS[m.toLowerCase()]);
  return text.replace(
    ABBREVIATION_RE,
    (
      m,
      word: string,
      dot: string | undefined,
      dotSpace: string | undefined,
      dotNext: string | undefined,
      titleSpace: string | undefined,
      titleNext: string | undefined,
      offset: number,
    ) => {
      const space = dot ? dotSpace! : titleSpace!;
      const next = dot ? dotNext : titleNext;
      const key = word.toLowerCase();
      // Lower-case right after a number these are units ("5 ft.", "20 ms"), which expandNumbers reads.
      if ((word === 'ft' || word === 'ms') && /\p{N}\s*$/u.test(text.slice(Math.max(0, offset - 3), offset))) return m;
      const capital = next !== undefined && /\p{Lu}/u.test(next);
      const digit = next !== undefined && !capital;
      if (!dot) {
        if (!TITLES_WITHOUT_PERIOD.has(key) || !isCapitalised(word) || !capital || space.length === 0) return m;
        if (key === 'st') return street(text, offset, true) ? 'street' : 'saint';
        return ABBREVIATIONS[key];
      }
      if (key === 'no' || key === 'nos') return digit ? (key === 'no' ? 'number' : 'numbers') : m;
      const isStreet = key === 'st' && street(text, offset, capital && space.length > 0);
      const words =
        key === 'st'
          ? isStreet
            ? 'street'
            : 'saint'
          : CAPITALISED[key] && isCapitalised(word)
            ? CAPITALISED[key]
            : ABBREVIATIONS[key];
      if (words === undefined) return m;
      return sentenceEnds(text, offset, offset + m.length, key, isStreet) ? `${words}.` : words;
    },
  );
}

/** Whether a cleaned text has anything to speak: a letter or a digit (punctuation alone, "?!...", is nothing). */
export function hasSpeech(cleaned: string): boolean {
  return /[\p{L}\p{N}]/u.test(cleaned);
}

/**
 * Clean one text with the configured cleaner, after Unicode normalisation.
 * `language` decides the multilingual cleaner's readings of numbers, dates and abbreviations (see
 * normalize/) and its lower-casing (Turkish dotless i); the english cleaner reads only its region, which orders a
 * date's day and month (en-GB: day first).
 */
export function cleanText(
  text: string,
  config: Pick<TextConfig, 'cleaners' | 'unicode_normalization'>,
  language?: string,
): string {
  const t = normalizeUnicode(text, config.unicode_normalization);
  switch (config.cleaners) {
    case 'basic':
      return collapseWhitespace(t);
    case 'multilingual': {
      const folded = foldPunctuation(t);
      const normalized = language ? normalizeForLanguage(folded, language) : folded;
      return collapseWhitespace(lowerCase(normalized, language));
    }
    case 'english': {
      const region = language ? languageTag(language).region : '';
      return collapseWhitespace(normalizeEnglish(foldPunctuation(t), region).toLowerCase());
    }
  }
}
