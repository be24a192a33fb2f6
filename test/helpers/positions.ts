// Checking a reported file:line:col against the file itself, so that a position is proven to point
// at the right text rather than only compared with a number.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface Position {
  file: string;
  line?: number;
  col?: number;
}

/**
 * The text of the file from `line:col` to the end of that line (`file` resolved against `cwd`), or
 * undefined when the position has no line/col or the file cannot be read.
 */
export function textAt(pos: Position | undefined, cwd = process.cwd()): string | undefined {
  if (!pos || pos.line === undefined || pos.col === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(resolve(cwd, pos.file), 'utf8');
  } catch {
    return undefined;
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const line = text.split(/\r?\n/)[pos.line - 1];
  return line === undefined ? undefined : line.slice(pos.col - 1);
}
