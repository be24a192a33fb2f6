// English number normalisation for TTS: cardinals (negatives, thousands separators), ordinals,
// decimals, currency, percentages, times, decades and years. Readings follow Keith Ito's Tacotron
// `english_cleaners` (keithito/tacotron, text/numbers.py), which LJSpeech-era front ends share:
// "1999" -> "nineteen ninety-nine", "2005" -> "two thousand five", "2010" -> "twenty ten",
// "$5.50" -> "five dollars, fifty cents". Where Ito reads digits glued to letters ("mp3") as one
// word, we put a space between them so the reading is a word the model has heard.

const ONES = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
// Short scale, as American and modern British English use it.
const SCALES: [bigint, string][] = [
  [10n ** 33n, 'decillion'],
  [10n ** 30n, 'nonillion'],
  [10n ** 27n, 'octillion'],
  [10n ** 24n, 'septillion'],
  [10n ** 21n, 'sextillion'],
  [10n ** 18n, 'quintillion'],
  [10n ** 15n, 'quadrillion'],
  [10n ** 12n, 'trillion'],
  [10n ** 9n, 'billion'],
  [10n ** 6n, 'million'],
  [1000n, 'thousand'],
];
/** Beyond the largest scale a number is read digit by digit (serial numbers, not quantities). */
const MAX_CARDINAL_DIGITS = 36;

function below1000(n: number): string {
  const parts: string[] = [];
  if (n >= 100) {
    parts.push(`${ONES[Math.floor(n / 100)]} hundred`);
    n %= 100;
  }
  if (n >= 20) parts.push(TENS[Math.floor(n / 10)] + (n % 10 ? `-${ONES[n % 10]}` : ''));
  else if (n > 0 || parts.length === 0) parts.push(ONES[n]);
  return parts.join(' ');
}

/** Each digit as a word: "0451" -> "zero four five one". */
export function digitsAsWords(digits: string): string {
  let out = '';
  for (let i = 0; i < digits.length; i++) out += (i ? ' ' : '') + ONES[digits.charCodeAt(i) - 48];
  return out;
}

/** Cardinal words for a non-negative integer given as digits ("1234" -> "one thousand two hundred thirty-four"). */
export function cardinal(digits: string): string {
  if (digits.length <= 3) return below1000(Number(digits));
  if (digits.replace(/^0+/, '').length > MAX_CARDINAL_DIGITS) return digitsAsWords(digits);
  let n = BigInt(digits);
  if (n === 0n) return 'zero';
  const parts: string[] = [];
  for (const [value, name] of SCALES) {
    if (n >= value) {
      parts.push(`${cardinal((n / value).toString())} ${name}`);
      n %= value;
    }
  }
  if (n > 0n) parts.push(below1000(Number(n)));
  return parts.join(' ');
}

const ORDINAL_EXCEPTIONS: Record<string, string> = {
  one: 'first',
  two: 'second',
  three: 'third',
  five: 'fifth',
  eight: 'eighth',
  nine: 'ninth',
  twelve: 'twelfth',
};

/** The ordinal of the last word of a cardinal reading ("twenty-one" -> "twenty-first"). */
function ordinalOfWords(words: string): string {
  const m = /([a-z]+)$/.exec(words)!;
  const last = m[1];
  const ord = ORDINAL_EXCEPTIONS[last] ?? (last.endsWith('y') ? `${last.slice(0, -1)}ieth` : `${last}th`);
  return words.slice(0, m.index) + ord;
}

/** "22" -> "twenty-second", "103" -> "one hundred third". */
export function ordinal(digits: string): string {
  return ordinalOfWords(cardinal(digits));
}

/**
 * A four-digit number read as a year, as Ito's cleaner reads every number from 1001 to 2999:
 * "1999" -> "nineteen ninety-nine", "1900" -> "nineteen hundred", "1905" -> "nineteen oh five",
 * "2005" -> "two thousand five", "2010" -> "twenty ten". Other values are read as cardinals.
 */
export function year(digits: string): string {
  const n = Number(digits);
  if (digits.length !== 4 || n <= 1000 || n >= 3000) return cardinal(digits);
  if ((n > 1000 && n < 1010) || (n >= 2000 && n < 2010)) return cardinal(digits);
  const hi = Math.floor(n / 100);
  const lo = n % 100;
  if (lo === 0) return `${cardinal(String(hi))} hundred`;
  return `${cardinal(String(hi))} ${lo < 10 ? `oh ${ONES[lo]}` : below1000(lo)}`;
}

