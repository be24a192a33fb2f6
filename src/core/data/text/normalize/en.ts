// English: the english cleaner's own readings (numbers.ts and its abbreviation table), plus what its number pass
// would read digit group by digit group: ISO dates ("2024-10-03" -> "October third, twenty twenty-four"), dates
// with slashes ("12/05/2024": month first in American English and where no region is given, day first in the
// regions that write it so: "the twelfth of May, twenty twenty-four"; a day past 12 decides either way), and
// fractions of a denominator up to 16, 32, 64 or 100, on their own or after a whole number ("1/2" -> "one half",
// "1 3/4" -> "one and three quarters"). Other slashes between numbers ("24/7") stay as written.
// cleaners.ts imports this folder and this file imports cleaners.ts back; the cycle is safe because
// nothing here runs at load time (see CLEANER_LANGUAGES there).
import { expandAbbreviations } from '../cleaners.js';
import { cardinal, expandNumbers, ordinal, year } from '../numbers.js';

const MONTHS = 'January February March April May June July August September October November December'.split(' ');
const ISO_DATE = /(?<![\p{L}\p{N}_.\-])(\d{4})-(\d{2})-(\d{2})(?![\p{N}]|-\d)/gu;
const SLASH_DATE = /(?<![\p{L}\p{N}_./])(\d{1,2})\/(\d{1,2})\/(\d{4})(?![\p{N}]|\/\d)/gu;
const FRACTION = /(?<![\p{L}\p{N}_.,/])(?:(\d{1,3}) )?(\d{1,2})\/(\d{1,3})(?![\p{N}]|[.,/]\d)/gu;
/** Regions (ISO 3166) whose English writes the day first. */
const DAY_FIRST = new Set(['gb', 'uk', 'ie', 'au', 'nz', 'in', 'za', 'sg', 'hk', 'mt']);
const DENOMINATORS = new Set([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 64, 100]);

function isoDates(text: string): string {
  return text.replace(ISO_DATE, (m, y: string, mo: string, d: string) => {
    const month = Number(mo);
    const day = Number(d);
    if (month < 1 || month > 12 || day < 1 || day > 31) return m;
    return `${MONTHS[month - 1]} ${ordinal(String(day))}, ${year(y)}`;
  });
}

function slashDates(text: string, region: string): string {
  const dayFirst = DAY_FIRST.has(region);
  return text.replace(SLASH_DATE, (m, a: string, b: string, y: string) => {
    let [month, day] = dayFirst ? [Number(b), Number(a)] : [Number(a), Number(b)];
    if (month > 12 && day <= 12) [month, day] = [day, month];
    if (month < 1 || month > 12 || day < 1 || day > 31) return m;
    return dayFirst
      ? `the ${ordinal(String(day))} of ${MONTHS[month - 1]}, ${year(y)}`
      : `${MONTHS[month - 1]} ${ordinal(String(day))}, ${year(y)}`;
  });
}

function fractions(text: string): string {
  return text.replace(FRACTION, (m, whole: string | undefined, num: string, den: string) => {
    const n = Number(num);
    const d = Number(den);
    if (n < 1 || n >= d || !DENOMINATORS.has(d)) return m;
    const part = d === 2 ? 'half' : d === 4 ? 'quarter' : ordinal(den);
    const plural = n === 1 ? part : part === 'half' ? 'halves' : `${part}s`;
    if (whole === undefined) return `${cardinal(num)} ${plural}`;
    return `${cardinal(whole)} and ${n === 1 ? `a ${part}` : `${cardinal(num)} ${plural}`}`;
  });
}

/** English as the english cleaner reads it; `region` ("gb", "us", "") decides the order of a date's day and month. */
export function normalizeEnglish(text: string, region = ''): string {
  let s = text.includes('-') ? isoDates(text) : text;
  if (s.includes('/')) s = fractions(slashDates(s, region));
  s = expandAbbreviations(s);
  if (s.includes('&')) s = s.replace(/\s*&\s*/g, ' and ');
  return expandNumbers(s);
}
