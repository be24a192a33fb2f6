// German: "1.000,5" -> "tausend Komma fünf", "1999" -> "neunzehnhundertneunundneunzig", "3. Oktober"
// -> "dritter Oktober", "3,50 €" -> "drei Euro und fünfzig Cent", "14:30" -> "vierzehn Uhr dreißig".
// Simplifications: numbers below a million are one word ("hundert", "tausend", not "einhundert");
// an ordinal's ending follows the word before it (after "am", "im", "dem", "den" ... "-en", else "-e",
// and "-er" before a month without article: "dritter Oktober"), which misses the neuter "drittes"
// and the strong forms after "ein"; "1" before a noun is "ein" or, if the noun looks feminine (-e,
// -ung, -heit, -keit, -schaft, -ion, -tät, -ei), "eine"; "3." before a word is an ordinal unless that
// word usually starts a sentence (articles, pronouns, "Dann": "Er wurde 3. Dann ..."), so a sentence
// that ends in a number and a next one that starts with a noun are still read as one ordinal; "3.10."
// without a year is a date only after "am", "vom", "bis", "zum", "ab", "seit" and articles.
import { type Abbreviation, abbreviationExpander, type NumberLanguage, scanNumbers } from './common.js';

const ONES = [
  'null',
  'eins',
  'zwei',
  'drei',
  'vier',
  'fünf',
  'sechs',
  'sieben',
  'acht',
  'neun',
  'zehn',
  'elf',
  'zwölf',
  'dreizehn',
  'vierzehn',
  'fünfzehn',
  'sechzehn',
  'siebzehn',
  'achtzehn',
  'neunzehn',
];
const TENS = ['', '', 'zwanzig', 'dreißig', 'vierzig', 'fünfzig', 'sechzig', 'siebzig', 'achtzig', 'neunzig'];
// Long scale, as German uses it: Milliarde for 10^9, Billion for 10^12, up to 10^33.
const SCALES = ['Million', 'Milliarde', 'Billion', 'Billiarde', 'Trillion', 'Trilliarde'].concat([
  'Quadrillion',
  'Quadrilliarde',
  'Quintillion',
  'Quintilliarde',
]);
const SCALES_PLURAL = SCALES.map((s) => (s.endsWith('e') ? `${s}n` : `${s}en`));
const MONTHS = [
  'Januar',
  'Februar',
  'März',
  'April',
  'Mai',
  'Juni',
  'Juli',
  'August',
  'September',
  'Oktober',
  'November',
  'Dezember',
];

/** 0..99; `compound` is the form inside a longer word ("ein" in "einundzwanzig", "eintausend"). */
function below100(n: number, compound: boolean): string {
  if (n < 20) return n === 1 && compound ? 'ein' : ONES[n];
  const unit = n % 10;
  return unit ? `${unit === 1 ? 'ein' : ONES[unit]}und${TENS[Math.floor(n / 10)]}` : TENS[Math.floor(n / 10)];
}

function below1000(n: number, compound: boolean): string {
  const h = Math.floor(n / 100);
  const rest = n % 100;
  const head = h === 0 ? '' : h === 1 ? 'hundert' : `${ONES[h]}hundert`;
  if (rest === 0) return head || ONES[0];
  return head + below100(rest, compound);
}

function belowMillion(n: number, compound: boolean): string {
  const th = Math.floor(n / 1000);
  const rest = n % 1000;
  const head = th === 0 ? '' : th === 1 ? 'tausend' : `${below1000(th, true)}tausend`;
  if (rest === 0) return head || ONES[0];
  return head + below1000(rest, compound);
}

function cardinal(digits: string, gender: 'm' | 'f' = 'm', beforeNoun = false): string {
  if (digits === '1' && beforeNoun) return gender === 'f' ? 'eine' : 'ein';
  if (digits.length <= 6) return belowMillion(Number(digits), false);
  let n = BigInt(digits);
  const parts: string[] = [];
  for (let k = SCALES.length - 1; k >= 0; k--) {
    const value = 10n ** BigInt(6 + 3 * k);
    if (n < value) continue;
    const count = n / value;
    n %= value;
    parts.push(count === 1n ? `eine ${SCALES[k]}` : `${cardinal(count.toString())} ${SCALES_PLURAL[k]}`);
  }
  if (n > 0n) parts.push(belowMillion(Number(n), false));
  return parts.join(' ');
}

function year(digits: string): string {
  const n = Number(digits);
  if (n < 1100 || n >= 2000) return cardinal(digits);
  return `${below100(Math.floor(n / 100), false)}hundert${n % 100 ? below100(n % 100, false) : ''}`;
}

const ORDINAL_STEMS: Record<number, string> = { 1: 'erst', 3: 'dritt', 7: 'siebt', 8: 'acht' };

/** The ordinal stem without its ending: "dritt", "zwanzigst", "hunderterst". */
function ordinalStem(digits: string): string {
  const n = Number(digits);
  if (digits.length > 6)
    return `${cardinal(digits)
      .replace(/^eine /, '')
      .toLowerCase()}st`;
  const small = n % 100;
  if (small >= 1 && small < 20) {
    const head = n - small ? belowMillion(n - small, true) : '';
    return head + (ORDINAL_STEMS[small] ?? `${ONES[small]}t`);
  }
  return `${belowMillion(n, false)}st`;
}

