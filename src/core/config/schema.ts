// The one source of truth for a training config: this JSON Schema validates YAML (ajv), gives the
// TypeScript types (TypeBox's Static), and generates docs/config-reference.md. Every field here is
// read by some part of xtts; a field nobody reads does not belong here.
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** A string enum that ajv reports as one `enum` error (TypeBox unions of literals report one per arm). */
function Enum<const T extends readonly string[]>(values: T, options: { default?: T[number]; description: string }) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

function Section<T extends Record<string, TSchema>>(properties: T, description: string) {
  return Type.Object(properties, { additionalProperties: false, default: {}, description });
}

/** A GPU chosen by index (0, 1, ...) or by a case-insensitive substring of its name ("H100"). */
const DeviceRef = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 }), Type.Null()], {
  default: null,
  description: 'GPU by index (0, 1, …) or by a substring of its name ("H100"); null lets the backend choose.',
});

export const BACKENDS = ['auto', 'webgpu', 'tensorflow', 'wasm', 'cpu'] as const;
export const PRECISIONS = ['fp32', 'mixed_fp16'] as const;
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
        'Read audio files that are symbolic links (or lie under one) pointing outside ' +
        '`path`. Off: such rows are skipped as path_escapes_root, so a dataset cannot ' +
        'make xtts read files elsewhere on the machine.',
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
        'years; `multilingual` lower-cases and normalises punctuation for any script; ' +
        '`basic` only collapses whitespace.',
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

export const BatchingSchema = Section(
  {
    batch_size: Type.Integer({
      minimum: 1,
      maximum: 4096,
      default: 16,
      description: 'Utterances per batch (per step before accumulation).',
    }),
    frame_budget: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      default: null,
      description:
        'When set, a batch holds as many utterances as fit this many padded mel frames, ' +
        'per bucket; `batch_size` is then the upper bound.',
    }),
    buckets: Type.Integer({
      minimum: 0,
      maximum: 64,
      default: 4,
      description:
        'Number of static (text length, frame count) shapes chosen from the length ' +
        'distribution; 0 pads each batch to its own longest item (dynamic shapes: every ' +
        'new shape recompiles kernels).',
    }),
    shuffle: Type.Boolean({ default: true, description: 'Shuffle batches each epoch (seeded by `training.seed`).' }),
    reference_frames: Type.Integer({
      minimum: 16,
      maximum: 4096,
      default: 192,
      description:
        'Mel frames of the reference clip (another utterance of the same speaker) the ' +
        'conditioning encoder sees; a random window of this length, fixed so the shape ' +
        'stays static.',
    }),
  },
  'How utterances become batches of a few static shapes.',
);

