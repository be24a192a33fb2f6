// Per-language text normalisation for the multilingual cleaner: numbers, ordinals, decimals, years,
// dates, times, percentages, currency and common abbreviations, read in the row's language. It runs
// before lower-casing, so abbreviations and nouns can be told by their capitals.
import { normalizeGerman } from './de.js';
import { normalizeEnglish } from './en.js';
import { normalizeSpanish } from './es.js';
import { normalizeFrench } from './fr.js';
import { normalizeItalian } from './it.js';
import { normalizeDutch } from './nl.js';
import { normalizePortuguese } from './pt.js';

const NORMALIZERS: Readonly<Record<string, (text: string, region: string) => string>> = {
  de: normalizeGerman,
  en: normalizeEnglish,
  es: normalizeSpanish,
  fr: normalizeFrench,
  it: normalizeItalian,
  nl: normalizeDutch,
  pt: normalizePortuguese,
};

/** The primary language codes normalizeForLanguage handles, sorted. */
export const NORMALIZED_LANGUAGES: readonly string[] = Object.freeze(Object.keys(NORMALIZERS).sort());

/** A language tag's primary subtag and region, lower-cased: "pt-BR" and "pt_br" are { primary: pt, region: br }. */
export function languageTag(language: string): { primary: string; region: string } {
  const [primary, region = ''] = language.toLowerCase().split(/[-_]/);
  return { primary, region };
}

/**
 * Normalise `text` for `language` ("de", "pt-BR"; the primary subtag decides, the region only picks
 * a variant's spelling); text in a language without a normaliser comes back unchanged.
 */
export function normalizeForLanguage(text: string, language: string): string {
  const { primary, region } = languageTag(language);
  const normalize = Object.hasOwn(NORMALIZERS, primary) ? NORMALIZERS[primary] : undefined;
  return normalize ? normalize(text, region) : text;
}
