// Rules on what the run reads: the dataset on disk, the features computed from it, and the model
// shapes those features and the length limits must fit.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  assignLanguages,
  buildManifest,
  type Manifest,
  PITCH_MIN_BANDS,
  pitchBands,
  refuseUnusable,
  type SkippedRow,
  skippedRowsWarning,
} from '../data/index.js';
import { XttsError } from '../errors.js';
import type { LoadedConfig } from './load.js';
import { at, type Draft, fired, type Rule, type RuleContext } from './rule-context.js';

export const datasetPathRule: Rule = {
  id: 'dataset/path',
  title: 'The dataset folder exists and is readable',
  severity: 'error',
  environment: true,
  rationale:
    'A run that fails to find its data after loading a model and a GPU wastes the ' +
    'allocation; check it before starting.',
  check(ctx) {
    const dir = ctx.loaded.datasetDir;
    const c = ctx.config.dataset;
    if (!existsSync(dir))
      return [
        at(
          ctx,
          'dataset.path',
          'error',
          `dataset folder not found: ${dir}`,
          'dataset:\n  path: /path/to/dataset   # the folder with metadata.csv and wavs/',
        ),
      ];
    if (!statSync(dir).isDirectory())
      return [
        at(
          ctx,
          'dataset.path',
          'error',
          `dataset.path is a file, not a folder: ${dir}`,
          'dataset:\n  path: <the folder that holds metadata.csv>',
        ),
      ];
    const metadataFiles = [
      ['dataset.metadata', c.metadata],
      ['dataset.validation_metadata', c.validation_metadata],
    ] as const;
    return metadataFiles.flatMap(([key, name]) => {
      if (name === null) return [];
      const file = join(dir, name);
      if (!existsSync(file))
        return [
          at(
            ctx,
            key,
            'error',
            `metadata file not found: ${file}`,
            `${key.split('.')[1]}: <file name inside ${c.path}>`,
          ),
        ];
      return readable(file)
        ? []
        : [at(ctx, key, 'error', `metadata file is not readable: ${file}`, `chmod a+r ${file}`)];
    });
  },
};

export const datasetRowsRule: Rule = {
  id: 'dataset/rows',
  title: "The metadata's rows can be trained on",
  severity: 'error',
  environment: true,
  rationale:
    'A run reads its metadata after the model and the GPU are set up: rows it cannot use (a line that is not ' +
    'UTF-8 or lacks a column, a clip that is missing, an id used twice, a language the model does not learn) ' +
    'are skipped then, and a metadata file none of whose rows is usable stops it. The rows are read here as ' +
    'the run reads them, clips not decoded (analyze-data-pipeline decodes them).',
  check(ctx) {
    const read = readTrainingRows(ctx.loaded);
    if (!read) return [];
    if ('error' in read)
      return [rowsFinding(ctx, 'error', read.error.message, read.error.suggestions[0], read.error.position)];
    const { skipped, trainRows, rows } = read;
    const warning = skippedRowsWarning(skipped);
    if (!warning) return [];
    return [
      rowsFinding(
        ctx,
        'warn',
        `${trainRows} of the ${rows} rows will train; ${warning}`,
        'fix or remove those rows (docs/datasets.md); train skips them and --strict refuses the dataset',
        firstPosition(skipped),
      ),
    ];
  },
};

/** The metadata's rows as a run reads them: how many train, how many in all, those skipped; or why none can. */
type TrainingRows = { trainRows: number; rows: number; skipped: SkippedRow[] } | { error: XttsError };

const rowsRead = new WeakMap<LoadedConfig, TrainingRows | undefined>();

/**
 * The dataset's rows read as the run reads them (clips not decoded), once per loaded config (dataset/rows and the
 * memory estimate both read them); undefined where its folder or metadata is missing (dataset/path says so).
 */
export function readTrainingRows(loaded: LoadedConfig): TrainingRows | undefined {
  if (rowsRead.has(loaded)) return rowsRead.get(loaded);
  const read = readRows(loaded);
  rowsRead.set(loaded, read);
  return read;
}

function readRows(loaded: LoadedConfig): TrainingRows | undefined {
  const dir = loaded.datasetDir;
  const { config } = loaded;
  const c = config.dataset;
  const metadataMissing = [c.metadata, c.validation_metadata].some((m) => m !== null && !readable(join(dir, m)));
  if (!existsSync(dir) || !statSync(dir).isDirectory() || metadataMissing) return undefined;
  let manifest: Manifest;
  try {
    manifest = buildManifest(dir, c);
  } catch (e) {
    if (!(e instanceof XttsError)) throw e;
    return { error: e };
  }
  const skipped = [...manifest.skipped];
  const trainRows =
    config.task === 'vocoder'
      ? manifest.train.length
      : assignLanguages(manifest, config, (row, reason, detail) =>
          skipped.push({ file: row.file, line: row.line, id: row.id, reason, detail }),
        ).filter((r) => r.split === 'train').length;
  skipped.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  try {
    refuseUnusable(skipped, trainRows, dir, false);
  } catch (e) {
    if (!(e instanceof XttsError)) throw e;
    return { error: e };
  }
  return { trainRows, rows: manifest.train.length + manifest.validation.length + manifest.skipped.length, skipped };
}

/** A finding at the start of the metadata row it names (`position`), else at dataset.metadata in the config. */
function rowsFinding(
  ctx: RuleContext,
  severity: Draft['severity'],
  message: string,
  fix: string | undefined,
  position: Draft['position'],
): Draft {
  const draft = at(ctx, 'dataset.metadata', severity, message, fix);
  return position?.line !== undefined ? { ...draft, position: { col: 1, ...position } } : draft;
}

