// Language per row: from a file name ("de_0001.wav", "de/0001.wav") or detected from the text.
// Detection reads the Unicode script of the letters first (Cyrillic, Greek, Arabic, Han, Kana,
// Hangul, ...), tells apart the languages that share a script by their own letters, and, for Latin
// script, scores each language by its distinctive letters and how many of the words are among its
// most frequent ones. Candidates (text.languages) restrict the choice among the languages of the
// script found; a text in a script none of them uses keeps its script's language, so the pipeline
// can skip the row as `unknown_language` instead of mislabelling it.
import { basename } from 'node:path';

export interface DetectedLanguage {
  /** Language code, spelt as in `candidates` when it came from there ("pt-BR"). */
  language: string;
  /** 0..1: how clearly the text points to this language (0 = no evidence, a guess). */
  confidence: number;
  /** The dominant Unicode script of the letters ("Latin", "Cyrillic", "Han", ...; "none" without letters). */
  script: string;
}

type Script =
  | 'Latin'
  | 'Cyrillic'
  | 'Greek'
  | 'Armenian'
  | 'Hebrew'
  | 'Arabic'
  | 'Devanagari'
  | 'Bengali'
  | 'Gurmukhi'
  | 'Gujarati'
  | 'Tamil'
  | 'Telugu'
  | 'Kannada'
  | 'Malayalam'
  | 'Sinhala'
  | 'Thai'
  | 'Lao'
  | 'Georgian'
  | 'Hangul'
  | 'Kana'
  | 'Han'
  | 'Ethiopic'
  | 'Khmer'
  | 'Myanmar';

// [first code point, last code point, script], sorted; covers the letters of the scripts we name.
const RANGES: [number, number, Script][] = [
  [0x0041, 0x005a, 'Latin'],
  [0x0061, 0x007a, 'Latin'],
  [0x00c0, 0x024f, 'Latin'],
  [0x0370, 0x03ff, 'Greek'],
  [0x0400, 0x052f, 'Cyrillic'],
  [0x0530, 0x058f, 'Armenian'],
  [0x0590, 0x05ff, 'Hebrew'],
  [0x0600, 0x06ff, 'Arabic'],
  [0x0750, 0x077f, 'Arabic'],
  [0x0900, 0x097f, 'Devanagari'],
  [0x0980, 0x09ff, 'Bengali'],
  [0x0a00, 0x0a7f, 'Gurmukhi'],
  [0x0a80, 0x0aff, 'Gujarati'],
  [0x0b80, 0x0bff, 'Tamil'],
  [0x0c00, 0x0c7f, 'Telugu'],
  [0x0c80, 0x0cff, 'Kannada'],
  [0x0d00, 0x0d7f, 'Malayalam'],
  [0x0d80, 0x0dff, 'Sinhala'],
  [0x0e00, 0x0e7f, 'Thai'],
  [0x0e80, 0x0eff, 'Lao'],
  [0x1000, 0x109f, 'Myanmar'],
  [0x10a0, 0x10ff, 'Georgian'],
  [0x1100, 0x11ff, 'Hangul'],
  [0x1200, 0x139f, 'Ethiopic'],
  [0x1780, 0x17ff, 'Khmer'],
  [0x1e00, 0x1eff, 'Latin'],
  [0x1f00, 0x1fff, 'Greek'],
  [0x3040, 0x30ff, 'Kana'],
  [0x3130, 0x318f, 'Hangul'],
  [0x31f0, 0x31ff, 'Kana'],
  [0x3400, 0x4dbf, 'Han'],
  [0x4e00, 0x9fff, 'Han'],
  [0xac00, 0xd7af, 'Hangul'],
  [0xf900, 0xfaff, 'Han'],
  [0xfb1d, 0xfb4f, 'Hebrew'],
  [0xfb50, 0xfdff, 'Arabic'],
  [0xfe70, 0xfeff, 'Arabic'],
  [0xff66, 0xff9f, 'Kana'],
  [0x20000, 0x2fa1f, 'Han'],
];

