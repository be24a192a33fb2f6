// English number normalisation for TTS: cardinals, ordinals, decimals, currency, percentages,
// times and years, following the conventions of Keith Ito's Tacotron cleaners (which LJSpeech-era
// front ends share): "1999" -> "nineteen ninety-nine", "2005" -> "two thousand five",
// "2010" -> "twenty ten", "$5.50" -> "five dollars, fifty cents".

const ONES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES: [bigint, string][] = [
  [10n ** 15n, 'quadrillion'],
  [10n ** 12n, 'trillion'],
  [10n ** 9n, 'billion'],
  [10n ** 6n, 'million'],
  [1000n, 'thousand'],
];

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

/** Cardinal words for a non-negative integer given as digits ("1234" -> "one thousand two hundred thirty-four"). */
export function cardinal(digits: string): string {
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

const ORDINAL_EXCEPTIONS: Record<string, string> = { one: 'first', two: 'second', three: 'third', five: 'fifth', eight: 'eighth', nine: 'ninth', twelve: 'twelfth' };

export function ordinal(digits: string): string {
  const words = cardinal(digits);
  const m = /([a-z]+)$/.exec(words)!;
  const last = m[1];
  const ord = ORDINAL_EXCEPTIONS[last] ?? (last.endsWith('y') ? `${last.slice(0, -1)}ieth` : `${last}th`);
  return words.slice(0, m.index) + ord;
}

/** A year read the way people say it. */
export function year(digits: string): string {
  const n = Number(digits);
  if (n >= 2000 && n < 2010) return cardinal(digits);
  if (n % 100 === 0 && n % 1000 !== 0) return `${cardinal(String(n / 100))} hundred`;
  if (n >= 1000 && n < 3000) {
    const hi = Math.floor(n / 100);
    const lo = n % 100;
    return `${cardinal(String(hi))} ${lo < 10 ? `oh ${ONES[lo]}` : cardinal(String(lo))}`;
  }
  return cardinal(digits);
}

const CURRENCIES: Record<string, [string, string, string, string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '¥': ['yen', 'yen', 'sen', 'sen'],
};

function money(symbol: string, whole: string, fraction: string | undefined): string {
  const [one, many, subOne, subMany] = CURRENCIES[symbol];
  const w = BigInt(whole.replace(/,/g, '') || '0');
  const f = fraction ? Number(fraction.padEnd(2, '0').slice(0, 2)) : 0;
  const parts: string[] = [];
  if (w > 0n || f === 0) parts.push(`${cardinal(w.toString())} ${w === 1n ? one : many}`);
  if (f > 0) parts.push(`${cardinal(String(f))} ${f === 1 ? subOne : subMany}`);
  return parts.join(', ');
}

/** Expand every number in English text. Order matters: currency and ordinals before plain numbers. */
export function expandNumbers(text: string): string {
  return text
    .replace(/([$£€¥])\s?(\d[\d,]*)(?:\.(\d+))?(\s?(?:million|billion|trillion))?/g, (_m, sym: string, whole: string, frac: string | undefined, scale: string | undefined) =>
      scale ? `${expandDecimal(whole.replace(/,/g, ''), frac)}${scale} ${CURRENCIES[sym][1]}` : money(sym, whole, frac),
    )
    .replace(/\b(\d{1,2}):(\d{2})\b/g, (_m, h: string, mm: string) => (mm === '00' ? `${cardinal(h)} o'clock` : `${cardinal(h)} ${Number(mm) < 10 ? `oh ${cardinal(mm)}` : cardinal(mm)}`))
    .replace(/\b(\d[\d,]*)(st|nd|rd|th)\b/gi, (_m, d: string) => ordinal(d.replace(/,/g, '')))
    .replace(/(\d[\d,]*(?:\.\d+)?)\s?%/g, (_m, d: string) => `${expandDecimalText(d)} percent`)
    .replace(/\b(\d+)\.(\d+)\b/g, (_m, w: string, f: string) => expandDecimal(w, f))
    .replace(/\b\d{1,3}(?:,\d{3})+\b/g, (m) => cardinal(m.replace(/,/g, '')))
    .replace(/\b(1[1-9]\d\d|20\d\d)\b/g, (m) => year(m))
    .replace(/-(\d+)\b/g, (m, d: string, offset: number, s: string) => (offset === 0 || /\s/.test(s[offset - 1]) ? `minus ${cardinal(d)}` : m))
    .replace(/\d+/g, (m) => cardinal(m));
}

function expandDecimal(whole: string, fraction: string | undefined): string {
  return fraction ? `${cardinal(whole)} point ${[...fraction].map((c) => ONES[Number(c)]).join(' ')}` : cardinal(whole);
}

function expandDecimalText(d: string): string {
  const [w, f] = d.replace(/,/g, '').split('.');
  return expandDecimal(w, f);
}
