// Preparing a dataset: manifest -> languages -> text (cleaned, cached) -> tokenizer -> tokens
// (cached) -> features (cached, worker pool) -> length limits -> per-bin statistics (cached). Every
// unusable row is reported with its file, line, id and reason; all usable rows are kept.
import { availableParallelism } from 'node:os';
import { contentKey, FeatureCache } from '../cache/index.js';
import type { LoadedConfig } from '../config/index.js';
import { effectiveWorkers } from '../config/index.js';
import type { XttsConfig } from '../config/index.js';
import { ExitCode, XttsError } from '../errors.js';
import { MelStats } from './audio/stats.js';
import { type FeatureInfo, type FeatureProgress, prepareFeatures, type SourceNote } from './features.js';
import { noteSource, type SourceNotes } from './source-notes.js';
import { buildManifest, type Manifest, type ManifestRow, type SkippedRow, type SkipReason } from './manifest.js';
import { cleanText, hasSpeech } from './text/cleaners.js';
import { textIdentity } from './text/frontend.js';
import { detectLanguage, languageFromFilename } from './text/language.js';
import { Phonemizer } from './text/phonemizer.js';
import { baseSymbols, foreignLetterShare } from './text/alphabets.js';
import { Tokenizer, type TokenizerJSON } from './text/tokenizer.js';

export interface PreparedItem {
  id: string;
  file: string;
  line: number;
  speaker: number;
  language: number;
  tokens: Int32Array;
  featureKey: string;
  frames: number;
  durationS: number;
  /** The WAV file the features came from. */
  audioPath: string;
}

export interface PreparedDataset {
  train: PreparedItem[];
  validation: PreparedItem[];
  skipped: SkippedRow[];
  tokenizer: Tokenizer;
  speakers: string[];
  languages: string[];
  stats: { mean: Float32Array; std: Float32Array; frames: number };
  manifest: Manifest;
  /** Clips whose recordings lack what the model's audio has: recorded below its rate, in 8-bit PCM, or 40 dB down. */
  sourceNotes: SourceNotes;
  /** Usable rows written mostly in letters their language's alphabet lacks (foreignText), with the first. */
  foreignText?: { rows: number; language: string; example: string; text: string };
  cachePath: string;
  /** Milliseconds per stage, and how much came from the cache. */
  timings: {
    manifestMs: number;
    textMs: number;
    tokensMs: number;
    featuresMs: number;
    statsMs: number;
    totalMs: number;
  };
  cacheUse: {
    texts: { computed: number; cached: number };
    tokens: { computed: number; cached: number };
    features: { computed: number; cached: number };
  };
}

function summariseNotes(items: readonly PreparedItem[], notes: ReadonlyMap<string, SourceNote>, modelHz: number) {
  const out: SourceNotes = {};
  for (const item of items) {
    const note = notes.get(item.featureKey);
    if (note) noteSource(out, note, item.audioPath, modelHz);
  }
  return out;
}

export type PrepareProgress = { stage: 'text' | 'features'; done: number; total: number; elapsedMs: number };

export interface PrepareOptions {
  /** Override the dataset folder (`--dataset DIR`). */
  datasetDir?: string;
  /** Override the cache file (analysis uses a scratch cache for cold measurements). */
  cachePath?: string;
  /** Any skipped row is an error. */
  strict?: boolean;
  onProgress?: (p: PrepareProgress) => void;
}

/** Where each row's language comes from (dataset.language_source). */
function rowLanguage(row: ManifestRow, config: XttsConfig): string {
  if (row.language) return row.language;
  switch (config.dataset.language_source) {
    case 'filename':
      return languageFromFilename(row.audioPath) ?? config.dataset.language;
    case 'detect':
      return detectLanguage(row.text, config.text.languages).language;
    default:
      return config.dataset.language;
  }
}

export interface TextRow {
  row: ManifestRow;
  language: string;
}

/**
 * Cleaned (and, in phonemes mode, phonemized) text of every row, from the cache where it is there,
 * computed and written in batches where it is not.
 */