function scriptOf(cp: number): Script | undefined {
  let lo = 0;
  let hi = RANGES.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b, s] = RANGES[mid];
    if (cp < a) hi = mid - 1;
    else if (cp > b) lo = mid + 1;
    else return s;
  }
  return undefined;
}

/** The languages of each script, the default first. */
const SCRIPT_LANGUAGES: Record<Script, string[]> = {
  Latin: [], // scored below
  Cyrillic: ['ru', 'uk', 'bg', 'sr', 'mk', 'be', 'kk'],
  Greek: ['el'],
  Armenian: ['hy'],
  Hebrew: ['he', 'yi'],
  Arabic: ['ar', 'fa', 'ur'],
  Devanagari: ['hi', 'mr', 'ne'],
  Bengali: ['bn'],
  Gurmukhi: ['pa'],
  Gujarati: ['gu'],
  Tamil: ['ta'],
  Telugu: ['te'],
  Kannada: ['kn'],
  Malayalam: ['ml'],
  Sinhala: ['si'],
  Thai: ['th'],
  Lao: ['lo'],
  Georgian: ['ka'],
  Hangul: ['ko'],
  Kana: ['ja'],
  Han: ['zh', 'yue', 'ja'],
  Ethiopic: ['am'],
  Khmer: ['km'],
  Myanmar: ['my'],
};

interface Profile {
  /** Among the language's most frequent words (from its common-word lists). */
  words: string[];
  /** Letters or letter groups (up to 3) that mark the language, with a weight per occurrence. */
  marks: Record<string, number>;
  /** Word endings (2-5 letters) typical of the language, with a weight per word. */
  suffixes: Record<string, number>;
}

const profile = (
  words: string,
  marks: Record<string, number> = {},
  suffixes: Record<string, number> = {},
): Profile => ({ words: words.split(' '), marks, suffixes });

