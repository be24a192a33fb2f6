// The schema of the trainer's section: steps, optimizer, schedule, precision, losses and evaluation.
import { Type } from '@sinclair/typebox';
import { Enum, Section } from './schema-parts.js';

export const PRECISIONS = ['fp32', 'mixed_fp16'] as const;

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
        'GPU): tensors and sums stay float32, and the large matmuls, dense layers and ' +
        "attention's batched products run on tensor cores with their operands rounded to " +
        'f16 (Dawn subgroup matrices; the ' +
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
    eval_griffin_lim_iterations: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 24,
      description:
        'Griffin-Lim iterations of the eval WAVs when no `vocoder.checkpoint` is named. Eval synthesis runs on ' +
        'the host between steps, and Griffin-Lim is most of its time: fewer iterations make it cheaper and ' +
        'the audio rougher (phase artefacts); the mels and metrics do not change.',
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