export async function prepareTexts(
  rows: readonly TextRow[],
  config: XttsConfig,
  cache: FeatureCache,
  phonemizer: Phonemizer | undefined,
  onProgress?: (done: number) => void,
): Promise<{ cleaned: Map<string, { key: string; text: string }>; cached: number }> {
  const ident = textIdentity(config.text, phonemizer);
  const cleaned = new Map<string, { key: string; text: string }>();
  const newTexts: { key: string; cleaned: string }[] = [];
  let cached = 0;
  let done = 0;
  for (const r of rows) {
    const key = contentKey('text', { text: r.row.text, language: r.language, ...ident });
    let text = cache.getText(key);
    if (text === undefined) {
      text = cleanText(r.row.text, config.text, r.language);
      if (phonemizer) text = await phonemizer.phonemize(text, r.language);
      newTexts.push({ key, cleaned: text });
      if (newTexts.length >= 512) cache.putMany({ texts: newTexts.splice(0) });
    } else cached++;
    cleaned.set(r.row.id, { key, text });
    if (++done % 256 === 0) onProgress?.(done);
  }
  cache.putMany({ texts: newTexts });
  return { cleaned, cached };
}

/** Each usable row's language, or a skip when it is not one of text.languages. */
export function assignLanguages(
  manifest: Manifest,
  config: XttsConfig,
  skip: (row: ManifestRow, reason: SkipReason, detail: string) => void,
): (TextRow & { split: 'train' | 'validation' })[] {
  const rows: (TextRow & { split: 'train' | 'validation' })[] = [];
  for (const [split, list] of [
    ['train', manifest.train],
    ['validation', manifest.validation],
  ] as const) {
    for (const row of list) {
      const language = rowLanguage(row, config);
      if (!config.text.languages.includes(language))
        skip(
          row,
          'unknown_language',
          `language "${language}" is not in text.languages (${config.text.languages.join(', ')})`,
        );
      else rows.push({ row, split, language });
    }
  }
  return rows;
}

/**
 * Rows more than half of whose letters their language's alphabet lacks: a sentence in another language or script
 * given the dataset's one language (dataset.language), which the model would learn as that language.
 */
function foreignText(rows: readonly TextRow[]): PreparedDataset['foreignText'] {
  const foreign = rows.filter((r) => (foreignLetterShare(r.row.text, r.language) ?? 0) > 0.5);
  if (foreign.length === 0) return undefined;
  const { row, language } = foreign[0];
  const text = [...row.text].length > 40 ? `${[...row.text].slice(0, 40).join('')}…` : row.text;
  return { rows: foreign.length, language, example: `${row.file}:${row.line} (${row.id})`, text };
}