// Latin-script languages. Word lists are the most frequent function words of each language; marks
// weigh letters by how specific they are (ñ says Spanish, é says little).
const LATIN: Record<string, Profile> = {
  en: profile(
    'thank thanks yes okay please the be to of and a in that have it for not on with ' +
      'he as you do at this but his by from they we say her she or an will my one all ' +
      'would there their what so up out if about who get which go me when make can ' +
      'like no just him know take into your some could them see other than then now ' +
      'only its over also after how our well way even want because any these us is was ' +
      'are were been has had said did i',
    { w: 0.15, th: 0.3, wh: 0.3 },
    { ing: 0.7, ly: 0.4, ght: 0.8, tion: 0.2 },
  ),
  de: profile(
    'danke ja gut der die und in den von zu das mit sich des auf für ist im dem ' +
      'nicht ein eine als auch es an werden aus er hat dass sie nach wird bei einer um ' +
      'am sind noch wie einem über einen so zum war haben nur oder aber vor zur bis ' +
      'mehr durch man sein wurde sei ich du wir ihr kein schon sehr hier',
    { ß: 3, ä: 1, ö: 0.7, ü: 0.7, sch: 0.6, tz: 0.3, ei: 0.2 },
    { ung: 0.8, keit: 1, heit: 1, lich: 1, chen: 0.6, en: 0.15 },
  ),
  fr: profile(
    'merci oui bonjour beaucoup de la le et les des en un du une que est pour qui ' +
      'dans par plus pas au sur ne se ce il sont mais avec son ou été aux elle nous ' +
      'vous je tu on ses leur comme tout bien cette être fait très avait ces sa',
    {
      é: 0.5,
      è: 1,
      ê: 1.5,
      à: 0.7,
      ç: 1,
      ù: 1.5,
      œ: 3,
      â: 0.7,
      î: 1,
      ô: 0.7,
      û: 2,
      ë: 0.7,
      ï: 1,
      "qu'": 2,
      "l'": 1,
      "d'": 1,
      eau: 1.5,
      oux: 1,
    },
    { eux: 1, aux: 0.7, oup: 0.7, ement: 0.8, ait: 0.7, ent: 0.2 },
  ),
  es: profile(
    'gracias hola bien de la que el en y a los del se las por un para con no una su ' +
      'al lo como más pero sus le ya o este sí porque esta entre cuando muy sin sobre ' +
      'también me hasta hay donde quien desde todo nos durante es son está yo fue',
    { ñ: 3, '¿': 3, '¡': 3, á: 0.7, í: 0.7, ó: 0.7, ú: 0.7, é: 0.3 },
    { ción: 1.5, dad: 1, ado: 0.3, os: 0.2, as: 0.15 },
  ),
  it: profile(
    'grazie ciao bene di e il la che è per un in del non una a le si con da sono al ' +
      'della lo gli i dei mi ma come anche ho più questo ci ha nel alla se io lui lei ' +
      'noi voi essere questa molto perché',
    { ì: 2, ò: 2, à: 1, è: 1, ù: 1, gli: 1, zz: 0.6, cch: 1 },
    { zione: 1.5, zioni: 1.5, mente: 0.5, tto: 0.5, ggi: 0.8 },
  ),
  pt: profile(
    'obrigado obrigada tudo bem sim olá de a o que e do da em um para é com não uma ' +
      'os no se na por mais as dos como mas foi ao ele das tem à seu sua ou ser quando ' +
      'muito há nos já está eu também só pelo pela até isso ela entre era depois sem ' +
      'mesmo aos você',
    { ã: 3, õ: 3, ç: 1.5, â: 1, ê: 1, ô: 1, á: 0.5, é: 0.3, í: 0.3, ó: 0.3, ú: 0.3, à: 0.5, nh: 0.5, lh: 0.7 },
    { ção: 2, ções: 2, dade: 1, ado: 0.3, em: 0.3 },
  ),
  nl: profile(
    'dank bedankt goed de en van ik te dat die in een hij het niet zijn is was op ' +
      'aan met als voor had er maar om hem dan zou of wat mijn men dit zo door over ze ' +
      'zich bij ook tot je mij uit daar haar naar heb hoe heeft hebben deze want nog ' +
      'zal zij nu geen omdat iets worden toch al waren veel meer doen toen moet ben ' +
      'zonder kan hun dus alles onder ja hier wie werd wordt kunnen ons',
    { ij: 1.2, oe: 0.4, aa: 0.3, uu: 0.3, sch: 0.3 },
    { heid: 1.5, lijk: 1.5, tje: 1, en: 0.15 },
  ),
  pl: profile(
    'dziękuję tak dobrze i w nie na się z do to że jest jak o co ale po tak za od ' +
      'jego już tylko czy ja ty on ona my wy był była było są może bardzo przez dla ' +
      'jestem jeszcze mnie tego tym ten ta te który która które',
    { ł: 3, ą: 3, ę: 3, ś: 2, ź: 2, ż: 2, ć: 2, ń: 2, ó: 0.5, rz: 0.7, sz: 0.5, cz: 0.5, w: 0.1 },
    { ość: 2, ego: 0.5, ych: 0.8, ami: 0.5 },
  ),
  tr: profile(
    'bir ve bu da de için ne ile çok ben o var mi daha gibi sen ama olarak en kadar ' +
      'olan değil ki her şey bana beni sonra şimdi nasıl neden evet hayır içinde',
    { ğ: 3, ı: 3, ş: 2, ç: 0.7, ö: 0.5, ü: 0.5 },
    { lar: 1, ler: 1, yor: 1.5, dir: 0.5 },
  ),
  cs: profile(
    'děkuji ano dobře vím nevím protože také tady teď proč a je se v na že to s z do ' +
      'o jsem ale jak by i k za jako tak po pro od už jsou jsme být který která které ' +
      'co když bylo byl byla není ve ze',
    { ř: 3, ů: 3, ě: 3, č: 1, š: 1, ž: 1, ý: 1, á: 0.5, í: 0.5, é: 0.3, ú: 0.5 },
    { ost: 0.5, ní: 0.7, ých: 1 },
  ),
  sk: profile(
    'ďakujem áno dobre viem neviem pretože tiež teraz prečo a je sa v na že to s z ' +
      'do o som ale ako by i k za tak po pre od už sú sme byť ktorý ktorá ktoré čo keď ' +
      'bolo bol bola nie vo zo aj',
    { ľ: 3, ĺ: 3, ŕ: 3, ô: 1.5, ä: 1, č: 1, š: 1, ž: 1, ý: 1, á: 0.5, í: 0.5, ú: 0.5 },
  ),
  hu: profile(
    'a az és hogy nem is egy ez meg de van csak már azt el mint volt még ha ki mi be vagy kell lesz nagyon minden',
    { ő: 3, ű: 3, ö: 0.7, ü: 0.7, á: 0.4, é: 0.4, sz: 0.5, gy: 0.8, cs: 0.4 },
  ),
  ro: profile('de și în la a cu nu că pe o se un din pentru este ce mai care au sunt fost sau dar el ea ei noi', {
    ș: 3,
    ț: 3,
    ă: 3,
    â: 1,
    î: 1.5,
  }),
  sv: profile(
    'och i att det som en på är av för med till den har de inte om ett han men var ' +
      'jag sig från vi så kan man när år säger hon under också efter',
    { å: 1.5, ä: 0.8, ö: 0.8 },
    { arna: 1, erna: 1, heten: 1.5 },
  ),
  da: profile(
    'og i at det en den til er som på de med han af for ikke der var mig sig men et ' +
      'har om vi min havde ham hun nu over da fra du ud sin dem os op man hans hvor ' +
      'eller hvad skal selv her alle vil blev kunne når være noget',
    { æ: 2, ø: 2, å: 1 },
  ),
  nb: profile(
    'og i det på som er en til å han av at for med var de ikke den har jeg seg om et ' +
      'men så vi da hun fra ble kan eller hadde nå der også etter hva skal må bare sin ' +
      'meg',
    { æ: 2, ø: 2, å: 1 },
  ),
  fi: profile(
    'ja on ei se että hän oli olla mitä tämä kun niin mutta ovat jos tai kuin mukaan myös sen hänen minä sinä me te he',
    { ä: 1, ö: 0.7, aa: 0.4, ii: 0.5, uu: 0.4, yy: 1, kk: 0.5 },
    { ssa: 1, ssä: 1.5, sta: 0.7, stä: 1.5, lla: 0.7, llä: 1.5, ksi: 1, nen: 0.7, ista: 0.8, ina: 0.3 },
  ),
  vi: profile('là và của có không người một những được các trong cho đã với này để ở đó khi như thì tôi anh em', {
    đ: 3,
    ơ: 3,
    ư: 3,
    ạ: 3,
    ả: 3,
    ấ: 3,
    ầ: 3,
    ậ: 3,
    ắ: 3,
    ằ: 3,
    ặ: 3,
    ẹ: 3,
    ẻ: 3,
    ế: 3,
    ề: 3,
    ể: 3,
    ệ: 3,
    ỉ: 3,
    ị: 3,
    ọ: 3,
    ỏ: 3,
    ố: 3,
    ồ: 3,
    ổ: 3,
    ộ: 3,
    ớ: 3,
    ờ: 3,
    ở: 3,
    ợ: 3,
    ụ: 3,
    ủ: 3,
    ứ: 3,
    ừ: 3,
    ử: 3,
    ữ: 3,
    ự: 3,
    ỳ: 3,
  }),
  ca: profile('de la i el que a en les per un no es del una amb els al com és però més hi ha seu ja ser', {
    l·l: 3,
    ç: 0.7,
    à: 0.5,
    è: 0.5,
    ò: 1,
    ï: 1,
    "l'": 0.5,
  }),
};

