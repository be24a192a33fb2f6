// The machinery the per-language normalisers share: a linear scanner that finds each run of digits
// once and decides, from the few characters around it, whether it is a date, a time, money, a
// percentage, an ordinal, a year, a decimal or a plain number; and a whole-word abbreviation pass.
// Each language module supplies only words and small reading rules (NumberLanguage).
//
// Linear time: the scanner moves forward over the text and every pattern it tries is sticky at the
// digit it stands on and cannot backtrack more than the digits it consumes, so a row of 10,000
// digits costs one pass (it is read digit by digit: more than MAX_CARDINAL_DIGITS is no quantity).

export type Gender = 'm' | 'f';
export type Currency = '€' | '$' | '£' | 'R$';

/** Beyond this many digits a number is read digit by digit (serial numbers, not quantities). */
export const MAX_CARDINAL_DIGITS = 36;

export interface CurrencyWords {
  one: string;
  many: string;
  gender: Gender;
  subOne: string;
  subMany: string;
  subGender: Gender;
}

/** How one language reads numbers; the shared scanner decides which reading applies where. */
export interface NumberLanguage {
  /**
   * Cardinal words for digits without leading zeros ("0" is zero), at most MAX_CARDINAL_DIGITS long.
   * `gender` and `beforeNoun` choose agreeing forms where the language has them ("una", "un", "ein");
   * `next` is the word after it (Italian "uno studente").
   */
  cardinal(digits: string, gender: Gender, beforeNoun: boolean, next?: string): string;
  /** The gender of the word after a number, where the language's numbers agree with it. */
  genderOf?(word: string): Gender;
  /** Whether a number followed by `word` stands before a noun (for "un"/"uno", "ein"/"eins"). */
  isNoun?(word: string): boolean;
  /** A four-digit number without separators read as a year (German "neunzehnhundert..."); else cardinal. */
  year?(digits: string): string;
  minus: string;
  plus: string;
  /** The decimal separator's word ("Komma"). */
  point: string;
  /** Fraction digits read as a number after their leading zeros ("coma catorce"), else digit by digit. */
  fractionAsNumber: boolean;
  percent: string;
  currencies: Partial<Record<Currency, CurrencyWords>>;
  /** Joins whole and sub-unit amounts: "und", "con", "et". */
  moneyAnd: string;
  /** Joins an amount to its unit ("un million" + "euros" -> "un million d'euros"). */
  amountOf?(amount: string, unit: string): string;
  time(hours: number, minutes: number): string;
  date(day: number, month: number, year: string | undefined, prevWord: string): string;
  /** The customary numeric date, sticky at the day's first digit; groups: day, month, year (optional). */
  localDate?: RegExp;
  /** A date without a year ("3.10.") only after these words (lower-case): elsewhere it may be a section number. */
  yearlessDateAfter?: ReadonlySet<string>;
  /** Written ordinal suffix, sticky right after the digits ("º", "e", "te"); group 1 is the suffix. */
  ordinalSuffix?: RegExp;
  ordinal?(digits: string, suffix: string, prevWord: string, nextWord: string): string;
  /**
   * German-style "3." before a word is an ordinal (up to three digits: "1999." more often ends a
   * sentence), unless the word is one of these, which start sentences rather than follow ordinals.
   */
  dotOrdinal?: ReadonlySet<string>;
  /** The language's own time forms ("14.30 Uhr", "14h30"), sticky; groups: hours, minutes (optional). */
  times?: RegExp[];
  /** French groups thousands with a plain space ("10 000"). */
  spaceThousands?: boolean;
}

const LETTER = /[\p{L}\p{M}]/u;
const WORD_CHAR = /[\p{L}\p{M}\p{N}_]/u;
const ISO_DATE = /(\d{4})-(\d{1,2})-(\d{1,2})(?!\d|-\d)/y;
const TIME = /(\d{1,2}):(\d{2})(?!\d|[:.,]\d)/y;
/** French and Portuguese write times as "14h30" and "14 h". */
export const HOUR_H = /(\d{1,2}) ?h ?(\d{2})?(?![\p{L}\p{N}])/uy;
// A number as written: digit groups joined by thousands or decimal separators; which is which is
// decided in parseNumber. A plain space joins only a following group of exactly three digits.
const TOKEN = /\d+(?:[.,\u00a0\u202f]\d+)*/y;
const TOKEN_SPACED = /\d+(?:(?:[.,\u00a0\u202f]|\x20(?=\d{3}(?!\d)))\d+)*/y;
const PERCENT = /\s?%/y;
const CURRENCY_AFTER = /\s?(R\$|[$£€])/y;
const DOT_ORDINAL = /\.\s+(?=[\p{L}])/uy;
const NEXT_WORD = /\s+([\p{L}\p{M}]+)/uy;
const PREV_WORD = /([\p{L}\p{M}]+)\s*$/u;
const DIGIT_RUN = /\d+/g;

