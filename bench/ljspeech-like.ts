// LJSpeech-shaped synthetic material for benchmarks: 13,100 English rows whose lengths follow
// LJSpeech 1.1's (mean ~100 characters, 1-187 words), with the numbers, abbreviations and
// punctuation its cleaner must handle, and matching clip durations (mean ~6.6 s, 1-10 s).
import { mulberry32 } from '../src/core/data/buckets.js';

const WORDS = (
  'the of and to in a was he that his for with as had which by on at it from be ' +
  'were this not but they been an or are their him all have when one who would ' +
  'there so she her into more upon said some them than time then other what these ' +
  'could about only its any its made over such out also after first may two before ' +
  'many'
).split(' ');
const EXTRAS = [
  'Mr. Oswald',
  'Dr. Humes',
  'St. Louis',
  '$2,500',
  'in 1963',
  'the 22nd of November',
  '3.5 percent',
  'No. 7',
  'Mrs. Kennedy',
  'at 12:30',
];

export function ljspeechRows(n = 13100, seed = 1): { id: string; text: string; durationS: number }[] {
  const r = mulberry32(seed);
  const rows = [];
  for (let i = 0; i < n; i++) {
    // Log-normal-ish length around 100 characters, clipped to LJSpeech's range.
    const target = Math.max(10, Math.min(187, Math.round(100 * Math.exp((r() + r() + r() - 1.5) * 0.6))));
    const words: string[] = [];
    let len = 0;
    while (len < target) {
      const w = r() < 0.06 ? EXTRAS[Math.floor(r() * EXTRAS.length)] : WORDS[Math.floor(r() * WORDS.length)];
      words.push(w);
      len += w.length + 1;
    }
    let text = words.join(' ');
    text = text[0].toUpperCase() + text.slice(1) + (r() < 0.8 ? '.' : ',');
    rows.push({
      id: `LJ${String(Math.floor(i / 1000)).padStart(3, '0')}-${String(i % 1000).padStart(4, '0')}`,
      text,
      durationS: Math.max(1, Math.min(10, text.length / 15.2)),
    });
  }
  return rows;
}