export const PipelineSchema = Section(
  {
    workers: Type.Union([Type.Integer({ minimum: 0, maximum: 256 }), Type.Literal('auto')], {
      default: 'auto',
      description:
        'Preprocessing worker threads; `auto` uses the CPU cores less one; 0 preprocesses on the training thread.',
    }),
    prefetch_depth: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 3,
      description: 'Slots in the prefetch ring filled ahead of the trainer (3 = triple buffering).',
    }),
    cache: Type.Object(
      {
        enabled: Type.Boolean({
          default: true,
          description:
            'Read log-mel features from the SQLite cache (keys are content hashes). false: ' +
            'producers decode and featurise every clip again each time a batch needs it (the ' +
            'preparation pass still measures lengths and statistics).',
        }),
        path: Type.String({
          minLength: 1,
          default: '.xtts-cache/cache.sqlite',
          description: 'Cache database; a relative path is resolved against the working directory.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'The feature cache.' },
    ),
  },
  'The input pipeline that keeps the device fed.',
);

export const ModelSchema = Section(
  {
    d_model: Type.Integer({
      minimum: 16,
      maximum: 4096,
      default: 256,
      description: 'Width of every transformer layer.',
    }),
    heads: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Attention heads (must divide d_model).' }),
    alignment_heads: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 1,
      description:
        'Decoder cross-attention heads (per layer, at most `heads`) that read only the ' +
        'text symbol each decoder step says: in training the one monotonic alignment ' +
        'search gives it, in synthesis the one the predicted durations give it. The ' +
        'other heads read the voice latents and the whole text.',
    }),
    ff_mult: Type.Integer({
      minimum: 1,
      maximum: 8,
      default: 4,
      description: 'Feed-forward width as a multiple of d_model.',
    }),
    text_layers: Type.Integer({ minimum: 1, maximum: 48, default: 4, description: 'Text encoder layers.' }),
    cond_layers: Type.Integer({
      minimum: 1,
      maximum: 24,
      default: 2,
      description: 'Conditioning (reference speaker) encoder layers.',
    }),
    cond_latents: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 8,
      description: 'Conditioning latents the reference clip is pooled into.',
    }),
    decoder_layers: Type.Integer({
      minimum: 1,
      maximum: 48,
      default: 4,
      description: 'Autoregressive mel decoder layers.',
    }),
    prenet_dim: Type.Integer({ minimum: 8, maximum: 2048, default: 256, description: 'Decoder prenet width.' }),
    postnet_layers: Type.Integer({
      minimum: 0,
      maximum: 12,
      default: 3,
      description: 'Convolutional postnet layers (0 disables it).',
    }),
    postnet_channels: Type.Integer({ minimum: 8, maximum: 2048, default: 256, description: 'Postnet channels.' }),
    postnet_kernel: Type.Integer({ minimum: 1, maximum: 31, default: 5, description: 'Postnet kernel width (odd).' }),
    reduction_factor: Type.Integer({
      minimum: 1,
      maximum: 8,
      default: 2,
      description: 'Mel frames predicted per decoder step.',
    }),
    dropout: Type.Number({
      minimum: 0,
      maximum: 0.9,
      default: 0.1,
      description: 'Dropout in attention and feed-forward blocks.',
    }),
    prenet_dropout: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 1,
      description:
        "Dropout on the decoder's view of its previous frames (the prenet), in training " +
        'and synthesis alike. 1 (the default) shows it none: each step is decoded from ' +
        'the text and the steps before it — measured on 1,200 espeak-ng clips, a decoder ' +
        "that sees its previous frames (Tacotron 2's 0.5, or 0.9) learns to copy them " +
        "and to cancel the text's part, and free-running synthesis then loses the text. " +
        'Below 1 the decoder is autoregressive over its frames.',
    }),
    max_text_tokens: Type.Integer({
      minimum: 8,
      maximum: 4096,
      default: 256,
      description: 'Longest token sequence the positional table covers.',
    }),
    max_mel_frames: Type.Integer({
      minimum: 16,
      maximum: 16384,
      default: 1024,
      description: 'Longest mel sequence the positional table covers.',
    }),
  },
  'Model dimensions. Presets tiny/small/normal/big set these.',
);

