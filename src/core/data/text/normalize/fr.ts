// French: "1999" -> "mille neuf cent quatre-vingt-dix-neuf" (years read as cardinals), "1er" ->
// "premier", "1re" -> "première", "3e" -> "troisième", "10 000" -> "dix mille", "14h30" -> "quatorze
// heures trente", "3/10/2024" -> "trois octobre deux mille vingt-quatre", "1 000 000 €" -> "un million
// d'euros". Spelling is the traditional one (hyphens below a hundred only: "vingt et un", "deux cent
// trois"), with "quatre-vingts" and "deux cents" plural where they end the number but not before
// "mille". A plain space groups thousands only before exactly three digits ("10 000"), so a list
// written "17 100" reads as one number. Simplifications: "un" becomes "une" only before a short list
// of feminine nouns ("fois", "heure", "personne", ...) and in hours; Belgian and Swiss "septante",
// "nonante" are not used.
import {
  type Abbreviation,
  abbreviationExpander,
  type Gender,
  HOUR_H,
  type NumberLanguage,
  scanNumbers,
} from './common.js';

const ONES = (
  'zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize dix-sept ' +
  'dix-huit dix-neuf'
).split(' ');
const TENS = ['', '', 'vingt', 'trente', 'quarante', 'cinquante', 'soixante'];
const SCALES =
  'mille million milliard billion billiard trillion trilliard quadrillion quadrilliard quintillion quintilliard'.split(
    ' ',
  );
const MONTHS = 'janvier février mars avril mai juin juillet août septembre octobre novembre décembre'.split(' ');

function below100(n: number, final: boolean): string {
  if (n < 20) return ONES[n];
  if (n < 70) {
    const unit = n % 10;
    const tens = TENS[Math.floor(n / 10)];
    return unit === 0 ? tens : unit === 1 ? `${tens} et un` : `${tens}-${ONES[unit]}`;
  }
  if (n < 80) return n === 71 ? 'soixante et onze' : `soixante-${ONES[n - 60]}`;
  return n === 80 ? (final ? 'quatre-vingts' : 'quatre-vingt') : `quatre-vingt-${ONES[n - 80]}`;
}

/** `final`: nothing but a noun follows ("deux cents", "quatre-vingts"); before "mille" they lose the "s". */
function below1000(n: number, final: boolean): string {
  const h = Math.floor(n / 100);
  const rest = n % 100;
  if (h === 0) return below100(rest, final);
  const head = h === 1 ? 'cent' : `${ONES[h]} cent${rest === 0 && final ? 's' : ''}`;
  return rest ? `${head} ${below100(rest, final)}` : head;
}

function cardinal(digits: string, gender: Gender = 'm'): string {
  let words: string;
  if (digits === '0') words = ONES[0];
  else {
    const parts: string[] = [];
    const groups: number[] = [];
    for (let end = digits.length; end > 0; end -= 3) groups.push(Number(digits.slice(Math.max(0, end - 3), end)));
    for (let k = groups.length - 1; k >= 0; k--) {
      const g = groups[k];
      if (g === 0) continue;
      if (k === 0) parts.push(below1000(g, true));
      else if (k === 1) parts.push(g === 1 ? 'mille' : `${below1000(g, false)} mille`);
      else parts.push(`${g === 1 ? 'un' : below1000(g, true)} ${SCALES[k - 1]}${g > 1 ? 's' : ''}`);
    }
    words = parts.join(' ');
  }
  return gender === 'f' ? words.replace(/(^|[ -])un$/, '$1une') : words;
}