function firstPosition(skipped: readonly SkippedRow[]): Draft['position'] {
  const first = skipped[0];
  return first && { file: first.file, line: first.line, rowId: first.id };
}

/** Whether this process may read the file. */
function readable(file: string): boolean {
  try {
    accessSync(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

export const audioConsistencyRule: Rule = {
  id: 'audio/consistency',
  title: 'STFT and mel settings are consistent',
  severity: 'error',
  rationale:
    'A window longer than the FFT, a mel range above Nyquist or a hop longer than ' +
    'the window produce features that silently lose information.',
  check(ctx) {
    const a = ctx.config.audio;
    return fired([
      (a.n_fft & (a.n_fft - 1)) !== 0 &&
        at(
          ctx,
          'audio.n_fft',
          'error',
          `n_fft ${a.n_fft} is not a power of two (the FFT needs one)`,
          `n_fft: ${2 ** Math.round(Math.log2(a.n_fft))}`,
        ),
      a.win_length > a.n_fft &&
        at(
          ctx,
          'audio.win_length',
          'error',
          `win_length ${a.win_length} is longer than n_fft ${a.n_fft}`,
          `win_length: ${a.n_fft}`,
        ),
      a.hop_length > a.win_length &&
        at(
          ctx,
          'audio.hop_length',
          'warn',
          `hop_length ${a.hop_length} is longer than win_length ${a.win_length}: samples ` +
            `between windows are never seen`,
          `hop_length: ${Math.floor(a.win_length / 4)}`,
        ),
      a.fmax_hz > a.sample_rate_hz / 2 &&
        at(
          ctx,
          'audio.fmax_hz',
          'error',
          `fmax_hz ${a.fmax_hz} is above Nyquist (${a.sample_rate_hz / 2} Hz for ${a.sample_rate_hz} Hz audio)`,
          `fmax_hz: ${a.sample_rate_hz / 2}`,
        ),
      a.fmin_hz >= a.fmax_hz &&
        at(ctx, 'audio.fmin_hz', 'error', `fmin_hz ${a.fmin_hz} is not below fmax_hz ${a.fmax_hz}`, 'fmin_hz: 0'),
    ]);
  },
};

export const modelShapeRule: Rule = {
  id: 'model/shape',
  tasks: ['acoustic'],
  title: 'Model dimensions fit together',
  severity: 'error',
  rationale:
    'Heads must divide the model width; the positional tables must cover the longest ' +
    'sequences the limits admit, or long utterances fail mid-run; model.speaker_pitch and pitch_contour read a ' +
    'pitch from mel ' +
    "bands a voice's first harmonics fall in, and a mel without enough of them would tell the model nothing.",
  check(ctx) {
    const { model: m, limits, audio: a } = ctx.config;
    const frames = Math.ceil((limits.max_audio_s * a.sample_rate_hz) / a.hop_length) + 1;
    const pitchKey = m.speaker_pitch ? 'speaker_pitch' : m.pitch_contour ? 'pitch_contour' : undefined;
    const pitchBandCount = pitchKey ? pitchBands(a).length : PITCH_MIN_BANDS;
    return fired([
      pitchBandCount < PITCH_MIN_BANDS &&
        at(
          ctx,
          `model.${pitchKey}`,
          'error',
          `audio's ${a.n_mels} mel bands from ${a.fmin_hz} to ${a.fmax_hz} Hz have ${pitchBandCount} centred within ` +
            `50-1000 Hz; ${pitchKey} reads a voice's pitch from at least ${PITCH_MIN_BANDS} there`,
          `${pitchKey}: false (or audio.n_mels: 80 with fmin_hz: 0)`,
        ),
      m.d_model % m.heads !== 0 &&
        at(
          ctx,
          'model.heads',
          'error',
          `heads ${m.heads} does not divide d_model ${m.d_model}`,
          `heads: ${dividingHeads(m.d_model, m.heads)}`,
        ),
      m.alignment_heads > m.heads &&
        at(
          ctx,
          'model.alignment_heads',
          'error',
          `alignment_heads ${m.alignment_heads} is more than heads ${m.heads}`,
          `alignment_heads: ${Math.max(1, Math.floor(m.heads / 2))}`,
        ),
      m.postnet_kernel % 2 === 0 &&
        at(
          ctx,
          'model.postnet_kernel',
          'error',
          `postnet_kernel ${m.postnet_kernel} must be odd to keep frames aligned`,
          `postnet_kernel: ${m.postnet_kernel + 1}`,
        ),
      frames > m.max_mel_frames &&
        at(
          ctx,
          'model.max_mel_frames',
          'error',
          `limits.max_audio_s ${limits.max_audio_s} s is ${frames} frames, more ` +
            `than model.max_mel_frames ${m.max_mel_frames}`,
          `max_mel_frames: ${2 ** Math.ceil(Math.log2(frames))}`,
        ),
      limits.max_text_chars + 3 > m.max_text_tokens &&
        at(
          ctx,
          'model.max_text_tokens',
          'error',
          `limits.max_text_chars ${limits.max_text_chars} (+3 special tokens) ` +
            `exceeds model.max_text_tokens ${m.max_text_tokens}`,
          `max_text_tokens: ${2 ** Math.ceil(Math.log2(limits.max_text_chars + 3))}`,
        ),
      limits.min_audio_s >= limits.max_audio_s &&
        at(
          ctx,
          'limits.min_audio_s',
          'error',
          'limits.min_audio_s is not below limits.max_audio_s: every row would be skipped',
          'min_audio_s: 0.3',
        ),
    ]);
  },
};

/** The most heads (a power of two, no more than asked) that divide the model width. */
function dividingHeads(dModel: number, heads: number): number {
  return [16, 8, 4, 2, 1].find((h) => dModel % h === 0 && h <= heads) ?? 1;
}
