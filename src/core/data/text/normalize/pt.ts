// Portuguese: Brazilian spelling and short scale by default and for "pt-BR" ("dezesseis", "bilhão" =
// 10^9); "pt-PT" (and any other region) gets European spelling and the long scale ("dezasseis", "mil
// milhões", "bilião" = 10^12). "1999" -> "mil novecentos e noventa e nove" (years read as cardinals),
// "2 casas" -> "duas casas", "3º" -> "terceiro", "3ª" -> "terceira", "R$ 5,50" -> "cinco reais e
// cinquenta centavos", "14h30" -> "catorze e trinta", "3/10/2024" -> "três de outubro de dois mil e
// vinte e quatro". "e" joins the last group when it is below a hundred or a round hundred ("mil e
// quinhentos", "mil duzentos e trinta"). Simplifications: feminine forms ("uma", "duas", "duzentas")
// before words that look feminine (-a, -ção, -dade, -gem and a short list, with "dia", "mapa",
// "problema" ... excepted); day 1 of a date is "primeiro"; ordinals from a million up read as cardinals.
import {
  type Abbreviation,
  abbreviationExpander,
  type Gender,
  HOUR_H,
  type NumberLanguage,
  scanNumbers,
} from './common.js';

const ONES_BR = (
  'zero um dois três quatro cinco seis sete oito nove dez onze doze treze catorze quinze dezesseis dezessete ' +
  'dezoito dezenove'
).split(' ');
const ONES_PT = ONES_BR.map((w) => w.replace(/^dezes/, 'dezas').replace('dezenove', 'dezanove'));
const TENS = ['', '', 'vinte', 'trinta', 'quarenta', 'cinquenta', 'sessenta', 'setenta', 'oitenta', 'noventa'];
const HUNDREDS = ' cento duzentos trezentos quatrocentos quinhentos seiscentos setecentos oitocentos novecentos'.split(
  ' ',
);
// Short scale (Brazil) in groups of three digits; long scale (Portugal) in groups of six.
const SCALES_BR = 'milhão bilhão trilhão quatrilhão quintilhão sextilhão septilhão octilhão nonilhão decilhão'.split(
  ' ',
);
const SCALES_PT = ['milhão', 'bilião', 'trilião', 'quatrilião', 'quintilião'];
const MONTHS = 'janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro'.split(' ');

function unit(n: number, fem: boolean, ones: string[]): string {
  return fem && n === 1 ? 'uma' : fem && n === 2 ? 'duas' : ones[n];
}

/** "e" before the last part when it is below a hundred or has a single non-zero digit. */
function joinLast(head: string, rest: number, restWords: string): string {
  if (!head) return restWords;
  return `${head}${rest < 100 || String(rest).replace(/0/g, '').length === 1 ? ' e ' : ' '}${restWords}`;
}

function below1000(n: number, fem: boolean, ones: string[]): string {
  if (n === 100) return 'cem';
  const h = Math.floor(n / 100);
  const rest = n % 100;
  const head = fem && h > 1 ? HUNDREDS[h].replace(/os$/, 'as') : HUNDREDS[h];
  let tail = '';
  if (rest >= 20) tail = TENS[Math.floor(rest / 10)] + (rest % 10 ? ` e ${unit(rest % 10, fem, ones)}` : '');
  else if (rest > 0) tail = unit(rest, fem, ones);
  if (!tail) return head || ones[0];
  return head ? `${head} e ${tail}` : tail;
}

function belowMillion(n: number, fem: boolean, ones: string[]): string {
  const th = Math.floor(n / 1000);
  const rest = n % 1000;
  const head = th === 0 ? '' : th === 1 ? 'mil' : `${below1000(th, fem, ones)} mil`;
  if (rest === 0) return head || ones[0];
  return joinLast(head, rest, below1000(rest, fem, ones));
}

function plural(scale: string): string {
  return scale.replace(/ão$/, 'ões');
}

function makeCardinal(european: boolean) {
  const ones = european ? ONES_PT : ONES_BR;
  return function cardinal(digits: string, gender: Gender = 'm'): string {
    const fem = gender === 'f';
    if (digits.length <= 6) return belowMillion(Number(digits), fem, ones);
    const size = european ? 6 : 3;
    const scales = european ? SCALES_PT : SCALES_BR;
    const groups: number[] = [];
    for (let end = digits.length; end > 0; end -= size) groups.push(Number(digits.slice(Math.max(0, end - size), end)));
    // Below the first scale: six digits in both systems (for the short scale, two groups of three).
    const low = european ? groups[0] : groups[0] + (groups[1] ?? 0) * 1000;
    const parts: string[] = [];
    for (let k = groups.length - 1; k >= (european ? 1 : 2); k--) {
      const g = groups[k];
      if (g === 0) continue;
      const scale = scales[k - (european ? 1 : 2)];
      parts.push(g === 1 ? `um ${scale}` : `${belowMillion(g, false, ones)} ${plural(scale)}`);
    }
    const head = parts.join(' ');
    return low ? joinLast(head, low, belowMillion(low, fem, ones)) : head;
  };
}

const ORD_UNITS = ' primeiro segundo terceiro quarto quinto sexto sétimo oitavo nono'.split(' ');
const ORD_TENS =
  ' décimo vigésimo trigésimo quadragésimo quinquagésimo sexagésimo septuagésimo octogésimo nonagésimo'.split(' ');
