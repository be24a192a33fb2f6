// Italian: "1999" -> "millenovecentonovantanove" (years read as cardinals, one word below a million),
// "21000" -> "ventunmila", "23" -> "ventitré", "3º" -> "terzo", "3ª" -> "terza", "21º" -> "ventunesimo",
// "3/10/2024" -> "tre ottobre duemilaventiquattro", "5,50 €" -> "cinque euro e cinquanta centesimi",
// "1.000.000 €" -> "un milione di euro". Simplifications: "1" before a noun is "un", "uno" (before s +
// consonant, z, gn, ps, x, y) or "una" (nouns in -a, -ione, -tà, -trice), without the elided "un'";
// "ventuno" keeps its full form before nouns; "°" is not read as an ordinal indicator (it is also the
// degree sign); times read "quattordici e trenta" without the article.
import { type Abbreviation, abbreviationExpander, type Gender, type NumberLanguage, scanNumbers } from './common.js';

const ONES = (
  'zero uno due tre quattro cinque sei sette otto nove dieci undici dodici tredici quattordici quindici sedici ' +
  'diciassette diciotto diciannove'
).split(' ');
const TENS = ['', '', 'venti', 'trenta', 'quaranta', 'cinquanta', 'sessanta', 'settanta', 'ottanta', 'novanta'];
const SCALES =
  'milione miliardo bilione biliardo trilione triliardo quadrilione quadriliardo quintilione quintiliardo'.split(' ');
const MONTHS = 'gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre'.split(
  ' ',
);

function below100(n: number): string {
  if (n < 20) return ONES[n];
  const unit = n % 10;
  const tens = TENS[Math.floor(n / 10)];
  if (unit === 0) return tens;
  // "ventuno", "ventotto": the tens lose their vowel before a vowel; a final "tre" is stressed: "ventitré".
  if (unit === 1 || unit === 8) return tens.slice(0, -1) + ONES[unit];
  return tens + (unit === 3 ? 'tré' : ONES[unit]);
}

function below1000(n: number): string {
  const h = Math.floor(n / 100);
  const rest = n % 100;
  const head = h === 0 ? '' : h === 1 ? 'cento' : `${ONES[h]}cento`;
  if (rest === 0) return head || ONES[0];
  // "centotto", "centottanta".
  if (head && (rest === 8 || Math.floor(rest / 10) === 8)) return head.slice(0, -1) + below100(rest);
  return head + below100(rest);
}

/** A multiplier before "mila" or a scale word: "ventun", "ventitre" (the accent is only word-final). */
function multiplier(n: number): string {
  return below1000(n).replace(/uno$/, 'un').replace(/tré$/, 'tre');
}

function belowMillion(n: number): string {
  const th = Math.floor(n / 1000);
  const rest = n % 1000;
  const head = th === 0 ? '' : th === 1 ? 'mille' : `${multiplier(th)}mila`;
  if (rest === 0) return head || ONES[0];
  return head + below1000(rest).replace(/^tré$/, 'tre');
}

function cardinal(digits: string, gender: Gender = 'm', beforeNoun = false, next = ''): string {
  if (digits === '1' && beforeNoun)
    return gender === 'f' ? 'una' : /^(?:s[^aeiou]|z|gn|ps|x|y)/i.test(next) ? 'uno' : 'un';
  if (digits.length <= 6) return belowMillion(Number(digits)).replace(/^tré$/, 'tre');
  const parts: string[] = [];
  const groups: number[] = [];
  for (let end = digits.length; end > 0; end -= 3) groups.push(Number(digits.slice(Math.max(0, end - 3), end)));
  for (let k = groups.length - 1; k >= 2; k--) {
    const g = groups[k];
    if (g === 0) continue;
    const scale = SCALES[k - 2];
    parts.push(g === 1 ? `un ${scale}` : `${multiplier(g)} ${scale.slice(0, -1)}i`);
  }
  const rest = groups[1] * 1000 + groups[0];
  if (rest) parts.push(belowMillion(rest));
  return parts.join(' ');
}

