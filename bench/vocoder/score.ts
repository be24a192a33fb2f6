// Vocoder quality without an ASR: every WAV of a reference folder against the file of the same name
// in each system's folder (a vocoder's resynthesis of it), scored by LSD, MCD, F0 RMSE and V/UV error
// (src/core/data/audio/quality.ts says what each measures). One row per system: median / mean.
//   node --import tsx bench/vocoder/score.ts REF_DIR NAME=DIR [NAME=DIR ...] [--json FILE] [--align time|dtw]
//     [--fmax HZ]
// e.g. Griffin-Lim's ceiling on some clips:
//   node --import tsx bench/intelligibility/vocode.ts clips/ /tmp/gl/
//   node --import tsx bench/vocoder/score.ts clips/ gl=/tmp/gl/ --json /tmp/gl-scores.json
// --align dtw is for a test that may not keep the reference's timing (a model's own output rather
// than a resynthesis); LSD stays time-aligned either way. --fmax HZ scores the band up to HZ only (LSD's
// bins, MCD's filterbank): the features' fmax_hz is as far as a vocoder's input mels reach.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compareAudio, type AudioAlignment, type AudioComparison } from '../../src/core/data/audio/quality.js';
import { resample } from '../../src/core/data/audio/resample.js';
import { decodeWav } from '../../src/core/data/audio/wav.js';
import { XttsError } from '../../src/core/errors.js';

const USAGE = 'usage: score.ts REF_DIR NAME=DIR [NAME=DIR ...] [--json FILE] [--align time|dtw] [--fmax HZ]';

/** The per-clip figures that are summarised (the F0 ones are null on clips with no frame voiced in both). */
const FIGURES = ['lsdDb', 'mcdDb', 'f0RmseHz', 'f0RmseCents', 'vuvError'] as const;
type Figure = (typeof FIGURES)[number];
type Summary = Record<Figure, number | null>;

export interface SystemScores {
  clips: number;
  median: Summary;
  mean: Summary;
  perClip: Record<string, AudioComparison>;
}

/** The --json payload: one entry per NAME. */
export type ScoreReport = Record<string, SystemScores>;

interface System {
  name: string;
  dir: string;
}

/** Scores every WAV of refDir that each system's folder also has. */
export function score(refDir: string, systems: System[], align: AudioAlignment, fmaxHz?: number): ScoreReport {
  const refFiles = readdirSync(refDir)
    .filter((f) => f.toLowerCase().endsWith('.wav'))
    .sort();
  const report: ScoreReport = {};
  for (const { name, dir } of systems) {
    const perClip: Record<string, AudioComparison> = {};
    for (const file of refFiles) {
      const testPath = join(dir, file);
      if (!existsSync(testPath)) continue;
      const refPath = join(refDir, file);
      const ref = decodeWav(readFileSync(refPath), refPath);
      const test = decodeWav(readFileSync(testPath), testPath);
      const testSamples = resample(test.samples, test.sampleRateHz, ref.sampleRateHz);
      perClip[file] = compareAudio(ref.samples, testSamples, ref.sampleRateHz, { align, fmaxHz });
    }
    const clips = Object.keys(perClip).length;
    if (clips === 0)
      throw new XttsError('BENCH_NO_CLIPS', `${name}: none of the ${refFiles.length} WAVs of ${refDir} is in ${dir}`, {
        suggestions: [`write the system's output for ${refDir}'s files into ${dir} under the same names`],
      });
    const results = Object.values(perClip);
    report[name] = {
      clips,
      median: summarise(results, median),
      mean: summarise(results, mean),
      perClip,
    };
  }
  return report;
}

function summarise(results: AudioComparison[], reduce: (xs: number[]) => number): Summary {
  const out = {} as Summary;
  for (const figure of FIGURES) {
    const xs = results.map((r) => r[figure]).filter((x): x is number => x !== null);
    out[figure] = xs.length > 0 ? reduce(xs) : null;
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The human table: one row per system, each figure as "median / mean". */
export function renderTable(report: ScoreReport, align: AudioAlignment, fmaxHz?: number): string {
  const columns: [string, Figure, number][] = [
    ['LSD dB', 'lsdDb', 2],
    ['MCD dB', 'mcdDb', 2],
    ['F0 RMSE Hz', 'f0RmseHz', 1],
    ['F0 RMSE cents', 'f0RmseCents', 0],
    ['V/UV err', 'vuvError', 3],
  ];
  const format = (x: number | null, digits: number) => (x === null ? '—' : x.toFixed(digits));
  const header = ['system', 'clips', ...columns.map(([title]) => title)];
  const rows = Object.entries(report).map(([name, s]) => [
    name,
    String(s.clips),
    ...columns.map(([, key, digits]) => `${format(s.median[key], digits)} / ${format(s.mean[key], digits)}`),
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) =>
    cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])));
  return [
    `median / mean over clips; MCD and F0 ${align === 'dtw' ? 'along a DTW path' : 'time-aligned'}, ` +
      'LSD time-aligned; ' +
      `LSD and MCD ${fmaxHz === undefined ? 'over the whole band' : `up to ${fmaxHz} Hz`}`,
    line(header).join('  '),
    ...rows.map((r) => line(r).join('  ')),
  ].join('\n');
}

function usageError(message: string): never {
  console.error(`error: ${message}\n${USAGE}`);
  process.exit(2);
}

function parseFlags(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'string' }, align: { type: 'string' }, fmax: { type: 'string' } },
    });
  } catch (e) {
    usageError((e as Error).message);
  }
}

interface CommandLine {
  refDir: string;
  systems: System[];
  json?: string;
  align: AudioAlignment;
  fmaxHz?: number;
}

function parseCommandLine(argv: string[]): CommandLine {
  const { positionals, values } = parseFlags(argv);
  const fmaxHz = values.fmax === undefined ? undefined : Number(values.fmax);
  if (fmaxHz !== undefined && !(fmaxHz > 0))
    usageError(`--fmax must be a frequency in Hz above 0 (got ${values.fmax})`);
  const align = values.align ?? 'time';
  if (align !== 'time' && align !== 'dtw') usageError(`--align must be time or dtw (got ${align})`);
  const [refDir, ...pairs] = positionals;
  if (!refDir || pairs.length === 0) usageError('give a reference folder and at least one NAME=DIR');
  const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
  if (!isDir(refDir)) usageError(`reference folder ${refDir} does not exist`);
  const systems = pairs.map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) usageError(`${pair} is not NAME=DIR`);
    return { name: pair.slice(0, eq), dir: pair.slice(eq + 1) };
  });
  for (const { name, dir } of systems) if (!isDir(dir)) usageError(`${name}: folder ${dir} does not exist`);
  const names = systems.map((s) => s.name);
  const repeated = names.find((n, i) => names.indexOf(n) !== i);
  if (repeated) usageError(`system name ${repeated} is given twice`);
  return { refDir, systems, json: values.json, align, fmaxHz };
}

function main(): void {
  const { refDir, systems, json, align, fmaxHz } = parseCommandLine(process.argv.slice(2));
  try {
    const report = score(refDir, systems, align, fmaxHz);
    console.log(renderTable(report, align, fmaxHz));
    if (json) writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  } catch (e) {
    if (!(e instanceof XttsError)) throw e;
    console.error(`error ${e.code}: ${e.message}`);
    for (const s of e.suggestions) console.error(`  try: ${s}`);
    process.exit(e.exitCode);
  }
}

main();