// Letters that mark one Cyrillic language against the others (ru is the default).
const CYRILLIC_MARKS: Record<string, Record<string, number>> = {
  ru: { ы: 2, э: 2, ё: 2, ъ: 0.5 },
  uk: { і: 2, ї: 3, є: 3, ґ: 3 },
  be: { ў: 3, і: 1 },
  bg: { ъ: 1.5, щ: 0.5 },
  sr: { ђ: 3, ћ: 3, џ: 3, ј: 1.5, љ: 1.5, њ: 1.5 },
  mk: { ѓ: 3, ќ: 3, ѕ: 3, ј: 1.5, љ: 1.5, њ: 1.5 },
  kk: { ә: 3, ғ: 3, қ: 3, ң: 3, ө: 3, ұ: 3, ү: 2, һ: 2, і: 1 },
};
const ARABIC_MARKS: Record<string, Record<string, number>> = {
  ar: { ة: 1, ال: 0.5, ى: 0.5 },
  fa: { پ: 3, چ: 3, ژ: 3, گ: 3, ی: 1, ک: 1 },
  ur: { ٹ: 3, ڈ: 3, ڑ: 3, ں: 3, ے: 3, ھ: 1 },
};
const DEVANAGARI_MARKS: Record<string, Record<string, number>> = {
  hi: { है: 2, हैं: 2, में: 2, की: 1, और: 1 },
  mr: { आहे: 3, आणि: 3, ळ: 2, च्या: 2 },
  ne: { छ: 1, छन्: 2, गर्न: 2, हुन्छ: 3 },
};
const HAN_MARKS: Record<string, Record<string, number>> = {
  zh: { 的: 1, 是: 1, 了: 1, 们: 1, 这: 1, 个: 1, 说: 1 },
  yue: { 嘅: 3, 咗: 3, 佢: 3, 唔: 3, 冇: 3, 喺: 3, 嘢: 3, 啲: 3 },
  ja: {},
};