/** Each digit as a word, with the language's own digit names. */
export function digitsAsWords(digits: string, L: Pick<NumberLanguage, 'cardinal'>): string {
  let out = '';
  for (let i = 0; i < digits.length; i++) out += (i ? ' ' : '') + L.cardinal(digits[i], 'm', false);
  return out;
}

/** A whole number as words: leading zeros mark a code ("007"), and very long numbers are read digit by digit. */
export function wholeNumber(L: NumberLanguage, digits: string, gender: Gender = 'm', beforeNoun = false, next = '') {
  if ((digits.length > 1 && digits[0] === '0') || digits.length > MAX_CARDINAL_DIGITS) return digitsAsWords(digits, L);
  return L.cardinal(digits, gender, beforeNoun, next);
}

/** "3", "14" -> "drei Komma eins vier" or "tres coma catorce". */
export function decimalNumber(L: NumberLanguage, whole: string, fraction: string): string {
  const w = wholeNumber(L, whole.replace(/^0+(?=\d)/, ''));
  const lead = /^0*/.exec(fraction)![0];
  let f: string;
  if (!L.fractionAsNumber || fraction.length > 3 || lead.length === fraction.length) f = digitsAsWords(fraction, L);
  else f = [digitsAsWords(lead, L), L.cardinal(fraction.slice(lead.length), 'm', false)].filter(Boolean).join(' ');
  return `${w} ${L.point} ${f}`;
}

interface ParsedNumber {
  whole: string;
  fraction?: string;
}

function validGroups(groups: string[]): boolean {
  if (groups[0].length > 3) return false;
  for (let i = 1; i < groups.length; i++) if (groups[i].length !== 3) return false;
  return true;
}

/**
 * Which separators of "1.000,5" are thousands and which the decimal point. The language's own
 * convention (period or space for thousands, comma for decimals) wins; a single period before other
 * than three digits is an English-style decimal point ("1.5"), and where both kinds appear the last
 * one is the decimal ("1,000.50"). Anything else ("1.2.3", "1,2,3") is no single number: null.
 */
export function parseNumber(token: string): ParsedNumber | null {
  const seps = token.replace(/\d+/g, '');
  if (seps.length === 0) return { whole: token };
  const groups = token.split(/[^\d]/);
  const kinds = new Set(seps.replace(/[\u00a0\u202f ]/g, ' '));
  if (kinds.size === 1) {
    const sep = seps[0];
    if (sep === ',') {
      if (groups.length === 2) return { whole: groups[0], fraction: groups[1] };
      return validGroups(groups) ? { whole: groups.join('') } : null;
    }
    if (validGroups(groups)) return { whole: groups.join('') };
    if (sep === '.' && groups.length === 2) return { whole: groups[0], fraction: groups[1] };
    return null;
  }
  const last = seps[seps.length - 1];
  if (last === ' ' || seps.indexOf(last) !== seps.length - 1) return null;
  const wholeGroups = groups.slice(0, -1);
  return validGroups(wholeGroups) ? { whole: wholeGroups.join(''), fraction: groups[groups.length - 1] } : null;
}

/** "5,50 €" -> "fünf Euro und fünfzig Cent"; fractions of more than two digits are read as decimals. */
export function money(L: NumberLanguage, currency: Currency, n: ParsedNumber, negative: boolean): string {
  const c = L.currencies[currency] ?? L.currencies.$!;
  const join = L.amountOf ?? ((amount: string, unit: string) => `${amount} ${unit}`);
  const minus = negative ? `${L.minus} ` : '';
  const whole = n.whole.replace(/^0+(?=\d)/, '');
  if (n.fraction !== undefined && n.fraction.length > 2)
    return minus + join(decimalNumber(L, whole, n.fraction), c.many);
  const sub = n.fraction ? Number(n.fraction.padEnd(2, '0')) : 0;
  const parts: string[] = [];
  if (whole !== '0' || sub === 0)
    parts.push(join(wholeNumber(L, whole, c.gender, true), whole === '1' ? c.one : c.many));
  if (sub > 0) parts.push(`${L.cardinal(String(sub), c.subGender, true)} ${sub === 1 ? c.subOne : c.subMany}`);
  return minus + parts.join(` ${L.moneyAnd} `);
}

function validDate(day: number, month: number): boolean {
  return day >= 1 && day <= 31 && month >= 1 && month <= 12;
}

interface Read {
  from: number;
  to: number;
  words: string;
}