export const TrainingSchema = Section(
  {
    max_steps: Type.Integer({
      minimum: 1,
      default: 10000,
      description:
        'Optimizer steps to train (one step is `grad_accumulation_steps` batches; ' +
        'schedules and intervals count these steps too).',
    }),
    learning_rate: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 1e-3, description: 'Peak learning rate.' }),
    optimizer: Type.Object(
      {
        name: Enum(['adamw'] as const, {
          default: 'adamw',
          description: 'Optimizer: `adamw` (decoupled weight decay, one flat parameter buffer).',
        }),
        beta1: Type.Number({ minimum: 0, exclusiveMaximum: 1, default: 0.9, description: 'First-moment decay.' }),
        beta2: Type.Number({ minimum: 0, exclusiveMaximum: 1, default: 0.98, description: 'Second-moment decay.' }),
        epsilon: Type.Number({ exclusiveMinimum: 0, default: 1e-9, description: 'Denominator epsilon.' }),
        weight_decay: Type.Number({
          minimum: 0,
          default: 0.01,
          description: 'Decoupled weight decay (not applied to biases and norms).',
        }),
      },
      { additionalProperties: false, default: {}, description: 'Optimizer settings.' },
    ),
    schedule: Type.Object(
      {
        name: Enum(['warmup_cosine', 'noam', 'constant'] as const, {
          default: 'warmup_cosine',
          description: 'Learning-rate schedule.',
        }),
        warmup_steps: Type.Integer({ minimum: 0, default: 500, description: 'Linear warm-up steps.' }),
        min_learning_rate: Type.Number({ minimum: 0, default: 1e-5, description: 'Floor of the cosine decay.' }),
      },
      { additionalProperties: false, default: {}, description: 'Learning-rate schedule.' },
    ),
    alignment_prior: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 0.3,
      description:
        'Width σ, in shares of the text and of the utterance, of the diagonal prior in ' +
        'monotonic alignment search (which decoder steps say which symbol): it keeps the ' +
        "search from holding one symbol for half a second while the symbols' means are " +
        'still poor. 0 searches by the means alone.',
    }),
    alignment_lookahead: Enum(['auto', 'on', 'off'] as const, {
      default: 'auto',
      description:
        "Search the next batch's alignment while the device trains on this one: its " +
        'forward pass is queued before this step (replayed, with step capture) and ' +
        'worker threads run the search while the step computes, so neither the device ' +
        'nor the thread that issues its work waits for it. The next batch is then ' +
        "aligned with the weights from before this step's update (one step behind). With " +
        'pipelined steps (device.pipeline_steps) four batches are kept prepared, each ' +
        'aligned four updates behind: the host issues a step while the device still ' +
        'computes the four before it, so a batch queued fewer steps ahead would have its ' +
        'scores only when the host already wants them. A resumed run aligns its first ' +
        "batches with the checkpoint's weights, so it is not bit for bit the unbroken " +
        'run. `auto`: on where the device computes beside the host (webgpu, one device); ' +
        '`off`: each batch aligned after the step before it, on every backend.',
    }),
    grad_clip_norm: Type.Number({
      minimum: 0,
      default: 1,
      description: 'Clip the global gradient norm to this (0 disables clipping).',
    }),
    grad_accumulation_steps: Type.Integer({
      minimum: 1,
      maximum: 1024,
      default: 1,
      description: 'Batches whose gradients are averaged into one optimizer step (its logged loss is their mean).',
    }),
    precision: Enum(PRECISIONS, {
      default: 'fp32',
      description:
        'Arithmetic precision. `fp32`: float32 everywhere. `mixed_fp16` (webgpu, one ' +
        'GPU): tensors and sums stay float32, and the large matmuls and dense layers run ' +
        'on tensor cores with their operands rounded to f16 (Dawn subgroup matrices; the ' +
        'adapter needs shader-f16, subgroups and an f16→f32 subgroup-matrix shape, or ' +
        '`xtts train` refuses with the reason); the loss is scaled dynamically (from ' +
        '4096, doubled after 1,000 updates in a row, halved and the update skipped on an ' +
        'overflow, which does not count against max_nonfinite_steps).',
    }),
    seed: Type.Integer({ default: 1234, description: 'Seed of initialisation, dropout and shuffling.' }),
    loss: Type.Object(
      {
        mel: Enum(['l1', 'l2', 'l1_l2'] as const, {
          default: 'l1',
          description: 'Masked mel loss on real frames only.',
        }),
        aligned_text_weight: Type.Number({
          minimum: 0,
          default: 1,
          description:
            "Weight of the aligned text loss: the mel loss of every text symbol's mean frame " +
            'against the frames monotonic alignment search gives it. It teaches the text ' +
            'encoder what each symbol sounds like, and the alignment follows from it; 0 ' +
            "leaves the means to the decoder's loss alone.",
        }),
        duration_weight: Type.Number({
          minimum: 0,
          default: 1,
          description:
            "Weight of the duration predictor's loss (squared error of log(1 + decoder " +
            'steps) per symbol); synthesis reads the text at the predicted durations.',
        }),
      },
      { additionalProperties: false, default: {}, description: 'Loss terms.' },
    ),
    log_every: Type.Integer({
      minimum: 1,
      default: 10,
      description: 'Steps between reading the loss back from the device (each read waits for the device).',
    }),
    validate_every: Type.Integer({ minimum: 1, default: 500, description: 'Steps between validation passes.' }),
    checkpoint_every: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Steps between checkpoints (one is also written at the end and on Ctrl-C).',
    }),
    eval_every: Type.Integer({
      minimum: 1,
      default: 1000,
      description: 'Steps between synthesising the eval sentences to WAV.',
    }),
    keep_checkpoints: Type.Integer({ minimum: 1, default: 3, description: 'Checkpoints kept besides the best one.' }),
    early_stopping_patience: Type.Integer({
      minimum: 0,
      default: 0,
      description: 'Stop after this many validations without improvement (0 never stops early).',
    }),
    max_nonfinite_steps: Type.Integer({
      minimum: 0,
      default: 10,
      description:
        'A NaN/Inf loss or gradient skips its update; the run stops with exit code 1, ' +
        'writing no checkpoint of that state, at the step that makes this many (0: at ' +
        'the first). A run none of whose steps made an update fails the same way.',
    }),
    eval_sentences: Type.Array(
      Type.Object(
        {
          text: Type.String({ minLength: 1 }),
          language: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(-[A-Za-z0-9]+)?$' })),
        },
        { additionalProperties: false },
      ),
      { default: [], description: 'Sentences synthesised every `eval_every` steps.' },
    ),
  },
  'The trainer.',
);