const ORD_SMALL = ' primo secondo terzo quarto quinto sesto settimo ottavo nono decimo'.split(' ');

function ordinal(digits: string, suffix: string): string {
  const n = Number(digits);
  let words: string;
  if (n >= 1 && n <= 10) words = ORD_SMALL[n];
  else {
    const c = cardinal(digits);
    if (/tré$/.test(c)) words = `${c.slice(0, -1)}eesimo`;
    else if (/sei$/.test(c)) words = `${c}esimo`;
    else if (/mila$/.test(c)) words = `${c.slice(0, -4)}millesimo`;
    else words = `${c.slice(0, -1)}esimo`;
  }
  return suffix.includes('ª') ? words.replace(/o$/, 'a') : words;
}

const NOT_NOUNS = new Set(
  'e o a ad di da in con su per tra fra che è il lo la i gli le un una al del nel sul come ma non più'.split(' '),
);
const MASCULINE_A = new Set('problema sistema programma tema clima cinema pianeta poeta papa'.split(' '));
const LARGE = /(?:ilion[ei]|iliard[oi])$/;

export const ITALIAN: NumberLanguage = {
  cardinal,
  isNoun: (word) => !NOT_NOUNS.has(word.toLowerCase()),
  genderOf: (word) => {
    const w = word.toLowerCase();
    return !MASCULINE_A.has(w) && /(?:a|ione|tà|trice)$/.test(w) ? 'f' : 'm';
  },
  minus: 'meno',
  plus: 'più',
  point: 'virgola',
  fractionAsNumber: true,
  percent: 'per cento',
  currencies: {
    '€': { one: 'euro', many: 'euro', gender: 'm', subOne: 'centesimo', subMany: 'centesimi', subGender: 'm' },
    $: { one: 'dollaro', many: 'dollari', gender: 'm', subOne: 'centesimo', subMany: 'centesimi', subGender: 'm' },
    '£': { one: 'sterlina', many: 'sterline', gender: 'f', subOne: 'penny', subMany: 'pence', subGender: 'm' },
  },
  moneyAnd: 'e',
  amountOf: (amount, unit) => `${amount} ${LARGE.test(amount) ? 'di ' : ''}${unit}`,
  time: (h, m) => `${h === 1 ? 'una' : cardinal(String(h))}${m ? ` e ${cardinal(String(m))}` : ''}`,
  date: (d, m, y) => `${d === 1 ? 'primo' : cardinal(String(d))} ${MONTHS[m - 1]}${y ? ` ${cardinal(y)}` : ''}`,
  localDate: /(\d{1,2})\/(\d{1,2})\/(\d{4})(?!\d)/y,
  ordinalSuffix: /(\.?[ºª])(?![\p{L}\p{N}])/uy,
  ordinal,
};

const ABBREVIATIONS: Abbreviation[] = [
  ['Sig.', 'signor'],
  ['Sig.ra', 'signora'],
  ['Sigg.', 'signori'],
  ['Dott.', 'dottor'],
  ['Dott.ssa', 'dottoressa'],
  ['Prof.', 'professor'],
  ['Prof.ssa', 'professoressa'],
  ['Avv.', 'avvocato'],
  ['Ing.', 'ingegner'],
  ['ecc.', 'eccetera', 'end'],
  ['etc.', 'eccetera', 'end'],
  ['ad es.', 'ad esempio'],
  ['p.es.', 'per esempio'],
  ['pag.', 'pagina'],
  ['n.', 'numero', 'digit'],
  ['nº', 'numero'],
  ['ca.', 'circa'],
  ['a.C.', 'avanti Cristo'],
  ['d.C.', 'dopo Cristo'],
  ['tel.', 'telefono'],
];
const expandAbbreviations = abbreviationExpander(ABBREVIATIONS);

export function normalizeItalian(text: string): string {
  return scanNumbers(expandAbbreviations(text), ITALIAN);
}