function prevWordOf(text: string, at: number): string {
  const m = PREV_WORD.exec(text.slice(Math.max(0, at - 24), at));
  return m ? m[1] : '';
}

function nextWordOf(text: string, at: number): string {
  NEXT_WORD.lastIndex = at;
  const m = NEXT_WORD.exec(text);
  return m ? m[1] : '';
}

/** Dates and times that start at digit `i`, or null. */
function readDateOrTime(text: string, i: number, L: NumberLanguage): Read | null {
  for (const re of L.localDate ? [ISO_DATE, L.localDate] : [ISO_DATE]) {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m) continue;
    const [day, month, year] = re === ISO_DATE ? [m[3], m[2], m[1]] : [m[1], m[2], m[3]];
    const prev = prevWordOf(text, i);
    if (year === undefined && !L.yearlessDateAfter?.has(prev.toLowerCase())) continue;
    if (validDate(Number(day), Number(month)))
      return { from: i, to: re.lastIndex, words: L.date(Number(day), Number(month), year, prev) };
  }
  // The middle of "10:20:30" is no time of day.
  if (i > 0 && text[i - 1] === ':') return null;
  for (const re of L.times ? [...L.times, TIME] : [TIME]) {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m) continue;
    const h = Number(m[1]);
    const min = m[2] === undefined ? 0 : Number(m[2]);
    if (h <= 24 && min <= 59) return { from: i, to: re.lastIndex, words: L.time(h, min) };
  }
  return null;
}

/** A sign or currency symbol written before digit `i` (not reaching back past `floor`). */
function readPrefix(text: string, i: number, floor: number): { from: number; sign: string; currency?: Currency } {
  let p = i;
  let sign = '';
  let signNextToDigits = false;
  let currency: Currency | undefined;
  const isSign = (ch: string) => ch === '-' || ch === '+';
  if (p > floor && isSign(text[p - 1])) {
    sign = text[--p];
    signNextToDigits = true;
  }
  let q = p > floor && text[p - 1] === ' ' ? p - 1 : p;
  if (q > floor && '€$£'.includes(text[q - 1])) {
    currency = text[--q] as Currency;
    if (currency === '$' && q > floor && text[q - 1] === 'R') {
      currency = 'R$';
      q--;
    }
    if (!sign && q > floor && isSign(text[q - 1])) sign = text[--q];
    p = q;
  }
  // A sign right after a word or a number is a hyphen or an operator: "COVID-19", "1990-95", "3+4".
  if (sign && p > 0 && WORD_CHAR.test(text[p - 1])) {
    if (!currency || signNextToDigits) return { from: i, sign: '' };
    return { from: p + 1, sign: '', currency };
  }
  if (currency === 'R$' && p > 0 && WORD_CHAR.test(text[p - 1])) return { from: i, sign: '' };
  return { from: p, sign, currency };
}

/** Digits and separators that make no single number ("1.2.3") are read one group at a time. */
function readGroups(token: string, L: NumberLanguage): string {
  return token.replace(DIGIT_RUN, (d) => wholeNumber(L, d));
}

/** Everything that starts at digit `i`: the reading, and the span of text it replaces. */
function readAt(text: string, i: number, floor: number, L: NumberLanguage): Read {
  const dt = readDateOrTime(text, i, L);
  if (dt) return dt;
  const tokenRe = L.spaceThousands ? TOKEN_SPACED : TOKEN;
  tokenRe.lastIndex = i;
  const token = tokenRe.exec(text)![0];
  let j = i + token.length;
  const n = parseNumber(token);
  if (!n) return { from: i, to: j, words: readGroups(token, L) };
  const pre = readPrefix(text, i, floor);
  const signWord = pre.sign === '-' ? `${L.minus} ` : pre.sign === '+' ? `${L.plus} ` : '';
  const read = (gender: Gender = 'm', beforeNoun = false, next = '') =>
    n.fraction !== undefined
      ? decimalNumber(L, n.whole, n.fraction)
      : wholeNumber(L, n.whole, gender, beforeNoun, next);
  if (pre.currency) return { from: pre.from, to: j, words: money(L, pre.currency, n, pre.sign === '-') };
  PERCENT.lastIndex = j;
  if (PERCENT.test(text)) return { from: pre.from, to: PERCENT.lastIndex, words: `${signWord}${read()} ${L.percent}` };
  CURRENCY_AFTER.lastIndex = j;
  const cur = CURRENCY_AFTER.exec(text);
  if (cur) {
    const currency = (cur[1] === 'R$' && !L.currencies['R$'] ? '$' : cur[1]) as Currency;
    return { from: pre.from, to: CURRENCY_AFTER.lastIndex, words: money(L, currency, n, pre.sign === '-') };
  }
  const plain = n.fraction === undefined && token === n.whole && !pre.sign;
  if (plain && L.ordinalSuffix && L.ordinal) {
    L.ordinalSuffix.lastIndex = j;
    const m = L.ordinalSuffix.exec(text);
    if (m) {
      const to = L.ordinalSuffix.lastIndex;
      return { from: i, to, words: L.ordinal(token, m[1], prevWordOf(text, i), nextWordOf(text, to)) };
    }
  }
  if (plain && L.dotOrdinal && L.ordinal && token.length <= 3) {
    DOT_ORDINAL.lastIndex = j;
    const next = DOT_ORDINAL.test(text) ? nextWordOf(text, j + 1) : '';
    if (next && !L.dotOrdinal.has(next))
      return { from: i, to: j + 1, words: L.ordinal(token, '.', prevWordOf(text, i), next) };
  }
  if (plain && L.year && token.length === 4 && token[0] !== '0') return { from: i, to: j, words: L.year(token) };
  const next = n.fraction === undefined ? nextWordOf(text, j) : '';
  const beforeNoun = next !== '' && (L.isNoun?.(next) ?? true);
  const gender = beforeNoun && L.genderOf ? L.genderOf(next) : 'm';
  j = i + token.length;
  return { from: pre.from, to: j, words: signWord + read(gender, beforeNoun, next) };
}