/** Plural of a number reading, for decades and "in twos": "sixty" -> "sixties", "six" -> "sixes". */
function pluralOfWords(words: string): string {
  if (words.endsWith('y')) return `${words.slice(0, -1)}ies`;
  if (words.endsWith('x')) return `${words}es`;
  return `${words}s`;
}

type CurrencyNames = [one: string, many: string, subOne: string, subMany: string];
const CURRENCIES: Record<string, CurrencyNames> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '¥': ['yen', 'yen', 'sen', 'sen'],
  '₹': ['rupee', 'rupees', 'paisa', 'paise'],
};

/** "$5.50" -> "five dollars, fifty cents"; fractions of more than two digits are read as decimals. */
function money(symbol: string, whole: string, fraction: string | undefined): string {
  const [one, many, subOne, subMany] = CURRENCIES[symbol];
  if (fraction !== undefined && fraction.length > 2) return `${decimal(whole, fraction)} ${many}`;
  const w = whole.replace(/^0+(?=\d)/, '');
  const f = fraction ? Number(fraction.padEnd(2, '0')) : 0;
  const parts: string[] = [];
  if (w !== '0' || f === 0) parts.push(`${cardinal(w)} ${w === '1' ? one : many}`);
  if (f > 0) parts.push(`${cardinal(String(f))} ${f === 1 ? subOne : subMany}`);
  return parts.join(', ');
}

/** "3", "14" -> "three point one four". */
function decimal(whole: string, fraction: string | undefined): string {
  return fraction ? `${cardinal(whole)} point ${digitsAsWords(fraction)}` : cardinal(whole);
}

/** A unit's names whose plural adds an "s". */
const regular = (one: string): [one: string, many: string] => [one, `${one}s`];

// Units read only right after a number ("5 ft." -> "five feet"; "ft." alone is Ito's "fort").
const UNITS: Record<string, [one: string, many: string]> = {
  ft: ['foot', 'feet'],
  lb: regular('pound'),
  lbs: regular('pound'),
  oz: regular('ounce'),
  mph: ['mile per hour', 'miles per hour'],
  km: regular('kilometer'),
  kg: regular('kilogram'),
  cm: regular('centimeter'),
  mm: regular('millimeter'),
  mg: regular('milligram'),
  ms: regular('millisecond'),
  ml: regular('milliliter'),
};

// A number as written: digits with optional thousands separators ("1,234"), optional decimals.
const NUM = String.raw`(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?`;
// Not glued to a preceding word character, dot or comma (so "1.2.3" and "a1,5" are left to later passes).
const START = String.raw`(?<![\p{L}\p{N}_.,])`;
const END = String.raw`(?![\p{L}\p{N}_]|[.,]\d)`;
const strip = (digits: string) => (digits.includes(',') ? digits.replace(/,/g, '') : digits);

