// Spanish: "21" -> "veintiuno", "21 años" -> "veintiún años", "1.000,5" -> "mil coma cinco",
// "3.º" -> "tercero", "1.er" -> "primer", "3/10/2024" -> "tres de octubre de dos mil veinticuatro",
// "5,50 €" -> "cinco euros con cincuenta céntimos", "1.000.000 €" -> "un millón de euros".
// Simplifications: a number before a word reads "un"/"veintiún" (or "una", "doscientas" where the
// word looks feminine: -a, -as, -ción, -dad, -tud and a short list such as "vez", with "día",
// "mapa", "problema" ... excepted); decimals after the comma read as a number ("coma catorce");
// times read "las catorce y treinta" without the article ("catorce y treinta"); day 1 of a date is
// "uno" as in Spain (Latin America says "primero"); "1,000.50" with both separators reads in the
// American way, but a lone comma is always the decimal comma; ordinals from a million up read as cardinals.
import { type Abbreviation, abbreviationExpander, type Gender, type NumberLanguage, scanNumbers } from './common.js';

const ONES = (
  'cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince dieciséis diecisiete ' +
  'dieciocho diecinueve veinte veintiuno veintidós veintitrés veinticuatro veinticinco veintiséis veintisiete ' +
  'veintiocho veintinueve'
).split(' ');
const TENS = ['', '', '', 'treinta', 'cuarenta', 'cincuenta', 'sesenta', 'setenta', 'ochenta', 'noventa'];
const HUNDREDS =
  ' ciento doscientos trescientos cuatrocientos quinientos seiscientos setecientos ochocientos novecientos'.split(' ');
const SCALES = ['', 'millón', 'billón', 'trillón', 'cuatrillón', 'quintillón'];
const MONTHS = 'enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre'.split(' ');

/** The form of "one" at the end of a number: standalone, before a noun or "mil", or feminine. */
type One = 'uno' | 'un' | 'una';

function below100(n: number, one: One): string {
  if (n === 1) return one;
  if (n === 21) return `veinti${one === 'uno' ? 'uno' : one === 'un' ? 'ún' : 'una'}`;
  if (n < 30) return ONES[n];
  const unit = n % 10;
  return TENS[Math.floor(n / 10)] + (unit ? ` y ${unit === 1 ? one : ONES[unit]}` : '');
}

function below1000(n: number, one: One, fem: boolean): string {
  if (n === 100) return 'cien';
  const h = Math.floor(n / 100);
  const rest = n % 100;
  let head = HUNDREDS[h];
  if (fem && h > 1) head = head.replace(/os$/, 'as');
  if (!rest) return head || 'cero';
  return head ? `${head} ${below100(rest, one)}` : below100(rest, one);
}

function belowMillion(n: number, one: One, fem: boolean): string {
  const th = Math.floor(n / 1000);
  const rest = n % 1000;
  const head = th === 0 ? '' : th === 1 ? 'mil' : `${below1000(th, one === 'uno' ? 'un' : one, fem)} mil`;
  if (!rest) return head || 'cero';
  return head ? `${head} ${below1000(rest, one, fem)}` : below1000(rest, one, fem);
}

function cardinal(digits: string, gender: Gender = 'm', beforeNoun = false): string {
  const one: One = gender === 'f' ? 'una' : beforeNoun ? 'un' : 'uno';
  if (digits.length <= 6) return belowMillion(Number(digits), one, gender === 'f');
  let n = BigInt(digits);
  const parts: string[] = [];
  for (let k = SCALES.length - 1; k >= 1; k--) {
    const value = 10n ** BigInt(6 * k);
    if (n < value) continue;
    const count = Number(n / value);
    n %= value;
    parts.push(
      count === 1 ? `un ${SCALES[k]}` : `${belowMillion(count, 'un', false)} ${SCALES[k].replace(/ón$/, 'ones')}`,
    );
  }
  if (n > 0n) parts.push(belowMillion(Number(n), one, gender === 'f'));
  return parts.join(' ');
}

const ORD_UNITS = ' primero segundo tercero cuarto quinto sexto séptimo octavo noveno'.split(' ');
const ORD_TEENS: Record<number, string> = { 11: 'undécimo', 12: 'duodécimo' };
const ORD_TENS =
  ' décimo vigésimo trigésimo cuadragésimo quincuagésimo sexagésimo septuagésimo octogésimo nonagésimo'.split(' ');
const ORD_HUNDREDS = (
  ' centésimo ducentésimo tricentésimo cuadringentésimo quingentésimo sexcentésimo septingentésimo ' +
  'octingentésimo noningentésimo'
).split(' ');

