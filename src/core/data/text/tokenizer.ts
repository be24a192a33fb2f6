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
export const SPECIAL_TOKENS: readonly string[] = ['<pad>', '<bos>', '<eos>', '<unk>'];
const SPECIALS = SPECIAL_TOKENS;
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
  /** Where each of `unmappable` first occurs in the text, in characters (code points) from 0. */
  unmappableAt?: number[];
}

export type TokenizerMode = TokenizerJSON['mode'];

/** Why a stored tokenizer cannot be used, or undefined when it can. */
function invalid(json: TokenizerJSON): string | undefined {
  if (json?.format !== 'xtts-tokenizer@1') return `format is ${JSON.stringify(json?.format)}`;
  if (json.mode !== 'characters' && json.mode !== 'phonemes') return `mode is ${JSON.stringify(json.mode)}`;
  if (json.mode === 'phonemes' && typeof json.phonemizer !== 'string')
    return 'phonemes mode without a phonemizer identity';
  if (json.mode === 'characters' && json.phonemizer !== null) return 'characters mode with a phonemizer';
  if (
    !Array.isArray(json.languages) ||
    json.languages.length === 0 ||
    json.languages.some((l) => typeof l !== 'string' || l === '')
  )
    return 'languages is not a list of codes';
  if (new Set(json.languages).size !== json.languages.length) return 'a language is listed twice';
  if (!Array.isArray(json.symbols) || json.symbols.some((s) => typeof s !== 'string' || [...s].length !== 1))
    return 'symbols is not a list of single characters';
  if (new Set(json.symbols).size !== json.symbols.length) return 'a symbol is listed twice';
  return undefined;
}

export class Tokenizer {
  readonly mode: TokenizerJSON['mode'];
  readonly phonemizer: string | null;
  readonly languages: readonly string[];
  readonly symbols: readonly string[];
  private readonly symbolIds = new Map<string, number>();
  private readonly languageIds = new Map<string, number>();
  private readonly identityHash: string;
  /** Ids of Basic Multilingual Plane characters by code unit; 0 (<pad>, never a symbol) = no id. */
  private readonly bmpIds = new Int32Array(0x10000);

  private constructor(json: TokenizerJSON) {
    this.mode = json.mode;
    this.phonemizer = json.phonemizer;
    this.languages = Object.freeze([...json.languages]);
    this.symbols = Object.freeze([...json.symbols]);
    this.languages.forEach((l, i) => this.languageIds.set(l, SPECIALS.length + i));
    this.symbols.forEach((s, i) => {
      const id = SPECIALS.length + this.languages.length + i;
      this.symbolIds.set(s, id);
      if (s.length === 1) this.bmpIds[s.charCodeAt(0)] = id;
    });
    // Hash the canonical form, so a stored tokenizer whose keys were reordered keeps its identity.
    this.identityHash = createHash('sha256').update(JSON.stringify(this.toJSON())).digest('hex');
  }

  /**
   * Build from texts deterministically: the vocabulary is the sorted set of their speakable code
   * points — letters, combining marks, digits, punctuation and spaces — and of `base` (the
   * languages' alphabets, alphabets.ts: a letter the texts lack still gets an id). Symbols (☃, emoji, math,
   * currency signs a cleaner did not expand), controls and private-use characters get no id, so a
   * row that has them is reported as unmappable instead of teaching the model a silent token.
   * In phonemes mode the texts are espeak-ng's IPA and `phonemizer` is its identity.
   */
  static fromTexts(
    texts: Iterable<string>,
    languages: readonly string[],
    mode: TokenizerMode = 'characters',
    phonemizer: string | null = null,
    base: Iterable<string> = [],
  ): Tokenizer {
    // One verdict per distinct character: a table for the Basic Multilingual Plane (0 unseen,
    // 1 speakable, 2 not), a map for the rest. Most of 1.3 M characters are then one array read.
    const bmp = new Uint8Array(0x10000);
    const astral = new Map<string, boolean>();
    const all = function* () {
      yield [...base].join('');
      yield* texts;
    };
    for (const t of all()) {
      for (let i = 0; i < t.length; i++) {
        const c = t.charCodeAt(i);
        if (c < 0xd800 || c > 0xdfff) {
          if (bmp[c] === 0) bmp[c] = SPEAKABLE.test(t[i]) ? 1 : 2;
          continue;
        }
        const cp = t.codePointAt(i)!;
        const ch = String.fromCodePoint(cp);
        if (cp > 0xffff) i++;
        if (!astral.has(ch)) astral.set(ch, SPEAKABLE.test(ch));
      }
    }
    const symbols: string[] = [];
    for (let c = 0; c < 0x10000; c++) if (bmp[c] === 1) symbols.push(String.fromCharCode(c));
    for (const [ch, ok] of astral) if (ok) symbols.push(ch);
    // Code-unit order: the same on every machine and Node version, unlike localeCompare.
    symbols.sort();
    return Tokenizer.fromJSON({ format: 'xtts-tokenizer@1', mode, phonemizer, languages: [...languages], symbols });
  }

