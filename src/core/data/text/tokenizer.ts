// The one tokenizer used for training, evaluation and synthesis: special tokens, one token per
// language, and one per character (or IPA symbol) seen in the training texts. It is stored with the
// cache and every checkpoint; its identity (a hash of everything that decides an id) is part of the
// token cache keys.
import { createHash } from 'node:crypto';
import { XttsError } from '../../errors.js';

export const PAD = 0;
export const BOS = 1;
export const EOS = 2;
export const UNK = 3;
const SPECIALS = ['<pad>', '<bos>', '<eos>', '<unk>'];
const SPEAKABLE = /^[\p{L}\p{M}\p{N}\p{P} ]$/u;

export interface TokenizerJSON {
  format: 'xtts-tokenizer@1';
  mode: 'characters' | 'phonemes';
  /** espeak-ng identity when mode is phonemes. */
  phonemizer: string | null;
  languages: string[];
  symbols: string[];
}

export interface Encoded {
  /** [<bos>, [lang], ...symbols, <eos>] */
  ids: Int32Array;
  /** Characters with no id (the row is skipped as `unmappable_characters`). */
  unmappable: string[];
}

export class Tokenizer {
  readonly mode: TokenizerJSON['mode'];
  readonly phonemizer: string | null;
  readonly languages: readonly string[];
  readonly symbols: readonly string[];
  private readonly symbolIds = new Map<string, number>();
  private readonly languageIds = new Map<string, number>();
  private readonly identityHash: string;

  private constructor(json: TokenizerJSON) {
    this.mode = json.mode;
    this.phonemizer = json.phonemizer;
    this.languages = json.languages;
    this.symbols = json.symbols;
    json.languages.forEach((l, i) => this.languageIds.set(l, SPECIALS.length + i));
    json.symbols.forEach((s, i) => this.symbolIds.set(s, SPECIALS.length + json.languages.length + i));
    this.identityHash = createHash('sha256').update(JSON.stringify(json)).digest('hex');
  }

  /**
   * Build from texts deterministically: the vocabulary is the sorted set of their speakable code
   * points — letters, combining marks, digits, punctuation and spaces. Symbols (☃, emoji, math,
   * currency signs a cleaner did not expand), controls and private-use characters get no id, so a
   * row that has them is reported as unmappable instead of teaching the model a silent token.
   */
  static fromTexts(texts: Iterable<string>, languages: readonly string[], mode: TokenizerJSON['mode'] = 'characters', phonemizer: string | null = null): Tokenizer {
    const seen = new Set<string>();
    for (const t of texts) for (const ch of t) if (SPEAKABLE.test(ch)) seen.add(ch);
    return new Tokenizer({ format: 'xtts-tokenizer@1', mode, phonemizer, languages: [...languages], symbols: [...seen].sort() });
  }

  static fromJSON(json: TokenizerJSON): Tokenizer {
    if (json?.format !== 'xtts-tokenizer@1' || !Array.isArray(json.symbols) || !Array.isArray(json.languages)) {
      throw new XttsError('TOKENIZER_INVALID', 'the stored tokenizer is not an xtts tokenizer (format xtts-tokenizer@1)', { suggestions: ['the checkpoint or cache was written by another tool or version; retrain or clear the cache'] });
    }
    return new Tokenizer(json);
  }

  toJSON(): TokenizerJSON {
    return { format: 'xtts-tokenizer@1', mode: this.mode, phonemizer: this.phonemizer, languages: [...this.languages], symbols: [...this.symbols] };
  }

  /** Changes whenever any id could change. */
  identity(): string {
    return this.identityHash;
  }

  get vocabSize(): number {
    return SPECIALS.length + this.languages.length + this.symbols.length;
  }

  languageIndex(language: string): number | undefined {
    const id = this.languageIds.get(language);
    return id === undefined ? undefined : id - SPECIALS.length;
  }

  encode(text: string, language: string): Encoded {
    const lang = this.languageIds.get(language);
    if (lang === undefined) throw new XttsError('TOKENIZER_UNKNOWN_LANGUAGE', `language "${language}" is not one of the tokenizer's: ${this.languages.join(', ')}`, { suggestions: ['add it to text.languages and retrain, or pick one of those'] });
    const chars = [...text];
    const ids = new Int32Array(chars.length + 3);
    ids[0] = BOS;
    ids[1] = lang;
    const unmappable = new Set<string>();
    chars.forEach((ch, i) => {
      const id = this.symbolIds.get(ch);
      if (id === undefined) unmappable.add(ch);
      ids[i + 2] = id ?? UNK;
    });
    ids[ids.length - 1] = EOS;
    return { ids, unmappable: [...unmappable] };
  }

  decode(ids: ArrayLike<number>): string {
    let out = '';
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (id < SPECIALS.length + this.languages.length) continue;
      out += this.symbols[id - SPECIALS.length - this.languages.length] ?? '';
    }
    return out;
  }
}
