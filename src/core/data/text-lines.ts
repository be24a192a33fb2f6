// Text files read line by line, each line decoded on its own: a line in another encoding costs that line (named, with
// how it reads as Latin-1), not the file; a file in UTF-16 is refused whole, with the command that converts it.
import { readFileSync } from 'node:fs';
import { XttsError } from '../errors.js';

/**
 * Index of the first byte of `b` that breaks UTF-8 (a bad lead, a missing continuation, an overlong or surrogate form),
 * or b.length.
 */
function firstInvalidUtf8(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i];
    const n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n === 0) return i;
    for (let k = 1; k < n; k++) {
      const x = b[i + k];
      // The second byte's range is narrower after E0, ED, F0 and F4 (no overlong forms, surrogates, or > U+10FFFF).
      const lo = k === 1 && c === 0xe0 ? 0xa0 : k === 1 && c === 0xf0 ? 0x90 : 0x80;
      const hi = k === 1 && c === 0xed ? 0x9f : k === 1 && c === 0xf4 ? 0x8f : 0xbf;
      if (x === undefined || x < lo || x > hi) return i;
    }
    i += n;
  }
  return b.length;
}

/**
 * A text file's lines, decoded one by one: a line in another encoding costs that line (reported with
 * the first byte that is not UTF-8 and how it reads as Latin-1), not the file. A UTF-8 byte-order
 * mark is dropped; CRLF and LF both end lines, and CR alone in a file with no LF.
 */
export function readLines(file: string): ReturnType<typeof splitLines> {
  const bytes = readFileSync(file);
  const utf16 = utf16Encoding(bytes);
  if (utf16) {
    throw new XttsError('DATASET_METADATA_NOT_UTF8', `${file} is ${utf16} text, not UTF-8`, {
      position: { file },
      suggestions: [
        `convert it, e.g. iconv -f UTF-16 -t UTF-8 ${file} > ${file}.utf8 && mv ${file}.utf8 ${file} ` +
          '(Windows editors save "Unicode" text as UTF-16)',
      ],
    });
  }
  return splitLines(bytes);
}

/**
 * 'UTF-16LE' or 'UTF-16BE' where `bytes` are UTF-16 text: a UTF-16 byte-order mark, or, without one, NUL bytes
 * at every other place of the first 64 byte pairs where the others are not (ASCII written as UTF-16); else null.
 */
export function utf16Encoding(bytes: Uint8Array): 'UTF-16LE' | 'UTF-16BE' | null {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'UTF-16LE';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'UTF-16BE';
  const pairs = Math.min(64, bytes.length >> 1);
  if (pairs < 2) return null;
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i < pairs; i++) {
    if (bytes[2 * i] === 0) evenNul++;
    if (bytes[2 * i + 1] === 0) oddNul++;
  }
  if (oddNul === pairs && evenNul === 0) return 'UTF-16LE';
  if (evenNul === pairs && oddNul === 0) return 'UTF-16BE';
  return null;
}

/** `readLines` of bytes already read (a pipe can be read only once). */
export function splitLines(data: Uint8Array): {
  lines: string[];
  notUtf8: Map<number, { at: number; asLatin1: string }>;
} {
  let bytes = data;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  // Classic Mac OS line ends (CR alone: Excel's "CSV (Macintosh)") where the file has no LF at all.
  const eol = bytes.includes(0x0a) || !bytes.includes(0x0d) ? 0x0a : 0x0d;
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const lines: string[] = [];
  const notUtf8 = new Map<number, { at: number; asLatin1: string }>();
  for (let start = 0; start <= bytes.length; ) {
    let end = bytes.indexOf(eol, start);
    if (end < 0) end = bytes.length;
    const raw = bytes.subarray(start, eol === 0x0a && end > start && bytes[end - 1] === 0x0d ? end - 1 : end);
    try {
      lines.push(utf8.decode(raw));
    } catch {
      const at = firstInvalidUtf8(raw);
      notUtf8.set(lines.length, { at, asLatin1: new TextDecoder('latin1').decode(raw) });
      lines.push('');
    }
    start = end + 1;
  }
  return { lines, notUtf8 };
}
