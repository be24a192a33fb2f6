// The schemas of the input sections: how utterances become batches, and the pipeline that produces them.
import { Type } from '@sinclair/typebox';
import { Section } from './schema-parts.js';

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
    reference_join: Type.Boolean({
      default: false,
      description:
        'A reference clip shorter than `reference_frames` is followed by further clips of the same speaker ' +
        '(up to 4 clips, never the utterance itself) until the window is full, as a reference of several ' +
        'clips is read in synthesis; the conditioning encoder then learns from as many seconds of a voice as ' +
        'it is given. Validation joins them too. false: the window is padded. With it, `reference_frames` may ' +
        'be up to 4 of the longest clips; without the cache (pipeline.cache.enabled: false) each joined clip is ' +
        'featurised again, as every clip is.',
    }),
    voice_warp: Type.Number({
      minimum: 0,
      maximum: 0.5,
      default: 0,
      description:
        'Voices the dataset does not have: a training utterance and its reference clip are read along a ' +
        'frequency axis scaled by one factor α, drawn log-uniform in [1 / (1 + voice_warp), 1 + voice_warp], ' +
        'which moves formants and pitch together (vocal-tract length perturbation), so that the conditioning ' +
        'encoder learns to read a voice from its clip rather than recognise the training speakers. 0: off; ' +
        '0.15 spans about ±2.4 semitones. Validation is never warped.',
    }),
    voice_warp_share: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 0.5,
      description: 'Share of the training utterances `voice_warp` warps; the rest are read as recorded.',
    }),
    voice_warp_reference: Type.Boolean({
      default: true,
      description:
        "Whether a warped utterance's reference clip is warped with it. false (with model.speaker_pitch): the " +
        'reference is read as recorded and only its pitch, moved by α, tells the model the warp, so that the ' +
        'decoder learns to follow the pitch it is given rather than the voice the encoder recognises. Measured on ' +
        'the voices benchmark (two seeds, H100) it cloned worse than the default, unseen voices above all. A new ' +
        "model's training choice; synthesis is the same either way.",
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
