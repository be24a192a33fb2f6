// Text cleaners. Each has a version that enters the cache keys: change what a cleaner outputs and
// bump its version, and exactly the texts it cleaned are recomputed.
import type { TextConfig } from '../../config/schema.js';
import { expandNumbers } from './numbers.js';

export const CLEANER_VERSIONS: Record<TextConfig['cleaners'], string> = {
  english: 'english@1',
  multilingual: 'multilingual@1',
  basic: 'basic@1',
};

const ABBREVIATIONS: Record<string, string> = {
  mr: 'mister', mrs: 'missus', ms: 'miss', dr: 'doctor', drs: 'doctors', jr: 'junior', sr: 'senior', rev: 'reverend', hon: 'honorable',
  gen: 'general', col: 'colonel', lt: 'lieutenant', sgt: 'sergeant', capt: 'captain', maj: 'major', gov: 'governor', prof: 'professor',
  co: 'company', ltd: 'limited', inc: 'incorporated', esq: 'esquire', ft: 'fort', mt: 'mount', ave: 'avenue', vs: 'versus', etc: 'et cetera', no: 'number',
};

/** Typographic variants folded to one spelling so the vocabulary does not split on them. */
function foldPunctuation(s: string): string {
  return s
    .replace(/[\u2018\u2019\u201b\u2032\u00b4`]/g, "'")
    .replace(/[\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/\u2026/g, '...')
    .replace(/[\u00a0\u2000-\u200b\u202f\u205f\u3000]/g, ' ');
}

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

function expandAbbreviations(s: string): string {
  // "St." is "Street" after a capitalised word ("Main St.") and "Saint" before one ("St. Louis").
  s = s.replace(/\b([A-Z][a-z]+) St\.(?=\s|$|[,;])/g, '$1 Street').replace(/\bSt\.(?=\s+[A-Z])/g, 'Saint');
  // Whole words followed by a period only: "Dr." is expanded, "drum" and "dr" are not.
  return s.replace(/\b([A-Za-z]+)\.(?=\s|$|[,;:])/g, (m, word: string, offset: number) => {
    const full = ABBREVIATIONS[word.toLowerCase()];
    if (!full) return m;
    if (word.toLowerCase() === 'no' && !/^\s*\d/.test(s.slice(offset + m.length))) return m; // "No." only before a number
    return word[0] === word[0].toUpperCase() ? full[0].toUpperCase() + full.slice(1) : full;
  });
}

export function normalizeUnicode(text: string, form: TextConfig['unicode_normalization']): string {
  return form === 'none' ? text : text.normalize(form);
}

/** Clean one text with the configured cleaner (after Unicode normalisation). */
export function cleanText(text: string, text_: Pick<TextConfig, 'cleaners' | 'unicode_normalization'>): string {
  const t = normalizeUnicode(text, text_.unicode_normalization);
  switch (text_.cleaners) {
    case 'basic':
      return collapse(t);
    case 'multilingual':
      return collapse(foldPunctuation(t).toLowerCase());
    case 'english':
      return collapse(expandNumbers(expandAbbreviations(foldPunctuation(t))).toLowerCase());
  }
}