const CURRENCY_RE = new RegExp(
  String.raw`${START}(-)?([$£€¥₹])\s?${NUM}(?:\s?(thousand|million|billion|trillion)\b)?${END}|` +
    String.raw`${START}(-)?${NUM}\s?([$£€¥₹])(?![\p{L}\p{N}])`,
  'gu',
);
const TIME_RE = /(?<![\p{L}\p{N}:.])([01]?\d|2[0-4]):([0-5]\d)(?![\p{L}\p{N}:]|[.,]\d)/gu;
// A time of day with its half of the day, the letters said: "3:30pm" -> "three thirty p m", "10 a.m." -> "ten a m".
const CLOCK_RE = /(?<![\p{L}\p{N}:.,])(1[0-2]|0?[1-9])(?::([0-5]\d))?\s?([AaPp])\.?[Mm](\.?)(?![\p{L}\p{N}])/gu;
// Telephone numbers, said digit by digit, group by group: "555-123-4567", "(555) 123-4567", "555.123.4567", and
// after a country code "+1 212 555 0100", "+44 20 7946 0958".
const PHONE_RE = new RegExp(
  String.raw`(?<![\p{L}\p{N}_.,+-])(?:(\+\d{1,3})[\s.-]?)?(?:\((\d{2,4})\)\s?|(\d{3})[-.])` +
    String.raw`(\d{3})[-.](\d{4})(?![\p{N}]|[.,-]\d)`,
  'gu',
);
const INTERNATIONAL_RE = /(?<![\p{L}\p{N}_])\+(\d{1,3})((?:[\s.-]\d{1,4}){2,5})(?![\p{N}]|[.,-]\d)/gu;
const ORDINAL_RE = new RegExp(String.raw`${START}(\d{1,3}(?:,\d{3})+|\d+)(st|nd|rd|th)(?![\p{L}\p{N}_])`, 'giu');
const DECADE_RE = /(?<![\p{L}\p{N}_.,])'?(\d{2}|\d{3}0)'?s(?![\p{L}\p{N}_])/gu;
const PERCENT_RE = new RegExp(String.raw`${START}([-+])?${NUM}\s?%`, 'gu');
// A period after a unit is the unit's own only when the sentence goes on ("6 ft. tall"); "3 kg." ends one.
const UNIT_RE = new RegExp(String.raw`${START}${NUM}\s?(${Object.keys(UNITS).join('|')})\b(?:\.(?=\s+\p{Ll}))?`, 'gu');
const DEGREE_RE = /\s?°(?:\s?([CF])(?!\p{L}))?/gu;
// Version numbers and addresses: "1.2.3" -> "one dot two dot three".
const DOTTED_RE = /(?<![\p{L}\p{N}_.])\d+(?:\.\d+){2,}(?![\p{N}]|\.\d)/gu;
const NUMBER_SIGN_RE = /#\s?(?=\d)/g;
const GLUED_RE = /(\p{L})(?=\d)|(\d)(?=\p{L})/gu;
const GLUED_HINT = /\p{L}\d|\d\p{L}/u;
const UNIT_HINT = new RegExp(String.raw`\d\s?(?:${Object.keys(UNITS).join('|')})\b`);
// Plain numbers: ASCII only and without lookbehind, so the engine can skip to the next digit; what
// precedes a match is checked in the callback instead.
const NUMBER_RE = /([-+]?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?!\d)|\.(\d+)(?!\d)/g;
const WORD_CHAR = /[\p{L}\p{N}_]/u;
const MAYBE_NUMBER = /[\d%#°]/;

/** A signed number: "-5" -> "minus five"; with `asYear`, four digits without separators read as a year. */
function number(sign: string | undefined, whole: string, fraction: string | undefined, asYear: boolean): string {
  // Callers pass a sign only when it stands before the number, not between ("1990-95", "3+4").
  const prefix = sign === '-' ? 'minus ' : sign === '+' ? 'plus ' : '';
  if (fraction !== undefined) return prefix + decimal(strip(whole), fraction);
  // Leading zeros mark a code, not a quantity or a year: "007" -> "zero zero seven", "0100" -> "zero one zero zero".
  if (whole.length > 1 && whole[0] === '0') return prefix + digitsAsWords(whole);
  if (asYear && !sign && /^\d{4}$/.test(whole)) return year(whole);
  return prefix + cardinal(strip(whole));
}

/** A phone number's groups, digit by digit with a pause between; a country code ("+44") is "plus four four". */
function phone(groups: readonly (string | undefined)[]): string {
  return groups
    .filter((g): g is string => g !== undefined && g !== '')
    .map((g) => (g[0] === '+' ? `plus ${digitsAsWords(g.slice(1))}` : digitsAsWords(g)))
    .join(', ');
}

/** CLOCK_RE's time: the hour, the minutes but for ":00", the letters; a final period kept where a sentence ends. */
function clock(_m: string, h: string, mm: string | undefined, half: string, dot: string, offset: number, all: string) {
  const minutes =
    mm === undefined || mm === '00' ? '' : ` ${mm[0] === '0' ? `oh ${ONES[Number(mm[1])]}` : cardinal(mm)}`;
  const rest = all.slice(offset + _m.length);
  const ends = dot !== '' && (/^["'”’)\]]*\s*$/.test(rest) || /^\s+\p{Lu}/u.test(rest));
  return `${cardinal(String(Number(h)))}${minutes} ${half.toLowerCase()} m${ends ? '.' : ''}`;
}

/**
 * Expand every number in English text. Order matters: currency, times, ordinals, decades,
 * percentages and units each claim their numbers before plain numbers are read.
 */
export function expandNumbers(text: string): string {
  if (!MAYBE_NUMBER.test(text)) return text;
  // Each pass runs only when its trigger is in the text: most rows have one plain number or none,
  // and a pass over a row costs about a microsecond whether it finds anything or not.
  let s = text;
  if (/[$£€¥₹]/.test(s)) {
    s = s.replace(
      CURRENCY_RE,
      (
        _m,
        neg1?: string,
        sym1?: string,
        w1?: string,
        f1?: string,
        scale?: string,
        neg2?: string,
        w2?: string,
        f2?: string,
        sym2?: string,
      ) => {
        const neg = (neg1 ?? neg2) ? 'minus ' : '';
        if (sym1 !== undefined)
          return (
            neg + (scale ? `${decimal(strip(w1!), f1)} ${scale} ${CURRENCIES[sym1][1]}` : money(sym1, strip(w1!), f1))
          );
        return neg + money(sym2!, strip(w2!), f2);
      },
    );
  }
  if (/\d{3}[-.]\d{4}/.test(s))
    s = s.replace(PHONE_RE, (_m, code?: string, area?: string, first?: string, mid?: string, last?: string) =>
      phone([code, area ?? first, mid, last]),
    );
  if (s.includes('+'))
    s = s.replace(INTERNATIONAL_RE, (_m, code: string, rest: string) =>
      phone([`+${code}`, ...rest.trim().split(/[\s.-]/)]),
    );
  if (/\d\s?[AaPp]\.?[Mm]/.test(s)) s = s.replace(CLOCK_RE, clock);
  if (s.includes(':'))
    s = s.replace(TIME_RE, (_m, h: string, mm: string) =>
      mm === '00'
        ? `${cardinal(h)} o'clock`
        : `${cardinal(h)} ${mm[0] === '0' ? `oh ${ONES[Number(mm[1])]}` : cardinal(mm)}`,
    );
  if (/\d(?:st|nd|rd|th)/i.test(s)) s = s.replace(ORDINAL_RE, (_m, d: string) => ordinal(strip(d)));
  if (/\d'?s/.test(s))
    s = s.replace(DECADE_RE, (_m, d: string) => pluralOfWords(d.length === 4 ? year(d) : cardinal(d)));
  if (s.includes('%'))
    s = s.replace(
      PERCENT_RE,
      (_m, sign: string | undefined, w: string, f: string | undefined) => `${number(sign, w, f, false)} percent`,
    );
  if (UNIT_HINT.test(s)) {
    s = s.replace(UNIT_RE, (_m, w: string, f: string | undefined, unit: string) => {
      const [one, many] = UNITS[unit];
      return `${decimal(strip(w), f)} ${w === '1' && f === undefined ? one : many}`;
    });
  }
  if (s.includes('°'))
    s = s.replace(
      DEGREE_RE,
      (_m, scale?: string) => ` degrees${scale === 'C' ? ' celsius' : scale === 'F' ? ' fahrenheit' : ''}`,
    );
  if (s.includes('#')) s = s.replace(NUMBER_SIGN_RE, 'number ');
  if (!/\d/.test(s)) return s;
  if (GLUED_HINT.test(s)) s = s.replace(GLUED_RE, '$1$2 ');
  if (/\d\.\d+\./.test(s))
    s = s.replace(DOTTED_RE, (m) =>
      m
        .split('.')
        .map((d) => cardinal(d))
        .join(' dot '),
    );
  s = s.replace(
    NUMBER_RE,
    (
      m,
      sign: string,
      w: string | undefined,
      f: string | undefined,
      leadingFraction: string | undefined,
      offset: number,
      all: string,
    ) => {
      const before = offset > 0 ? all[offset - 1] : ' ';
      // ".5" is a fraction only when the dot does not end a word or number ("a.5" is left to the last pass).
      if (leadingFraction !== undefined) return WORD_CHAR.test(before) ? m : `point ${digitsAsWords(leadingFraction)}`;
      // A sign right after a word or number is a hyphen or an operator: "1990-95", "3+4", "COVID-19".
      if (sign && WORD_CHAR.test(before)) return sign + number(undefined, w!, f, false);
      // Digits after a separator ("1,2345") are a group, not a year.
      return number(sign || undefined, w!, f, before !== '.' && before !== ',' && !WORD_CHAR.test(before));
    },
  );
  // Whatever digits the patterns above left (odd groupings such as "1,2345") are read one group at a time.
  return /\d/.test(s) ? s.replace(/\d+/g, (d) => cardinal(d)) : s;
}