export const DeviceSchema = Section(
  {
    backend: Enum(BACKENDS, {
      default: 'auto',
      description:
        '`webgpu` (Dawn), `tensorflow` (tfjs-node-gpu / tfjs-node), `wasm`, `cpu`; ' +
        '`auto` picks the fastest that works here and says why.',
    }),
    model_device: DeviceRef,
    step_capture: Enum(['auto', 'off'] as const, {
      default: 'auto',
      description:
        "webgpu: record each bucket shape's training step once (two eager steps that " +
        'must dispatch the same programs) and from then on replay it — one command ' +
        'encoder, bind groups built once, only the batch, the dropout offsets and the ' +
        "optimizer's per-step scalars written per step. With gradient accumulation the " +
        'first, in-between and updating micro-batches are captured apart. What cannot be ' +
        'replayed (data-parallel replicas, a step whose work changes) steps eagerly and ' +
        'the run records why. `off`: every step eagerly. Other backends step eagerly.',
    }),
    pipeline_steps: Enum(['auto', 'on', 'off'] as const, {
      default: 'auto',
      description:
        'Issue the next training steps before waiting for this one to finish, so that ' +
        'the host prepares and encodes them while the device computes. Four steps stay ' +
        "in flight: whether a step's update was made (or, at a log step, its losses; its " +
        'progress line then follows) is read once the four steps after it are queued, so ' +
        "a stop of the host (a garbage collection) of up to about four steps' device " +
        'time does not leave the device idle. A step is still waited for when something ' +
        "reads the weights after it (validation, a checkpoint, eval) and at the run's " +
        'end; a run stopped by training.max_nonfinite_steps drops the steps already ' +
        'issued after the one that reached the limit. The same arithmetic and records ' +
        'either way. `auto`: on where the device computes beside the host (webgpu, one ' +
        'device); `off`: each step waited for.',
    }),
    matmul: Enum(['tfjs', 'tiled'] as const, {
      default: 'tiled',
      description:
        "webgpu: which program runs the large float32 matmuls. `tiled`: xtts's wide " +
        'program where its 128×128 output tiles fill the device (256 invocations of 8×8 ' +
        'outputs, both operands through workgroup memory as vec4, the next slab of K ' +
        'read while the current one is multiplied), split over K into parts summed in ' +
        'order where an unbatched matmul has too few tiles and a long K (a weight ' +
        'gradient), in 64×64 tiles where those fill the device and K is too short to ' +
        "split, and the dense layers' forward with its bias and ReLU; tfjs's program for " +
        'the rest. On an H100 a normal-preset float32 step took 110 ms against 138 with ' +
        '`tfjs`, a small one 32.7 against 35.3, tiny the same. `tfjs`: ' +
        "tfjs-backend-webgpu's MatMulPackedProgram (32×32 output tiles, 64 invocations) " +
        "for all of them. Either way the matmuls that tfjs splits over K run xtts's " +
        'ordered sum, and with training.precision mixed_fp16 the tensor-core program ' +
        'takes the large ones.',
    }),
    conv_kernels: Enum(['auto', 'native', 'composed'] as const, {
      default: 'auto',
      description:
        'How the 1-D convolutions (postnet, conditioning, duration predictor) run: ' +
        "`native` uses the backend's convolution kernels and their gradients; `composed` " +
        'computes each as one matmul over all filter taps plus shifted slices (forward ' +
        'and backward are matmuls). `auto`: composed on webgpu, wasm and cpu — ' +
        "tfjs-backend-webgpu's filter gradient (Conv2DBackpropFilter) is a loop per " +
        "filter element that took 36% of a normal-preset step's device time on an H100, " +
        "the cpu backend's is a scalar loop, and wasm has none — and native on " +
        "tensorflow (libtensorflow's kernels). The weights are the same either way.",
    }),
    data_device: Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 }), Type.Null()], {
      default: null,
      description:
        'The data device: validation passes and eval synthesis run there (a worker with ' +
        'its own copy of the model, from a snapshot of the weights at their step) while ' +
        'training goes on, so the training device never pauses for them. A GPU by index ' +
        'or name, or "cpu" (a CPU worker). null: they run on the training device between ' +
        'steps.',
    }),
    gpus: Type.Union(
      [
        Type.Literal('all'),
        Type.String({ pattern: '^cpu:([1-9]|[1-5][0-9]|6[0-4])$' }),
        Type.Array(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 })]), {
          minItems: 1,
          maxItems: 64,
        }),
        Type.Null(),
      ],
      {
        default: null,
        description:
          'Data-parallel training: one replica per device, each on its rows of every batch ' +
          '(batching.batch_size is the global batch), gradients summed every optimizer ' +
          'step, the same losses as one device. `all` (every GPU adapter), a list of ' +
          'adapter indices or names ([0, 1]), or `cpu:N` (N replicas on the CPU backends). ' +
          'null: one device, model_device. `--gpus` sets it.',
      },
    ),
    model_memory_budget_mb: Type.Union([Type.Integer({ minimum: 64 }), Type.Null()], {
      default: null,
      description:
        "Memory the trainer may hold on its device (the engine's tensors: weights, " +
        "optimizer state, a step's buffers), checked after every step: a run that holds " +
        'more stops with exit code 3 at the first step that does, naming what to set. ' +
        "null: no bound but the device's memory.",
    }),
    data_memory_budget_mb: Type.Union([Type.Integer({ minimum: 64 }), Type.Null()], {
      default: null,
      description:
        'Memory the data producer may use: the prefetch ring holds at most this much in ' +
        'batches (fewer slots than pipeline.prefetch_depth when they would not fit, said ' +
        "at the start; fewer than two is an error). null means 1/8 of the host's memory.",
    }),
  },
  'Backend and devices: the training device (`model_device`, or one replica per ' +
    'device in `gpus`), the data device that validates and evaluates beside it, and ' +
    'the memory each may hold.',
);

