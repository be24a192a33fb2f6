// The schemas of the data sections: where the utterances are, how their audio becomes features, how
// their text is read, and which lengths are usable.
import { Type } from '@sinclair/typebox';
import { Enum, Section } from './schema-parts.js';

export const CLEANERS = ['english', 'multilingual', 'basic'] as const;

export const DatasetSchema = Section(
  {
    path: Type.String({
      minLength: 1,
      description:
        'Dataset root folder. A relative path is resolved against the folder of the config file that sets it.',
    }),
    format: Enum(
      [
        'auto',
        'ljspeech',
        'ljspeech_multispeaker',
        'wav_path_speaker_text',
        'vctk',
        'libritts',
        'common_voice',
        'csv',
      ] as const,
      {
        default: 'auto',
        description:
          'Metadata layout: `ljspeech` (`id|text|normalized_text` or `id|text`), ' +
          '`ljspeech_multispeaker` (`id|text|normalized|speaker`), ' +
          '`wav_path_speaker_text`, `vctk` (txt/ and wav48_silence_trimmed/ or wav48/), ' +
          "`libritts` (`*.normalized.txt` beside each clip), `common_voice` (a release's " +
          'TSV, e.g. `metadata: validated.tsv`, clips in clips/), `csv` (a header row; ' +
          '`columns` names the columns); `auto` detects it from the folder and the ' +
          "metadata's first rows. See docs/datasets.md.",
      },
    ),
    metadata: Type.String({
      minLength: 1,
      default: 'metadata.csv',
      description:
        'Training metadata file, relative to `path` (not used by `vctk` and `libritts`, ' +
        'which read their transcript files).',
    }),
    columns: Type.Object(
      {
        audio: Type.String({
          minLength: 1,
          default: 'audio',
          description: "Column with the audio file's path, relative to `path`.",
        }),
        text: Type.String({ minLength: 1, default: 'text', description: 'Column with the text spoken.' }),
        speaker: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
          default: null,
          description: 'Column with the speaker; null: one speaker.',
        }),
        language: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
          default: null,
          description: 'Column with the language code (read with `language_source: metadata`); null: none.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'The named columns of a `csv` metadata file.' },
    ),
    validation_metadata: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      default: null,
      description:
        'Separate validation metadata file relative to `path`; null splits `metadata` with `validation_fraction`.',
    }),
    validation_fraction: Type.Number({
      minimum: 0,
      maximum: 0.5,
      default: 0.05,
      description:
        'Share of rows held out for validation when there is no `validation_metadata`. ' +
        'The split is seeded and stored in the cache, so it is reused.',
    }),
    split_seed: Type.Integer({ default: 1234, description: 'Seed of the train/validation split.' }),
    follow_symlinks: Type.Boolean({
      default: false,
      description:
        'Read audio and metadata files that are symbolic links (or lie under one) pointing outside ' +
        '`path`. Off: such rows are skipped as path_escapes_root and such a metadata file is refused, so a ' +
        'dataset cannot make xtts read files elsewhere on the machine.',
    }),
    language: Type.String({
      pattern: '^[a-z]{2,3}(-[A-Za-z0-9]+)?$',
      default: 'en',
      description: 'Language of rows that do not state one (ISO 639 code, e.g. `en`, `de`, `pt-br`).',
    }),
    language_source: Enum(['fixed', 'metadata', 'filename', 'detect'] as const, {
      default: 'fixed',
      description:
        "Where each row's language comes from: `fixed` (`language`), `metadata` (a " +
        'language column), `filename` (a `xx_` or `xx/` prefix of the audio path), ' +
        "`detect` (from the text's script and letter statistics).",
    }),
  },
  'Where the utterances are and how their metadata is written.',
);