/** Read every number in `text` in language `L`; a number glued to a word is set apart by a space. */
export function scanNumbers(text: string, L: NumberLanguage): string {
  const digit = /\d/g;
  let out = '';
  let last = 0;
  for (let m = digit.exec(text); m; m = digit.exec(text)) {
    const r = readAt(text, m.index, last, L);
    let words = r.words;
    if (r.from > 0 && LETTER.test(text[r.from - 1])) words = ` ${words}`;
    if (r.to < text.length && LETTER.test(text[r.to])) words = `${words} `;
    out += text.slice(last, r.from) + words;
    last = r.to;
    digit.lastIndex = r.to;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** An abbreviation: as written (lower-case first letters also match capitalised), its reading, and a condition. */
export type Abbreviation = [written: string, reading: string, when?: 'digit' | 'capital' | 'end'];

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Whole-word abbreviation expansion. A period inside an abbreviation may be followed by a space
 * ("z. B." and "z.B."); a space written in one ("ad es.") stands for any whitespace. `digit` entries
 * expand only before a number ("Nr." is safe, "n." is not), `capital` ones only before a capitalised
 * word ("M. Dupont"), and `end` ones ("usw.", "etc.") keep their period where it also ends the sentence.
 */
export function abbreviationExpander(table: readonly Abbreviation[]): (text: string) => string {
  const byKey = new Map<string, Abbreviation>();
  const alternatives: string[] = [];
  for (const entry of [...table].sort((a, b) => b[0].length - a[0].length)) {
    const [written, , when] = entry;
    byKey.set(written.replace(/\s/g, '').toLowerCase(), entry);
    const chars = [...written];
    let re = chars
      .map((ch, k) => {
        if (ch === ' ') return '\\s+';
        if (ch === '.') return k === chars.length - 1 || chars[k + 1] === ' ' ? '\\.' : '\\.\\s?';
        if (k === 0 && ch !== ch.toUpperCase()) return `[${ch}${ch.toUpperCase()}]`;
        return escapeRe(ch);
      })
      .join('');
    if (!written.endsWith('.')) re += '(?![\\p{L}\\p{M}\\p{N}_])';
    if (when === 'digit') re += '(?=\\s?\\d)';
    if (when === 'capital') re += '(?=\\s+\\p{Lu})';
    alternatives.push(re);
  }
  const pattern = new RegExp(`(?<![\\p{L}\\p{M}\\p{N}_.'\\-])(?:${alternatives.join('|')})`, 'gu');
  const sentenceEnd = /^\s*(?:$|\p{Lu})/u;
  return (text) =>
    text.replace(pattern, (m: string, offset: number, all: string) => {
      const entry = byKey.get(m.replace(/\s/g, '').toLowerCase());
      if (!entry) return m;
      let reading = entry[1];
      if (m[0] !== m[0].toLowerCase() && entry[0][0] === entry[0][0].toLowerCase())
        reading = reading[0].toUpperCase() + reading.slice(1);
      const after = all.slice(offset + m.length, offset + m.length + 3);
      if (entry[2] === 'end' && sentenceEnd.test(after)) reading += '.';
      // A number glued to the period ("Nr.5") gets its space.
      if (/^\d/.test(after)) reading += ' ';
      return reading;
    });
}
