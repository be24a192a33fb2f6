// A text longer than the model reads at once (model.max_text_tokens), spoken in pieces: split at its sentences
// (and, for a sentence still too long, at its clauses), each piece as many whole sentences as fit. synthesize speaks
// the pieces in turn and joins their audio into one WAV, and says where each symbol's predicted duration put it.

/** A piece of text as the model reads it: its token ids and the text as read (cleaned, phonemized). */
export interface EncodedPiece {
  ids: Int32Array;
  text: string;
}

/** encodeText's answer: the piece, or why it cannot be spoken (`tooLong`: only because of its length). */
export type PieceEncoding = EncodedPiece | { reason: string; tooLong?: boolean };

// A sentence ends at . ! ? … ; or : before space; a clause at , or a dash before space. The mark stays with the text
// before it.
const SENTENCE_END = /(?<=[.!?…;:]["'”’)\]]*)\s+/u;
const CLAUSE_END = /(?<=[,—–])\s+/u;
const SPEECH = /[\p{L}\p{N}]/u;

/** `text` cut at `boundary`; a part with nothing to say (punctuation alone) stays with the part before it. */
export function splitAt(text: string, boundary: RegExp): string[] {
  const parts: string[] = [];
  for (const part of text.trim().split(boundary)) {
    if (part === '') continue;
    if (parts.length > 0 && !SPEECH.test(part)) parts[parts.length - 1] += ` ${part}`;
    else parts.push(part);
  }
  return parts;
}

/**
 * `text` in as few pieces of whole sentences (in order) as `encode` takes each of; a sentence too long alone is cut
 * at its clauses the same way. Where a piece cannot be encoded for another reason than its length (a symbol
 * without a token), or a clause alone is still too long, that reason.
 */
export async function encodeInPieces(
  text: string,
  encode: (piece: string) => Promise<PieceEncoding>,
): Promise<{ pieces: EncodedPiece[] } | { reason: string }> {
  const pieces: EncodedPiece[] = [];
  const fill = async (parts: string[], inner?: RegExp): Promise<string | undefined> => {
    let current: { text: string; encoded: EncodedPiece } | undefined;
    for (const part of parts) {
      if (current) {
        const joined = `${current.text} ${part}`;
        const both = await encode(joined);
        if ('ids' in both) {
          current = { text: joined, encoded: both };
          continue;
        }
        if (!both.tooLong) return both.reason;
        pieces.push(current.encoded);
        current = undefined;
      }
      const alone = await encode(part);
      if ('ids' in alone) {
        current = { text: part, encoded: alone };
        continue;
      }
      if (!alone.tooLong) return alone.reason;
      const smaller = inner ? splitAt(part, inner) : [part];
      if (smaller.length < 2) return `${alone.reason} (one sentence or clause without a break to split it at)`;
      const why = await fill(smaller);
      if (why) return why;
    }
    if (current) pieces.push(current.encoded);
    return undefined;
  };
  const why = await fill(splitAt(text, SENTENCE_END), CLAUSE_END);
  return why ? { reason: why } : { pieces };
}

/** A symbol of a spoken text and where its predicted duration put it in the WAV, in seconds. */
export interface SymbolTiming {
  symbol: string;
  startS: number;
  durationS: number;
}

/**
 * Each symbol with its frames' place in seconds (millisecond precision), frame f at f · frameS (a centred STFT's
 * frame centre), none past `lengthS` (the audio's length); those given no frame, or none inside the audio, are left
 * out. Symbols tile: one starts where the one before it ends.
 */
export function symbolTimings(
  symbols: readonly string[],
  frames: Int32Array,
  frameS: number,
  lengthS: number,
): SymbolTiming[] {
  const out: SymbolTiming[] = [];
  let at = 0;
  for (const [j, symbol] of symbols.entries()) {
    const startS = round3(Math.min(at * frameS, lengthS));
    at += frames[j];
    const durationS = round3(round3(Math.min(at * frameS, lengthS)) - startS);
    if (durationS > 0) out.push({ symbol, startS, durationS });
  }
  return out;
}

export const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Silence between the pieces of a text spoken in pieces, a sentence's pause. */
export const PIECE_GAP_S = 0.2;

/** The pieces' samples one after another, `gap` samples of silence between them. */
export function joinPieces(pieces: Float32Array[], gap: number): Float32Array {
  if (pieces.length === 1) return pieces[0];
  const out = new Float32Array(pieces.reduce((n, p) => n + p.length, 0) + gap * (pieces.length - 1));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length + gap;
  }
  return out;
}