export async function prepareDataset(loaded: LoadedConfig, options: PrepareOptions = {}): Promise<PreparedDataset> {
  const config = loaded.config;
  const t0 = performance.now();
  const manifest = buildManifest(options.datasetDir ?? loaded.datasetDir, config.dataset);
  const manifestMs = performance.now() - t0;
  const skipped: SkippedRow[] = [...manifest.skipped];
  const skip = (row: ManifestRow, reason: SkipReason, detail: string) =>
    skipped.push({ file: row.file, line: row.line, id: row.id, reason, detail });
  const cachePath = options.cachePath ?? loaded.cachePath;
  const cache = FeatureCache.open(cachePath);
  const phonemizer = config.text.tokenizer === 'phonemes' ? new Phonemizer(config.text.phonemizer_command) : undefined;
  try {
    const rows = assignLanguages(manifest, config, skip);

    // Text: cleaned (and phonemized) text, keyed by everything that decides it.
    const t1 = performance.now();
    const { cleaned, cached: textsCached } = await prepareTexts(rows, config, cache, phonemizer, (done) =>
      options.onProgress?.({ stage: 'text', done, total: rows.length, elapsedMs: performance.now() - t1 }),
    );
    const textMs = performance.now() - t1;

    // Tokenizer from the languages' alphabets and the training texts that pass the length limits,
    // then tokens per row.
    const t2 = performance.now();
    const lim = config.limits;
    const usable = rows.filter((r) => {
      const text = cleaned.get(r.row.id)!.text;
      const n = [...text].length;
      // Punctuation alone ("...!!!?") is no sentence to learn from, however long.
      if (!hasSpeech(text))
        skip(r.row, 'empty_text', `nothing to speak: "${text}" has no letter or digit after cleaning`);
      else if (n < lim.min_text_chars)
        skip(r.row, 'text_too_short', `${n} characters after cleaning; limits.min_text_chars is ${lim.min_text_chars}`);
      else if (n > lim.max_text_chars)
        skip(r.row, 'text_too_long', `${n} characters after cleaning; limits.max_text_chars is ${lim.max_text_chars}`);
      else return true;
      return false;
    });
    const tokenizer = Tokenizer.fromTexts(
      usable.filter((r) => r.split === 'train').map((r) => cleaned.get(r.row.id)!.text),
      config.text.languages,
      config.text.tokenizer,
      phonemizer?.identity ?? null,
      baseSymbols(config.text, config.text.languages),
    );
    cache.putBlob(`tokenizer:${tokenizer.identity()}`, 'tokenizer', JSON.stringify(tokenizer.toJSON()));
    const { withTokens, tokens, cached: tokensCached } = encodeRows(usable, cleaned, tokenizer, cache, skip);
    const tokensMs = performance.now() - t2;

    // Features.
    const t3 = performance.now();
    const workers = effectiveWorkers(config, availableParallelism());
    const feats = await prepareFeatures({
      cache,
      rows: withTokens.map((r) => r.row),
      audio: config.audio,
      workers,
      onProgress: (p: FeatureProgress) =>
        options.onProgress?.({ stage: 'features', done: p.done, total: p.total, elapsedMs: p.elapsedMs }),
    });
    for (const f of feats.failures) skip(f.row, f.reason, f.message);
    const featuresMs = performance.now() - t3;

    // Audio length limits, speakers and languages as indices.
    const speakers = [...new Set(withTokens.map((r) => r.row.speaker))].sort();
    const { train, validation } = preparedItems(withTokens, tokens, feats.features, speakers, config, skip);
    // In line order, as reported: the checks skip rows in passes (columns, audio files, texts), and the first named
    // is the first in the file.
    skipped.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
    refuseUnusable(skipped, train.length, manifest.datasetDir, options.strict === true);

    const kept = new Set([...train, ...validation].map((item) => item.id));
    const t4 = performance.now();
    const stats = trainingStats(cache, train, config.audio.n_mels);
    const statsMs = performance.now() - t4;
    return {
      train,
      validation,
      skipped,
      tokenizer,
      speakers,
      languages: [...config.text.languages],
      stats,
      manifest,
      sourceNotes: summariseNotes([...train, ...validation], feats.notes, config.audio.sample_rate_hz),
      foreignText: foreignText(withTokens.filter((r) => kept.has(r.row.id))),
      cachePath,
      timings: { manifestMs, textMs, tokensMs, featuresMs, statsMs, totalMs: performance.now() - t0 },
      cacheUse: {
        texts: { computed: rows.length - textsCached, cached: textsCached },
        tokens: { computed: usable.length - tokensCached, cached: tokensCached },
        features: { computed: feats.computed, cached: feats.fromCache },
      },
    };
  } finally {
    phonemizer?.close();
    cache.close();
  }
}

/**
 * The rows with tokens and features as items of the training and validation sets: audio length
 * limits applied, speakers and languages as indices.
 */
function preparedItems(
  withTokens: readonly (TextRow & { split: 'train' | 'validation' })[],
  tokens: Map<string, Int32Array>,
  features: Map<string, FeatureInfo>,
  speakers: readonly string[],
  config: XttsConfig,
  skip: (row: ManifestRow, reason: SkipReason, detail: string) => void,
): { train: PreparedItem[]; validation: PreparedItem[] } {
  const lim = config.limits;
  const train: PreparedItem[] = [];
  const validation: PreparedItem[] = [];
  for (const r of withTokens) {
    const f = features.get(r.row.id);
    if (!f) continue;
    if (f.durationS < lim.min_audio_s) {
      skip(
        r.row,
        'audio_too_short',
        `${f.durationS.toFixed(2)} s after trimming; limits.min_audio_s is ${lim.min_audio_s}`,
      );
      continue;
    }
    if (f.durationS > lim.max_audio_s) {
      skip(
        r.row,
        'audio_too_long',
        `${f.durationS.toFixed(2)} s after trimming; limits.max_audio_s is ${lim.max_audio_s}`,
      );
      continue;
    }
    const item: PreparedItem = {
      id: r.row.id,
      file: r.row.file,
      line: r.row.line,
      speaker: speakers.indexOf(r.row.speaker),
      language: config.text.languages.indexOf(r.language),
      tokens: tokens.get(r.row.id)!,
      featureKey: f.featureKey,
      frames: f.frames,
      durationS: f.durationS,
      audioPath: r.row.audioPath,
    };
    (r.split === 'train' ? train : validation).push(item);
  }
  return { train, validation };
}

/**
 * Refuses a dataset with skipped rows under --strict (naming the first of `skipped`, which callers sort into line
 * order), or with no training rows left.
 */