function countMarks(text: string, marks: Record<string, number>): number {
  let score = 0;
  for (const [mark, weight] of Object.entries(marks)) {
    let at = text.indexOf(mark);
    while (at !== -1) {
      score += weight;
      at = text.indexOf(mark, at + mark.length);
    }
  }
  return score;
}

/** The candidate spelt like `code` ("pt" matches "pt-BR"), or undefined when none is. */
function matchCandidate(code: string, candidates: readonly string[] | undefined): string | undefined {
  if (!candidates) return code;
  const lower = code.toLowerCase();
  return (
    candidates.find((c) => c.toLowerCase() === lower) ?? candidates.find((c) => c.toLowerCase().split('-')[0] === lower)
  );
}

/** Best of scored languages: confidence grows with the margin over the runner-up and with evidence. */
function pick(
  scores: [string, number][],
  evidenceFor: (score: number) => number,
): { language: string; confidence: number } {
  scores.sort((a, b) => b[1] - a[1]);
  const [top, second] = [scores[0], scores[1]];
  if (top[1] <= 0) return { language: top[0], confidence: 0 };
  const margin = second ? (top[1] - Math.max(0, second[1])) / top[1] : 1;
  return { language: top[0], confidence: margin * evidenceFor(top[1]) };
}

function scoreWithin(
  script: Script,
  text: string,
  candidates: readonly string[] | undefined,
  letters: number,
): { language: string; confidence: number } {
  const all = SCRIPT_LANGUAGES[script];
  const allowed = candidates ? all.filter((l) => matchCandidate(l, candidates)) : all;
  // No configured language uses this script: report the script's own language (see the header).
  const langs = allowed.length ? allowed : all;
  const scale = allowed.length ? 1 : 0.5;
  if (langs.length === 1) return { language: langs[0], confidence: scale };
  if (script === 'Han' && /[\u3040-\u30ff]/.test(text) && langs.includes('ja'))
    return { language: 'ja', confidence: scale };
  const table =
    script === 'Cyrillic'
      ? CYRILLIC_MARKS
      : script === 'Arabic'
        ? ARABIC_MARKS
        : script === 'Devanagari'
          ? DEVANAGARI_MARKS
          : script === 'Han'
            ? HAN_MARKS
            : {};
  const lower = text.toLowerCase();
  // The script's default language gets a small prior, so a text without marks is read as it.
  const scores: [string, number][] = langs.map((l, i) => [
    l,
    countMarks(lower, table[l] ?? {}) + (l === all[0] ? 0.5 : 0) - i * 0.01,
  ]);
  const best = pick(scores, (s) => Math.min(1, s / Math.max(2, letters / 40)));
  return { language: best.language, confidence: Math.max(best.confidence, 0.3) * scale };
}

