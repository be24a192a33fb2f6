// English: the english cleaner's own readings (numbers.ts and its abbreviation table), plus ISO dates,
// which that cleaner leaves to its number pass: "2024-10-03" -> "October third, twenty twenty-four".
// cleaners.ts imports this folder and this file imports cleaners.ts back; the cycle is safe because
// nothing here runs at load time (see CLEANER_LANGUAGES there).
import { expandAbbreviations } from '../cleaners.js';
import { expandNumbers, ordinal, year } from '../numbers.js';

const MONTHS = 'January February March April May June July August September October November December'.split(' ');
const ISO_DATE = /(?<![\p{L}\p{N}_.\-])(\d{4})-(\d{2})-(\d{2})(?![\p{N}]|-\d)/gu;

function isoDates(text: string): string {
  return text.replace(ISO_DATE, (m, y: string, mo: string, d: string) => {
    const month = Number(mo);
    const day = Number(d);
    if (month < 1 || month > 12 || day < 1 || day > 31) return m;
    return `${MONTHS[month - 1]} ${ordinal(String(day))}, ${year(y)}`;
  });
}

export function normalizeEnglish(text: string): string {
  let s = expandAbbreviations(text.includes('-') ? isoDates(text) : text);
  if (s.includes('&')) s = s.replace(/\s*&\s*/g, ' and ');
  return expandNumbers(s);
}