export const OutputSchema = Section(
  {
    dir: Type.String({
      minLength: 1,
      default: 'runs/xtts',
      description: 'Run folder (checkpoints, metrics, eval WAVs); relative to the working directory.',
    }),
  },
  'Where a run writes.',
);

export const ConfigSchema = Type.Object(
  {
    extends: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'A preset name (`tiny`, `small`, `normal`, `big`, `quickstart`, `dual-gpu`) or a ' +
          'path to another config, relative to this file. Its values are the defaults of ' +
          'this one.',
      }),
    ),
    dataset: DatasetSchema,
    audio: AudioSchema,
    text: TextSchema,
    limits: LimitsSchema,
    batching: BatchingSchema,
    pipeline: PipelineSchema,
    model: ModelSchema,
    training: TrainingSchema,
    device: DeviceSchema,
    output: OutputSchema,
  },
  { additionalProperties: false, required: ['dataset'], description: 'An xtts training config.' },
);

export type XttsConfig = Static<typeof ConfigSchema>;
export type AudioConfig = Static<typeof AudioSchema>;
export type TextConfig = Static<typeof TextSchema>;
export type DatasetConfig = Static<typeof DatasetSchema>;
export type LimitsConfig = Static<typeof LimitsSchema>;
export type BatchingConfig = Static<typeof BatchingSchema>;
export type PipelineConfig = Static<typeof PipelineSchema>;
export type ModelConfig = Static<typeof ModelSchema>;
export type TrainingConfig = Static<typeof TrainingSchema>;
export type DeviceConfig = Static<typeof DeviceSchema>;
export type Backend = (typeof BACKENDS)[number];
