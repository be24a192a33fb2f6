// Dutch: "21" -> "eenentwintig", "22" -> "tweeëntwintig", "1" -> "één" (the numeral, not the article
// "een"), "1999" -> "negentienhonderdnegenennegentig" (years from 1100 to 1999 in hundreds), "2024" ->
// "tweeduizend vierentwintig" (one word up to "duizend", then a space, as the Taalunie writes it),
// "3e"/"3de" -> "derde", "8ste" -> "achtste", "3-10-2024" -> "drie oktober tweeduizend vierentwintig",
// "5,50 €" -> "vijf euro en vijftig cent", "14:30" -> "veertien uur dertig". Simplifications: decimals
// are read digit by digit after "komma"; ordinals of a thousand and more keep the space ("duizend
// eerste"); Belgian "14u30" is not read as a time.
import { type Abbreviation, abbreviationExpander, type NumberLanguage, scanNumbers } from './common.js';

const ONES = (
  'nul één twee drie vier vijf zes zeven acht negen tien elf twaalf dertien veertien vijftien zestien zeventien ' +
  'achttien negentien'
).split(' ');
const TENS = ['', '', 'twintig', 'dertig', 'veertig', 'vijftig', 'zestig', 'zeventig', 'tachtig', 'negentig'];
const SCALES =
  'miljoen miljard biljoen biljard triljoen triljard quadriljoen quadriljard quintiljoen quintiljard'.split(' ');
const MONTHS = 'januari februari maart april mei juni juli augustus september oktober november december'.split(' ');

/** `compound`: inside a longer word, where "één" is written "een" ("eenentwintig", "honderdeen"). */
function below100(n: number, compound: boolean): string {
  if (n < 20) return n === 1 && compound ? 'een' : ONES[n];
  const unit = n % 10;
  const tens = TENS[Math.floor(n / 10)];
  if (!unit) return tens;
  const u = unit === 1 ? 'een' : ONES[unit];
  // A diaeresis keeps "twee" and "drie" apart from "en": "tweeëntwintig".
  return `${u}${u.endsWith('e') ? 'ën' : 'en'}${tens}`;
}

function below1000(n: number, compound: boolean): string {
  const h = Math.floor(n / 100);
  const rest = n % 100;
  const head = h === 0 ? '' : h === 1 ? 'honderd' : `${ONES[h]}honderd`;
  if (!rest) return head || ONES[0];
  return head + below100(rest, compound || head !== '');
}

function belowMillion(n: number): string {
  const th = Math.floor(n / 1000);
  const rest = n % 1000;
  const head = th === 0 ? '' : th === 1 ? 'duizend' : `${below1000(th, true)}duizend`;
  if (!rest) return head || ONES[0];
  return head ? `${head} ${below1000(rest, true)}` : below1000(rest, false);
}

function cardinal(digits: string): string {
  if (digits.length <= 6) return belowMillion(Number(digits));
  const groups: number[] = [];
  for (let end = digits.length; end > 0; end -= 3) groups.push(Number(digits.slice(Math.max(0, end - 3), end)));
  const parts: string[] = [];
  for (let k = groups.length - 1; k >= 2; k--) {
    if (groups[k]) parts.push(`${below1000(groups[k], false)} ${SCALES[k - 2]}`);
  }
  const rest = groups[1] * 1000 + groups[0];
  if (rest) parts.push(belowMillion(rest));
  return parts.join(' ');
}

function year(digits: string): string {
  const n = Number(digits);
  if (n < 1100 || n >= 2000) return cardinal(digits);
  return `${below100(Math.floor(n / 100), false)}honderd${n % 100 ? below100(n % 100, true) : ''}`;
}

const ORD_SMALL: Record<number, string> = { 1: 'eerste', 3: 'derde', 8: 'achtste' };

function ordinal(digits: string): string {
  const n = Number(digits);
  const small = n % 100;
  if (digits.length > 6 || small === 0 || small >= 20) return `${cardinal(digits)}ste`;
  const head = n - small ? cardinal(String(n - small)) : '';
  const tail = ORD_SMALL[small] ?? `${ONES[small]}de`;
  return head + (head.endsWith('duizend') ? ' ' : '') + tail;
}

export const DUTCH: NumberLanguage = {
  cardinal,
  year,
  minus: 'min',
  plus: 'plus',
  point: 'komma',
  fractionAsNumber: false,
  percent: 'procent',
  currencies: {
    '€': { one: 'euro', many: 'euro', gender: 'm', subOne: 'cent', subMany: 'cent', subGender: 'm' },
    $: { one: 'dollar', many: 'dollar', gender: 'm', subOne: 'cent', subMany: 'cent', subGender: 'm' },
    '£': { one: 'pond', many: 'pond', gender: 'm', subOne: 'penny', subMany: 'pence', subGender: 'm' },
  },
  moneyAnd: 'en',
  time: (h, m) => `${cardinal(String(h))} uur${m ? ` ${cardinal(String(m))}` : ''}`,
  date: (d, m, y) => `${cardinal(String(d))} ${MONTHS[m - 1]}${y ? ` ${year(y)}` : ''}`,
  localDate: /(\d{1,2})[-/](\d{1,2})[-/](\d{4})(?!\d)/y,
  ordinalSuffix: /(ste|de|e)(?![\p{L}\p{N}])/uy,
  ordinal,
};

const ABBREVIATIONS: Abbreviation[] = [
  ['bijv.', 'bijvoorbeeld'],
  ['bv.', 'bijvoorbeeld'],
  ['d.w.z.', 'dat wil zeggen'],
  ['enz.', 'enzovoort', 'end'],
  ['etc.', 'et cetera', 'end'],
  ['dhr.', 'de heer'],
  ['mevr.', 'mevrouw'],
  ['dr.', 'doctor'],
  ['prof.', 'professor'],
  ['ir.', 'ingenieur', 'capital'],
  ['mr.', 'meester', 'capital'],
  ['nr.', 'nummer'],
  ['ca.', 'circa'],
  ['o.a.', 'onder andere'],
  ['m.b.t.', 'met betrekking tot'],
  ['i.p.v.', 'in plaats van'],
  ['t.o.v.', 'ten opzichte van'],
  ['blz.', 'bladzijde'],
  ['a.u.b.', 'alstublieft'],
  ['ong.', 'ongeveer'],
];
const expandAbbreviations = abbreviationExpander(ABBREVIATIONS);

export function normalizeDutch(text: string): string {
  return scanNumbers(expandAbbreviations(text), DUTCH);
}