function ordinalBelow1000(n: number): string[] {
  const words: string[] = [];
  if (n >= 100) words.push(ORD_HUNDREDS[Math.floor(n / 100)]);
  const rest = n % 100;
  if (rest > 10 && rest < 20) words.push(ORD_TEENS[rest] ?? `decimo${ORD_UNITS[rest - 10].replace('octavo', 'ctavo')}`);
  else {
    if (rest >= 10) words.push(ORD_TENS[Math.floor(rest / 10)]);
    if (rest % 10) words.push(ORD_UNITS[rest % 10]);
  }
  return words;
}

/** Masculine words; the caller makes them feminine or shortens "primero"/"tercero" before a noun. */
function ordinalWords(digits: string): string[] {
  const n = Number(digits);
  if (digits.length > 6 || n === 0) return [cardinal(digits)];
  const th = Math.floor(n / 1000);
  const words =
    th === 0 ? [] : [th === 1 ? 'milésimo' : `${cardinal(String(th), 'm', true).replace(/ /g, '')}milésimo`];
  return words.concat(ordinalBelow1000(n % 1000));
}

const NOT_NOUNS = new Set(
  (
    'y o u e ni de del a al en con por para que es son era fue más menos entre hasta desde sobre sin los las ' +
    'el la lo le se no si como pero muy ya'
  ).split(' '),
);
const FEMININE_WORDS = new Set(
  'vez veces mano manos noche noches mujer mujeres calle calles gente parte partes clase clases madre leche'.split(' '),
);
const MASCULINE_A = new Set(
  'día días mapa mapas problema problemas sistema sistemas programa programas tema temas'.split(' '),
);

export function genderOfSpanish(word: string): Gender {
  const w = word.toLowerCase();
  if (MASCULINE_A.has(w)) return 'm';
  return FEMININE_WORDS.has(w) || /(?:as?|ción|ciones|dad|dades|tud|tudes)$/.test(w) ? 'f' : 'm';
}

function ordinal(digits: string, suffix: string, _prev: string, next: string): string {
  const words = ordinalWords(digits);
  const last = words.length - 1;
  if (suffix.includes('ª')) return words.map((w) => w.replace(/o$/, 'a')).join(' ');
  if (suffix.includes('er') || (next && !NOT_NOUNS.has(next.toLowerCase())))
    words[last] = words[last].replace(/^(primer|tercer)o$/, '$1');
  return words.join(' ');
}

const LARGE = /(?:llón|llones)$/;

export const SPANISH: NumberLanguage = {
  cardinal,
  genderOf: genderOfSpanish,
  isNoun: (word) => !NOT_NOUNS.has(word.toLowerCase()),
  minus: 'menos',
  plus: 'más',
  point: 'coma',
  fractionAsNumber: true,
  percent: 'por ciento',
  currencies: {
    '€': { one: 'euro', many: 'euros', gender: 'm', subOne: 'céntimo', subMany: 'céntimos', subGender: 'm' },
    $: { one: 'dólar', many: 'dólares', gender: 'm', subOne: 'centavo', subMany: 'centavos', subGender: 'm' },
    '£': { one: 'libra', many: 'libras', gender: 'f', subOne: 'penique', subMany: 'peniques', subGender: 'm' },
  },
  moneyAnd: 'con',
  amountOf: (amount, unit) => `${amount} ${LARGE.test(amount) ? 'de ' : ''}${unit}`,
  time: (h, m) => `${cardinal(String(h), 'f')} ${m ? `y ${cardinal(String(m))}` : 'en punto'}`,
  date: (d, m, y) => `${cardinal(String(d))} de ${MONTHS[m - 1]}${y ? ` de ${cardinal(y)}` : ''}`,
  localDate: /(\d{1,2})\/(\d{1,2})\/(\d{4})(?!\d)/y,
  ordinalSuffix: /(\.?[ºª]|\.?er)(?![\p{L}\p{N}])/uy,
  ordinal,
};

const ABBREVIATIONS: Abbreviation[] = [
  ['Sr.', 'señor'],
  ['Sra.', 'señora'],
  ['Srta.', 'señorita'],
  ['Dr.', 'doctor'],
  ['Dra.', 'doctora'],
  ['Prof.', 'profesor'],
  ['Ud.', 'usted'],
  ['Uds.', 'ustedes'],
  ['Vd.', 'usted'],
  ['etc.', 'etcétera', 'end'],
  ['núm.', 'número'],
  ['n.º', 'número'],
  ['nº', 'número'],
  ['p.ej.', 'por ejemplo'],
  ['aprox.', 'aproximadamente'],
  ['pág.', 'página'],
  ['Avda.', 'avenida'],
  ['EE.UU.', 'Estados Unidos'],
  ['a.C.', 'antes de Cristo'],
  ['d.C.', 'después de Cristo'],
  ['tel.', 'teléfono'],
];
const expandAbbreviations = abbreviationExpander(ABBREVIATIONS);

export function normalizeSpanish(text: string): string {
  return scanNumbers(expandAbbreviations(text), SPANISH);
}
