// One palette and one table style for every command, so that they all look and read alike.
import chalk from 'chalk';
import { table, getBorderCharacters } from 'table';

// NO_COLOR (no-color.org): a non-empty value turns colours and styles off, on a terminal too; chalk reads
// FORCE_COLOR but not NO_COLOR, and FORCE_COLOR still wins.
if (process.env.NO_COLOR && process.env.FORCE_COLOR === undefined) chalk.level = 0;

export const paint = {
  error: (s: string) => chalk.red.bold(s),
  warn: (s: string) => chalk.yellow.bold(s),
  info: (s: string) => chalk.cyan(s),
  ok: (s: string) => chalk.green(s),
  dim: (s: string) => chalk.dim(s),
  bold: (s: string) => chalk.bold(s),
  key: (s: string) => chalk.magenta(s),
  severity(sev: 'error' | 'warn' | 'info' | 'critical' | 'high' | 'medium' | 'low'): string {
    switch (sev) {
      case 'error':
      case 'critical':
        return chalk.red.bold(sev.toUpperCase());
      case 'warn':
      case 'high':
        return chalk.yellow.bold(sev.toUpperCase());
      default:
        return chalk.cyan(sev.toUpperCase());
    }
  },
};

export interface TableOptions {
  /** Column indexes aligned to the right (numbers). */
  right?: number[];
  /** Maximum width per column (wrapped beyond). */
  widths?: Record<number, number>;
}

/** A compact table: a bold header row, light borders, numbers right-aligned. */
/**
 * Characters of one unbroken word (an id, a path) a table cell shows at most: a 6,000-character row id made
 * 18,000-character lines. Prose wraps and is kept whole; --json keeps everything.
 */
const MAX_WORD = 240;
const LONG_WORD = new RegExp(`[^\\s\u001b]{${MAX_WORD + 1},}`, 'g');

function clipCell(c: string | number): string {
  return String(c).replace(LONG_WORD, (w) => `${w.slice(0, MAX_WORD - 1)}…`);
}

export function renderTable(header: string[], rows: (string | number)[][], options: TableOptions = {}): string {
  const data = [header.map((h) => chalk.bold(h)), ...rows.map((r) => r.map(clipCell))];
  const columns: Record<number, { alignment?: 'right' | 'left'; width?: number; wrapWord?: boolean }> = {};
  for (const i of options.right ?? []) columns[i] = { alignment: 'right' };
  for (const [i, w] of Object.entries(options.widths ?? {}))
    columns[Number(i)] = { ...columns[Number(i)], width: w, wrapWord: true };
  return table(data, {
    border: getBorderCharacters('norc'),
    columns,
    drawHorizontalLine: (i, size) => i === 0 || i === 1 || i === size,
  });
}
