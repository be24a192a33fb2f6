// Language per row: from a file name ("de_0001.wav", "de/0001.wav") or detected from the text:
// the Unicode script first, then, for Latin script, diacritics and frequent function words.
import { basename } from 'node:path';

const SCRIPTS: [RegExp, string[]][] = [
  [/[\u0400-\u04ff]/u, ['ru', 'uk', 'bg', 'sr']],
  [/[\u0370-\u03ff]/u, ['el']],
  [/[\u0590-\u05ff]/u, ['he']],
  [/[\u0600-\u06ff]/u, ['ar', 'fa']],
  [/[\u0900-\u097f]/u, ['hi']],
  [/[\u0e00-\u0e7f]/u, ['th']],
  [/[\uac00-\ud7af]/u, ['ko']],
  [/[\u3040-\u30ff]/u, ['ja']],
  [/[\u4e00-\u9fff]/u, ['zh', 'ja']],
];

const LATIN: Record<string, { words: string[]; letters: RegExp }> = {
  en: { words: ['the', 'and', 'of', 'to', 'is', 'in', 'that', 'it', 'was', 'with', 'for', 'you'], letters: /^$/ },
  de: { words: ['der', 'die', 'und', 'das', 'ist', 'nicht', 'ein', 'ich', 'mit', 'sie', 'zu', 'den'], letters: /[äöüß]/ },
  fr: { words: ['le', 'la', 'les', 'et', 'est', 'des', 'une', 'un', 'que', 'pas', 'pour', 'dans'], letters: /[éèêàçùœ]/ },
  es: { words: ['el', 'la', 'los', 'las', 'y', 'es', 'que', 'de', 'en', 'por', 'una', 'con'], letters: /[ñ¿¡áíóú]/ },
  it: { words: ['il', 'la', 'che', 'e', 'di', 'un', 'una', 'non', 'per', 'sono', 'gli', 'della'], letters: /[àèìòù]/ },
  pt: { words: ['o', 'a', 'os', 'as', 'que', 'e', 'não', 'um', 'uma', 'com', 'para', 'do'], letters: /[ãõçâê]/ },
  nl: { words: ['de', 'het', 'een', 'en', 'is', 'van', 'niet', 'dat', 'ik', 'zijn', 'op', 'te'], letters: /ij/ },
  pl: { words: ['i', 'w', 'nie', 'to', 'się', 'na', 'jest', 'z', 'że', 'do', 'co', 'jak'], letters: /[ąęłńśźżć]/ },
  tr: { words: ['bir', 've', 'bu', 'da', 'de', 'ne', 'için', 'çok', 'ben', 'o', 'var', 'mi'], letters: /[ğışİ]/ },
  cs: { words: ['a', 'je', 'to', 'se', 'na', 'že', 'v', 'jsem', 'ne', 's', 'jak', 'by'], letters: /[řěůčšž]/ },
};

export interface DetectedLanguage {
  language: string;
  /** 0..1: the winning score's share of all scores. */
  confidence: number;
}

/** Detect a text's language, restricted to `candidates` when given. */
export function detectLanguage(text: string, candidates?: readonly string[]): DetectedLanguage {
  const allowed = (l: string) => !candidates || candidates.includes(l);
  for (const [re, langs] of SCRIPTS) {
    if (re.test(text)) {
      const pick = langs.find(allowed) ?? langs[0];
      return { language: pick, confidence: langs.filter(allowed).length <= 1 ? 0.9 : 0.5 };
    }
  }
  const words = text.toLowerCase().match(/\p{L}+/gu) ?? [];
  const scores: [string, number][] = Object.entries(LATIN)
    .filter(([l]) => allowed(l))
    .map(([l, { words: fw, letters }]) => [l, words.filter((w) => fw.includes(w)).length + (letters.test(text.toLowerCase()) ? 2 : 0)]);
  if (scores.length === 0) return { language: candidates?.[0] ?? 'en', confidence: 0 };
  scores.sort((a, b) => b[1] - a[1]);
  const total = scores.reduce((a, [, s]) => a + s, 0);
  return { language: scores[0][0], confidence: total ? scores[0][1] / total : 0 };
}

/** "de_0001.wav" or ".../de/0001.wav" -> "de"; undefined when the name carries no language. */
export function languageFromFilename(path: string): string | undefined {
  const prefix = /^([a-z]{2,3}(?:-[a-z]{2})?)_/i.exec(basename(path));
  if (prefix) return prefix[1].toLowerCase();
  const parts = path.split(/[\\/]/);
  const dir = parts.length > 1 ? parts[parts.length - 2] : '';
  return /^[a-z]{2,3}(-[a-z]{2})?$/i.test(dir) ? dir.toLowerCase() : undefined;
}