/** "trois" -> "troisième", "vingt et un" -> "vingt et unième", "quatre-vingts" -> "quatre-vingtième". */
function ordinal(digits: string, suffix: string): string {
  const fem = /^(?:re|ère|res|ères|nde|de)$/.test(suffix);
  const plural = suffix.endsWith('s') ? 's' : '';
  if (digits === '1') return (fem ? 'première' : 'premier') + plural;
  if (digits === '2' && /^n?de?$/.test(suffix)) return (fem ? 'seconde' : 'second') + plural;
  const words = cardinal(digits.replace(/^0+(?=\d)/, ''));
  const m = /([a-zéè]+)$/.exec(words)!;
  let last = /(?:vingts|cents|illions|illiards)$/.test(m[1]) ? m[1].slice(0, -1) : m[1];
  if (last === 'cinq') last = 'cinqu';
  else if (last === 'neuf') last = 'neuv';
  else if (last.endsWith('e')) last = last.slice(0, -1);
  return `${words.slice(0, m.index)}${last}ième${plural}`;
}

const FEMININE = new Set(
  (
    'fois heure heures minute minutes seconde secondes semaine semaines année années journée journées nuit nuits ' +
    'personne personnes femme femmes fille filles chose choses page pages maison maisons voiture voitures ville ' +
    'villes place places partie parties tonne tonnes étoile étoiles'
  ).split(' '),
);
const LARGE = /(?:illions?|illiards?)$/;

export const FRENCH: NumberLanguage = {
  cardinal,
  genderOf: (word) => (FEMININE.has(word.toLowerCase()) ? 'f' : 'm'),
  minus: 'moins',
  plus: 'plus',
  point: 'virgule',
  fractionAsNumber: true,
  percent: 'pour cent',
  currencies: {
    '€': { one: 'euro', many: 'euros', gender: 'm', subOne: 'centime', subMany: 'centimes', subGender: 'm' },
    $: { one: 'dollar', many: 'dollars', gender: 'm', subOne: 'cent', subMany: 'cents', subGender: 'm' },
    '£': { one: 'livre', many: 'livres', gender: 'f', subOne: 'penny', subMany: 'pence', subGender: 'm' },
  },
  moneyAnd: 'et',
  amountOf: (amount, unit) =>
    LARGE.test(amount) ? `${amount} ${/^[aeiouéè]/.test(unit) ? `d'${unit}` : `de ${unit}`}` : `${amount} ${unit}`,
  time: (h, m) => `${cardinal(String(h), 'f')} heure${h > 1 ? 's' : ''}${m ? ` ${cardinal(String(m), 'f')}` : ''}`,
  date: (d, m, y) => `${d === 1 ? 'premier' : cardinal(String(d))} ${MONTHS[m - 1]}${y ? ` ${cardinal(y)}` : ''}`,
  localDate: /(\d{1,2})\/(\d{1,2})\/(\d{4})(?!\d)/y,
  times: [HOUR_H],
  ordinalSuffix: /(ères|ère|èmes|ème|emes|eme|ers|er|res|re|nde|nd|es|e|è)(?![\p{L}\p{N}])/uy,
  ordinal,
  spaceThousands: true,
};

const ABBREVIATIONS: Abbreviation[] = [
  ['M.', 'Monsieur', 'capital'],
  ['MM.', 'Messieurs', 'capital'],
  ['Mme', 'Madame'],
  ['Mmes', 'Mesdames'],
  ['Mlle', 'Mademoiselle'],
  ['Dr', 'Docteur'],
  ['Dr.', 'Docteur'],
  ['Pr', 'Professeur', 'capital'],
  ['Pr.', 'Professeur'],
  ['St', 'Saint', 'capital'],
  ['Ste', 'Sainte', 'capital'],
  ['etc.', 'et cetera', 'end'],
  ['p.ex.', 'par exemple'],
  ['c.-à-d.', "c'est-à-dire"],
  ['env.', 'environ'],
  ['n°', 'numéro'],
  ['N°', 'numéro'],
  ['av.J.-C.', 'avant Jésus-Christ'],
  ['apr.J.-C.', 'après Jésus-Christ'],
  ['tél.', 'téléphone'],
];
const expandAbbreviations = abbreviationExpander(ABBREVIATIONS);

export function normalizeFrench(text: string): string {
  return scanNumbers(expandAbbreviations(text), FRENCH);
}