export function refuseUnusable(
  skipped: readonly SkippedRow[],
  trainRows: number,
  datasetDir: string,
  strict: boolean,
): void {
  const first = skipped[0];
  if (strict && first) {
    throw new XttsError(
      'DATASET_ROWS_SKIPPED',
      `${skipped.length} row${skipped.length === 1 ? '' : 's'} cannot be used ` +
        `(--strict); first: ${first.file}:${first.line} (${first.id}): ${first.reason} ` +
        `— ${first.detail}`,
      {
        position: { file: first.file, line: first.line, rowId: first.id },
        suggestions: ['fix or remove those rows, or run without --strict to skip them'],
      },
    );
  }
  if (trainRows === 0) {
    // Every row is gone: say why here (a command that reads the dataset would stop at the same point).
    const reasons = new Map<string, number>();
    for (const r of skipped) reasons.set(r.reason, (reasons.get(r.reason) ?? 0) + 1);
    throw new XttsError(
      'DATASET_EMPTY',
      `no usable training rows in ${datasetDir}` +
        (first
          ? ` (${skipped.length} skipped: ${[...reasons].map(([r, n]) => `${n} ${r}`).join(', ')}); first: ` +
            `${first.file}:${first.line} (${first.id}): ${first.reason} — ${first.detail}`
          : ''),
      {
        exitCode: ExitCode.usage,
        ...(first ? { position: { file: first.file, line: first.line, rowId: first.id } } : {}),
        suggestions: [
          first
            ? 'fix those rows (docs/datasets.md says which layouts, files and texts xtts reads), or point ' +
              '--dataset at another folder'
            : 'add rows to the metadata file, or lower dataset.validation_fraction if they all went to validation',
        ],
      },
    );
  }
}

/**
 * Tokens of each usable row (cached under its text and the tokenizer); rows with characters the tokenizer lacks are
 * skipped.
 */
function encodeRows<R extends { row: ManifestRow; language: string }>(
  usable: readonly R[],
  cleaned: Map<string, { text: string; key: string }>,
  tokenizer: Tokenizer,
  cache: FeatureCache,
  skip: (row: ManifestRow, reason: SkipReason, detail: string) => void,
): { withTokens: R[]; tokens: Map<string, Int32Array>; cached: number } {
  const tokens = new Map<string, Int32Array>();
  const newTokens: { key: string; ids: Int32Array; unmappable: string[] }[] = [];
  let cached = 0;
  const withTokens = usable.filter((r) => {
    const c = cleaned.get(r.row.id)!;
    const key = contentKey('tokens', { text: c.key, tokenizer: tokenizer.identity() });
    let entry = cache.getTokens(key);
    if (!entry) {
      entry = tokenizer.encode(c.text, r.language);
      newTokens.push({ key, ...entry });
    } else cached++;
    if (entry.unmappable.length) {
      skip(
        r.row,
        'unmappable_characters',
        `characters not in the training vocabulary: ${entry.unmappable.map((ch) => JSON.stringify(ch)).join(' ')}`,
      );
      return false;
    }
    tokens.set(r.row.id, entry.ids);
    return true;
  });
  cache.putMany({ tokens: newTokens });
  return { withTokens, tokens, cached };
}

/** Per-bin statistics of the training features, cached under the set of their feature keys. */
function trainingStats(cache: FeatureCache, train: readonly PreparedItem[], nMels: number): PreparedDataset['stats'] {
  const statsKey = contentKey('stats', { features: train.map((i) => i.featureKey).sort() });
  const blob = cache.getBlob(statsKey);
  if (blob) {
    const all = new Float32Array(new Uint8Array(blob).slice().buffer);
    const bins = (all.length - 1) / 2;
    return { mean: all.slice(0, bins), std: all.slice(bins, 2 * bins), frames: all[2 * bins] };
  }
  const acc = new MelStats(nMels);
  for (const item of train) {
    const f = cache.getFeature(item.featureKey)!;
    acc.add(f.mel, f.frames);
  }
  const r = acc.finalize();
  const packed = new Float32Array(2 * r.mean.length + 1);
  packed.set(r.mean);
  packed.set(r.std, r.mean.length);
  packed[2 * r.mean.length] = r.frames;
  cache.putBlob(statsKey, 'stats', Buffer.from(packed.buffer));
  return r;
}

export type { TokenizerJSON };

/** The loader's view of prepared items: what a batch is made from. */
export function loaderItems(items: readonly PreparedItem[]) {
  return items.map((i) => ({
    featureKey: i.featureKey,
    frames: i.frames,
    tokens: i.tokens,
    language: i.language,
    speaker: i.speaker,
    audioPath: i.audioPath,
  }));
}