  static fromJSON(json: TokenizerJSON): Tokenizer {
    const problem = invalid(json);
    if (problem) {
      throw new XttsError(
        'TOKENIZER_INVALID',
        `the stored tokenizer is not a valid xtts tokenizer (format xtts-tokenizer@1): ${problem}`,
        {
          suggestions: [
            'the checkpoint or cache was written by another tool or version; retrain or ' +
              'clear the cache (xtts cache clear)',
          ],
        },
      );
    }
    return new Tokenizer(json);
  }

  toJSON(): TokenizerJSON {
    return {
      format: 'xtts-tokenizer@1',
      mode: this.mode,
      phonemizer: this.phonemizer,
      languages: [...this.languages],
      symbols: [...this.symbols],
    };
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

  /** The id of a language token, e.g. `[en]`. */
  languageId(language: string): number | undefined {
    return this.languageIds.get(language);
  }

  /** The id of one character (or IPA symbol); undefined when it is not in the vocabulary. */
  symbolId(symbol: string): number | undefined {
    return this.symbolIds.get(symbol);
  }

  /** What an id stands for: `<pad>`, `[en]`, or the symbol itself. */
  token(id: number): string | undefined {
    if (id < SPECIALS.length) return SPECIALS[id];
    if (id < SPECIALS.length + this.languages.length) return `[${this.languages[id - SPECIALS.length]}]`;
    return this.symbols[id - SPECIALS.length - this.languages.length];
  }

  /**
   * [<bos>, [lang], ...symbols, <eos>]. Symbols with no id become <unk> in `ids` and are listed in
   * `unmappable` (once each, in order of first appearance), so the caller can skip the row.
   */
  encode(text: string, language: string): Encoded {
    const lang = this.languageIds.get(language);
    if (lang === undefined) {
      throw new XttsError(
        'TOKENIZER_UNKNOWN_LANGUAGE',
        `language "${language}" is not one of the tokenizer's: ${this.languages.join(', ')}`,
        {
          suggestions: ['add it to text.languages and retrain, or pick one of those'],
        },
      );
    }
    const ids = new Int32Array(text.length + 3);
    ids[0] = BOS;
    ids[1] = lang;
    let n = 2;
    let unmappable: Map<string, number> | undefined;
    const table = this.bmpIds;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let id: number | undefined;
      let ch: string | undefined;
      if (c < 0xd800 || c > 0xdfff) {
        id = table[c];
        if (id === 0) ch = text[i];
      } else {
        const cp = text.codePointAt(i)!;
        ch = String.fromCodePoint(cp);
        if (cp > 0xffff) i++;
        id = this.symbolIds.get(ch) ?? 0;
      }
      if (id === 0) {
        unmappable ??= new Map();
        if (!unmappable.has(ch!)) unmappable.set(ch!, n - 2);
        id = UNK;
      }
      ids[n++] = id;
    }
    ids[n++] = EOS;
    // text.length counts UTF-16 units; astral characters are one symbol, so trim the spare slots.
    const out = n === ids.length ? ids : ids.slice(0, n);
    return unmappable
      ? { ids: out, unmappable: [...unmappable.keys()], unmappableAt: [...unmappable.values()] }
      : { ids: out, unmappable: [] };
  }

  /**
   * Symbols of the vocabulary that never occur in these token sequences (untrained embeddings, when they are the
   * training data).
   */
  unseenIn(sequences: Iterable<ArrayLike<number>>): string[] {
    const first = SPECIALS.length + this.languages.length;
    const seen = new Uint8Array(this.symbols.length);
    for (const ids of sequences) for (let i = 0; i < ids.length; i++) if (ids[i] >= first) seen[ids[i] - first] = 1;
    return this.symbols.filter((_, i) => seen[i] === 0);
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