const WEAK_AFTER = new Set(['der', 'die', 'das', 'diese', 'dieser', 'dieses', 'jede', 'jeder', 'jedes']);
const EN_AFTER = new Set(
  (
    'am im vom zum zur beim dem den des einem einen eines einer seinem seinen seiner ihrem ihren ihrer ' +
    'diesem diesen'
  ).split(' '),
);
const MONTH_SET = new Set(MONTHS);

function ordinalEnding(prevWord: string, nextWord: string): string {
  const prev = prevWord.toLowerCase();
  if (EN_AFTER.has(prev)) return 'en';
  if (WEAK_AFTER.has(prev)) return 'e';
  return MONTH_SET.has(nextWord) ? 'er' : 'e';
}

function ordinal(digits: string, suffix: string, prevWord: string, nextWord: string): string {
  // "90er", "1990er", "ein 3er": decades and nicknames take "-er" on the number ("Neunziger").
  if (suffix.startsWith('er')) return (digits.length === 4 ? year(digits) : cardinal(digits)) + suffix;
  // Written endings ("3ten", "3te") say the ending; "3." leaves it to the words around it.
  const ending = suffix === '.' ? ordinalEnding(prevWord, nextWord) : suffix.replace(/^s?t/, '');
  return ordinalStem(digits) + ending;
}

function date(day: number, month: number, y: string | undefined, prevWord: string): string {
  const d = ordinalStem(String(day)) + ordinalEnding(prevWord, MONTHS[month - 1]);
  return `${d} ${MONTHS[month - 1]}${y ? ` ${year(y)}` : ''}`;
}

const FEMININE = /(?:e|ung|heit|keit|schaft|ion|tät|ei|in)$/;

export const GERMAN: NumberLanguage = {
  cardinal,
  genderOf: (word) => (FEMININE.test(word) ? 'f' : 'm'),
  // German nouns are capitalised: "1 Hund" is "ein Hund", but "1 und 2" stays "eins und zwei".
  isNoun: (word) => word[0] !== word[0].toLowerCase(),
  year,
  minus: 'minus',
  plus: 'plus',
  point: 'Komma',
  fractionAsNumber: false,
  percent: 'Prozent',
  currencies: {
    '€': { one: 'Euro', many: 'Euro', gender: 'm', subOne: 'Cent', subMany: 'Cent', subGender: 'm' },
    $: { one: 'Dollar', many: 'Dollar', gender: 'm', subOne: 'Cent', subMany: 'Cent', subGender: 'm' },
    '£': { one: 'Pfund', many: 'Pfund', gender: 'm', subOne: 'Penny', subMany: 'Pence', subGender: 'm' },
  },
  moneyAnd: 'und',
  time: (h, m) => `${h === 1 ? 'ein' : cardinal(String(h))} Uhr${m ? ` ${cardinal(String(m))}` : ''}`,
  date,
  // "3.10.2024"; "3.10." without a year only before a space or the end ("am 3.10. kommt sie").
  localDate: /(\d{1,2})\.(\d{1,2})\.(?:(\d{4})(?!\d|\.\d)|(?=\s|$))/y,
  times: [/(\d{1,2})(?:[:.](\d{2}))?\s?Uhr(?![\p{L}])/uy],
  ordinalSuffix: /(s?te[nrsm]?|er[ns]?)(?![\p{L}\p{N}])/uy,
  ordinal,
  dotOrdinal: new Set(
    (
      'Der Die Das Den Dem Des Ein Eine Er Sie Es Ich Wir Ihr Man Und Aber Doch Denn Dann Danach Da Dabei ' +
      'Auch Als Wenn So Nun Jetzt Heute Hier Dort Im Am In Mit Auf Bei'
    ).split(' '),
  ),
  yearlessDateAfter: new Set('am vom bis zum ab seit den dem der'.split(' ')),
};

const ABBREVIATIONS: Abbreviation[] = [
  ['z.B.', 'zum Beispiel'],
  ['d.h.', 'das heißt'],
  ['u.a.', 'unter anderem'],
  ['z.T.', 'zum Teil'],
  ['u.U.', 'unter Umständen'],
  ['o.Ä.', 'oder Ähnliches'],
  ['usw.', 'und so weiter', 'end'],
  ['etc.', 'et cetera', 'end'],
  ['bzw.', 'beziehungsweise'],
  ['ca.', 'circa'],
  ['Dr.', 'Doktor'],
  ['Prof.', 'Professor'],
  ['Nr.', 'Nummer'],
  ['Hr.', 'Herr'],
  ['Fr.', 'Frau', 'capital'],
  ['Str.', 'Straße'],
  ['evtl.', 'eventuell'],
  ['ggf.', 'gegebenenfalls'],
  ['inkl.', 'inklusive'],
  ['vgl.', 'vergleiche'],
  ['bspw.', 'beispielsweise'],
  ['Mio.', 'Millionen'],
  ['Mrd.', 'Milliarden'],
  ['Jh.', 'Jahrhundert'],
  ['St.', 'Sankt', 'capital'],
  ['Abb.', 'Abbildung'],
  ['S.', 'Seite', 'digit'],
  ['v.Chr.', 'vor Christus'],
  ['n.Chr.', 'nach Christus'],
];
const expandAbbreviations = abbreviationExpander(ABBREVIATIONS);

export function normalizeGerman(text: string): string {
  return scanNumbers(expandAbbreviations(text), GERMAN);
}