const ORD_HUNDREDS = (
  ' centésimo ducentésimo trecentésimo quadringentésimo quingentésimo sexcentésimo septingentésimo ' +
  'octingentésimo nongentésimo'
).split(' ');

function makeOrdinal(cardinal: (digits: string) => string) {
  return (digits: string, suffix: string): string => {
    const n = Number(digits);
    let words: string[];
    if (digits.length > 6 || n === 0) words = [cardinal(digits)];
    else {
      const th = Math.floor(n / 1000);
      words = th === 0 ? [] : [th === 1 ? 'milésimo' : `${cardinal(String(th))} milésimo`];
      const h = Math.floor((n % 1000) / 100);
      const rest = n % 100;
      if (h) words.push(ORD_HUNDREDS[h]);
      if (rest >= 10) words.push(ORD_TENS[Math.floor(rest / 10)]);
      if (rest % 10) words.push(ORD_UNITS[rest % 10]);
    }
    const text = words.join(' ');
    return suffix.includes('ª') ? text.replace(/o\b/g, 'a') : text;
  };
}

const NOT_NOUNS = new Set(
  'e ou a o as os de do da dos das em no na nos nas para por com sem que é são era foi mais menos entre até'.split(' '),
);
const FEMININE_WORDS = new Set(
  (
    'vez vezes mulher mulheres noite noites mãe mães parte partes tarde tardes flor flores cor cores lei leis ' +
    'rede redes morte sorte ponte pontes mão mãos pele'
  ).split(' '),
);
const MASCULINE_A = new Set(
  'dia dias mapa mapas problema problemas sistema sistemas programa programas tema temas'.split(' '),
);
const LARGE = /(?:lhão|lhões|lião|liões)$/;

export function genderOfPortuguese(word: string): Gender {
  const w = word.toLowerCase();
  if (MASCULINE_A.has(w)) return 'm';
  return FEMININE_WORDS.has(w) || /(?:as?|ção|ções|dade|dades|gem|gens)$/.test(w) ? 'f' : 'm';
}

function makeLanguage(european: boolean): NumberLanguage {
  const cardinal = makeCardinal(european);
  const cent = european ? ['cêntimo', 'cêntimos'] : ['centavo', 'centavos'];
  return {
    cardinal,
    genderOf: genderOfPortuguese,
    isNoun: (word) => !NOT_NOUNS.has(word.toLowerCase()),
    minus: 'menos',
    plus: 'mais',
    point: 'vírgula',
    fractionAsNumber: true,
    percent: 'por cento',
    currencies: {
      '€': { one: 'euro', many: 'euros', gender: 'm', subOne: cent[0], subMany: cent[1], subGender: 'm' },
      $: { one: 'dólar', many: 'dólares', gender: 'm', subOne: cent[0], subMany: cent[1], subGender: 'm' },
      '£': { one: 'libra', many: 'libras', gender: 'f', subOne: 'pêni', subMany: 'pence', subGender: 'm' },
      R$: { one: 'real', many: 'reais', gender: 'm', subOne: 'centavo', subMany: 'centavos', subGender: 'm' },
    },
    moneyAnd: 'e',
    amountOf: (amount, unit) => `${amount} ${LARGE.test(amount) ? 'de ' : ''}${unit}`,
    time: (h, m) =>
      m
        ? `${cardinal(String(h), 'f')} e ${cardinal(String(m))}`
        : `${cardinal(String(h), 'f')} hora${h === 1 ? '' : 's'}`,
    date: (d, m, y) =>
      `${d === 1 ? 'primeiro' : cardinal(String(d))} de ${MONTHS[m - 1]}${y ? ` de ${cardinal(y)}` : ''}`,
    localDate: /(\d{1,2})\/(\d{1,2})\/(\d{4})(?!\d)/y,
    times: [HOUR_H],
    ordinalSuffix: /(\.?[ºª])(?![\p{L}\p{N}])/uy,
    ordinal: makeOrdinal((d) => cardinal(d)),
  };
}

export const PORTUGUESE_BR = makeLanguage(false);
export const PORTUGUESE_PT = makeLanguage(true);

const ABBREVIATIONS: Abbreviation[] = [
  ['Sr.', 'senhor'],
  ['Sra.', 'senhora'],
  ['Srta.', 'senhorita'],
  ['Dr.', 'doutor'],
  ['Dra.', 'doutora'],
  ['Prof.', 'professor'],
  ['Profa.', 'professora'],
  ['etc.', 'et cetera', 'end'],
  ['n.º', 'número'],
  ['nº', 'número'],
  ['núm.', 'número'],
  ['pág.', 'página'],
  ['Av.', 'avenida'],
  ['p.ex.', 'por exemplo'],
  ['aprox.', 'aproximadamente'],
  ['tel.', 'telefone'],
  ['a.C.', 'antes de Cristo'],
  ['d.C.', 'depois de Cristo'],
  ['V.Exa.', 'Vossa Excelência'],
];
const expandAbbreviations = abbreviationExpander(ABBREVIATIONS);

/** `region` is the language tag's region subtag, lower-cased ("br", "pt"); Brazil is the default. */
export function normalizePortuguese(text: string, region = ''): string {
  const L = region === '' || region === 'br' ? PORTUGUESE_BR : PORTUGUESE_PT;
  return scanNumbers(expandAbbreviations(text), L);
}