// Every word, mark and suffix points to the Latin languages that have it: one pass over the text.
const LATIN_CODES = Object.keys(LATIN);
type Hits = [language: number, weight: number][];
function indexBy(get: (p: Profile) => Record<string, number>): Map<string, Hits> {
  const index = new Map<string, Hits>();
  LATIN_CODES.forEach((code, i) => {
    for (const [key, weight] of Object.entries(get(LATIN[code]))) {
      let hits = index.get(key);
      if (!hits) index.set(key, (hits = []));
      hits.push([i, weight]);
    }
  });
  return index;
}
const WORD_INDEX = indexBy((p) => Object.fromEntries(p.words.map((w) => [w, 1])));
const MARK_INDEX = indexBy((p) => p.marks);
const SUFFIX_INDEX = indexBy((p) => p.suffixes);
const GROUP_STARTS = new Set([...MARK_INDEX.keys()].filter((k) => k.length > 1).map((k) => k[0]));
const LATIN_WORD = /[\p{L}\p{M}'’·]+/gu;

function scoreLatin(text: string, candidates: readonly string[] | undefined): { language: string; confidence: number } {
  const allowed = LATIN_CODES.filter((l) => matchCandidate(l, candidates));
  const scale = allowed.length || !candidates ? 1 : 0.5;
  const langs = allowed.length ? allowed : LATIN_CODES;
  if (langs.length === 1) return { language: langs[0], confidence: scale };
  const lower = text.toLowerCase();
  const score = new Float64Array(LATIN_CODES.length);
  const add = (hits: Hits | undefined) => {
    if (hits) for (const [i, w] of hits) score[i] += w;
  };
  for (const m of lower.matchAll(LATIN_WORD)) {
    const word = m[0].includes('’') ? m[0].replace(/’/g, "'") : m[0];
    add(WORD_INDEX.get(word));
    for (let n = 2; n <= 5 && n < word.length; n++) add(SUFFIX_INDEX.get(word.slice(-n)));
    for (let i = 0; i < word.length; i++) {
      const ch = word[i];
      add(MARK_INDEX.get(ch));
      if (GROUP_STARTS.has(ch)) {
        if (i + 1 < word.length) add(MARK_INDEX.get(word.slice(i, i + 2)));
        if (i + 2 < word.length) add(MARK_INDEX.get(word.slice(i, i + 3)));
      }
    }
  }
  for (const ch of '¿¡') if (lower.includes(ch)) add(MARK_INDEX.get(ch));
  // Evidence: about one in three words of running text is a function word; 3+ points is clear.
  const best = pick(
    langs.map((l) => [l, score[LATIN_CODES.indexOf(l)]]),
    (s) => Math.min(1, s / 3),
  );
  return { language: best.language, confidence: best.confidence * scale };
}

/**
 * Detect a text's language, restricted to `candidates` (e.g. text.languages) when given. The
 * returned code is spelt as in candidates when it matched one ("pt" -> "pt-BR").
 */
export function detectLanguage(text: string, candidates?: readonly string[]): DetectedLanguage {
  const counts = new Map<Script, number>();
  let letters = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    // ASCII fast path: most text is mostly ASCII, and only its letters have a script.
    const s = cp < 0x80 ? ((cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a ? 'Latin' : undefined) : scriptOf(cp);
    if (s) {
      counts.set(s, (counts.get(s) ?? 0) + 1);
      letters++;
    }
  }
  const fallback = candidates?.[0] ?? 'en';
  if (letters === 0) return { language: fallback, confidence: 0, script: 'none' };
  let script: Script = 'Latin';
  let most = -1;
  for (const [s, n] of counts) if (n > most) [script, most] = [s, n];
  // Japanese mixes Kana with Han (often more Han than Kana); any Kana among CJK letters means Japanese.
  if (script === 'Han' && (counts.get('Kana') ?? 0) > 0) script = 'Kana';
  const share = most / letters;
  const found = script === 'Latin' ? scoreLatin(text, candidates) : scoreWithin(script, text, candidates, letters);
  const language = matchCandidate(found.language, candidates) ?? found.language;
  return { language, confidence: Math.round(found.confidence * share * 1000) / 1000, script };
}

// ISO 639-1 codes and the 639-3 codes espeak-ng and XTTS use, so "my_recording.wav" or "LJ001"
// are not read as languages unless configured.
const KNOWN_CODES = new Set(
  (
    'af am an ar as az ba be bg bn bs ca cs cv cy da de el en eo es et eu fa fi fr ' +
    'ga gd gl gn gu he hi hr ht hu hy ia id is it ja ' +
    'jv ka kk kl km kn ko ku ky la lb lo lt lv mi mk ml mn mr ms mt my nb ne nl nn ' +
    'no oc om or pa pl ps pt qu ro ru sd si sk sl so sq sr ' +
    'sv sw ta te tg th tk tl tn tr tt ug uk ur uz vi xh yi yo zh zu cmn yue fil haw'
  ).split(' '),
);
const CODE = /^([a-z]{2,3})(?:-([a-z0-9]{2,8}))?$/i;

/** Whether `code`'s primary subtag is a language xtts knows ("pt-BR" yes, "xx" no). */
export function isKnownLanguage(code: string): boolean {
  const m = CODE.exec(code);
  return m !== null && KNOWN_CODES.has(m[1].toLowerCase());
}

/** The language codes xtts knows, sorted. */
export const KNOWN_LANGUAGES: readonly string[] = [...KNOWN_CODES].sort();

function asLanguage(name: string, candidates: readonly string[] | undefined): string | undefined {
  const m = CODE.exec(name);
  if (!m) return undefined;
  if (candidates) return matchCandidate(name, candidates);
  return KNOWN_CODES.has(m[1].toLowerCase()) ? name.toLowerCase() : undefined;
}

/**
 * "de_0001.wav" or ".../de/0001.wav" -> "de"; undefined when the name carries no language. With
 * `candidates`, only those are recognised (spelt as configured, "pt-br_01.wav" -> "pt-BR");
 * without, any ISO 639-1 code (and cmn, yue, fil, haw).
 */
export function languageFromFilename(path: string, candidates?: readonly string[]): string | undefined {
  const prefix = /^([a-z]{2,3}(?:-[a-z0-9]{2,8})?)[_]/i.exec(basename(path));
  const fromPrefix = prefix ? asLanguage(prefix[1], candidates) : undefined;
  if (fromPrefix) return fromPrefix;
  const parts = path.split(/[\\/]/).filter((p) => p !== '');
  // The folder holding the file, then the first folder of a relative path ("de/wavs/0001.wav").
  const dirs = [
    parts.length > 1 ? parts[parts.length - 2] : undefined,
    !/^[\\/]/.test(path) && parts.length > 2 ? parts[0] : undefined,
  ];
  for (const dir of dirs) {
    const lang = dir ? asLanguage(dir, candidates) : undefined;
    if (lang) return lang;
  }
  return undefined;
}