export const AudioSchema = Section(
  {
    sample_rate_hz: Type.Integer({
      minimum: 8000,
      maximum: 96000,
      default: 22050,
      description: 'Every clip is resampled to this rate.',
    }),
    n_fft: Type.Integer({
      minimum: 64,
      maximum: 8192,
      default: 1024,
      description: 'FFT size of the STFT (a power of two).',
    }),
    hop_length: Type.Integer({
      minimum: 16,
      maximum: 4096,
      default: 256,
      description: 'Samples between STFT frames; one mel frame per hop.',
    }),
    win_length: Type.Integer({
      minimum: 16,
      maximum: 8192,
      default: 1024,
      description: 'Analysis window length in samples (≤ n_fft).',
    }),
    window: Enum(['hann', 'hamming'] as const, { default: 'hann', description: 'STFT window function.' }),
    n_mels: Type.Integer({ minimum: 8, maximum: 256, default: 80, description: 'Mel bands.' }),
    fmin_hz: Type.Number({ minimum: 0, default: 0, description: 'Lowest mel filter edge.' }),
    fmax_hz: Type.Number({
      minimum: 1000,
      default: 8000,
      description: 'Highest mel filter edge (≤ sample_rate_hz / 2).',
    }),
    mel_scale: Enum(['slaney', 'htk'] as const, { default: 'slaney', description: 'Mel frequency scale.' }),
    mel_norm: Enum(['slaney', 'none'] as const, {
      default: 'slaney',
      description: "Filter normalisation: `slaney` divides each filter by its bandwidth (librosa's default).",
    }),
    log_base: Enum(['e', '10'] as const, { default: 'e', description: 'Logarithm of the mel magnitudes.' }),
    log_floor: Type.Number({
      exclusiveMinimum: 0,
      default: 1e-5,
      description: 'Magnitudes are clamped to at least this before the log.',
    }),
    trim: Type.Object(
      {
        enabled: Type.Boolean({ default: true, description: 'Trim leading and trailing silence.' }),
        top_db: Type.Number({
          minimum: 10,
          maximum: 120,
          default: 40,
          description: 'Frames quieter than the peak by more than this are silence.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'Silence trimming.' },
    ),
    loudness: Type.Object(
      {
        enabled: Type.Boolean({
          default: false,
          description: "Normalise each clip's integrated loudness (ITU-R BS.1770).",
        }),
        target_lufs: Type.Number({
          minimum: -70,
          maximum: 0,
          default: -23,
          description: 'Target integrated loudness in LUFS.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'Loudness normalisation.' },
    ),
  },
  'Audio decoding and log-mel features. Changing any of these invalidates every cached feature.',
);

export const TextSchema = Section(
  {
    cleaners: Enum(CLEANERS, {
      default: 'multilingual',
      description:
        '`english` expands abbreviations, numbers, ordinals, decimals, currency and ' +
        'years in English; `multilingual` lower-cases, normalises punctuation and reads numbers, ordinals, ' +
        "decimals, years, dates, times, percentages, currency and abbreviations in each row's language, for " +
        'en, de, es, fr, it, nl and pt (docs/languages.md); `basic` only collapses whitespace and takes any ' +
        'language (digits stay digits). Rule text/languages refuses a language the cleaner does not read.',
    }),
    unicode_normalization: Enum(['NFC', 'NFKC', 'NFD', 'NFKD', 'none'] as const, {
      default: 'NFC',
      description: 'Unicode normalisation applied before cleaning.',
    }),
    tokenizer: Enum(['characters', 'phonemes'] as const, {
      default: 'characters',
      description:
        '`characters`: one token per character; `phonemes`: IPA from espeak-ng (one long-lived process per worker).',
    }),
    phonemizer_command: Type.String({
      minLength: 1,
      default: 'espeak-ng',
      description: 'The espeak-ng executable used when `tokenizer: phonemes`.',
    }),
    languages: Type.Array(Type.String({ pattern: '^[a-z]{2,3}(-[A-Za-z0-9]+)?$' }), {
      minItems: 1,
      uniqueItems: true,
      default: ['en'],
      description: 'Languages the model knows; each gets a language token. Rows in other languages are skipped.',
    }),
  },
  'Text front end: cleaning and tokenization. The tokenizer is stored with the cache and every checkpoint.',
);

export const LimitsSchema = Section(
  {
    min_text_chars: Type.Integer({
      minimum: 1,
      default: 1,
      description: 'Rows with shorter cleaned text are skipped (`text_too_short`).',
    }),
    max_text_chars: Type.Integer({
      minimum: 1,
      default: 250,
      description: 'Rows with longer cleaned text are skipped (`text_too_long`).',
    }),
    min_audio_s: Type.Number({
      minimum: 0,
      default: 0.3,
      description: 'Clips shorter than this (after trimming) are skipped.',
    }),
    max_audio_s: Type.Number({
      exclusiveMinimum: 0,
      default: 11,
      description: 'Clips longer than this (after trimming) are skipped.',
    }),
  },
  'Length limits that decide which rows are usable.',
);
