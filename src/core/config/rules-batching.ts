// Rules on batches: a few static shapes, a size that fits the memory and keeps a GPU busy, and a
// reference window the clips can fill.
import { REFERENCE_JOIN_CLIPS } from '../data/index.js';
import { findGpu, type HostInventory } from '../env/index.js';
import {
  batchSizeWithin,
  describeEstimate,
  estimateTrainingMemory,
  type MemoryLimit,
  trainingMemoryLimit,
} from './estimate.js';
import type { LoadedConfig } from './load.js';
import { at, fired, firstFired, type Rule } from './rule-context.js';
import { readTrainingRows } from './rules-data.js';
import type { XttsConfig } from './schema.js';
import { THRESHOLDS } from './thresholds.js';

export const batchingStaticShapesRule: Rule = {
  id: 'batching/static-shapes',
  tasks: ['acoustic'],
  title: 'Batches come in a few static shapes',
  severity: 'warn',
  rationale:
    'Every new tensor shape compiles new kernels (WebGPU shaders, XLA-free TF graphs ' +
    "re-plan); dynamic shapes mean a compile stall on most of the first epoch's " +
    'steps. A handful of buckets keeps compiles few and padding low.',
  check(ctx) {
    const b = ctx.config.batching.buckets;
    return firstFired([
      b === 0 &&
        at(
          ctx,
          'batching.buckets',
          'warn',
          'buckets: 0 pads each batch to its own length: nearly every step has a new shape and recompiles kernels',
          'buckets: 4',
        ),
      b > THRESHOLDS.maxBuckets &&
        at(
          ctx,
          'batching.buckets',
          'warn',
          `${b} buckets: each shape compiles its own kernels; more ` +
            `than ${THRESHOLDS.maxBuckets} costs more compiles than it saves padding`,
          'buckets: 8',
        ),
      b === 1 &&
        at(
          ctx,
          'batching.buckets',
          'info',
          'one bucket pads every utterance to the longest: most frames are padding on mixed-length data',
          'buckets: 4',
        ),
    ]);
  },
};

export const batchingMemoryRule: Rule = {
  id: 'batching/memory',
  tasks: ['acoustic'],
  title: 'The batch fits the memory budget',
  severity: 'error',
  rationale:
    'Parameters, gradients and AdamW moments take 16 bytes a parameter; activations ' +
    'grow with batch × layers × sequence length and with the square of it in ' +
    'attention. Out of memory mid-run loses the run; the estimate catches it before.',
  check(ctx) {
    const trained = atTrainedBatch(ctx);
    const est = estimateTrainingMemory(trained.config);
    const limit = memoryLimitFor(ctx);
    if (!limit) return [];
    const share = est.totalBytes / limit.bytes;
    const detail = describeEstimate(trained.config, est) + trained.note;
    const fits = batchSizeWithin(trained.config, est, limit.bytes, THRESHOLDS.memoryWarnShare);
    // Parameters alone over the limit: no batch size helps, the model is too large.
    const fix =
      est.parameterBytes >= limit.bytes * THRESHOLDS.memoryWarnShare
        ? 'a smaller model: lower model.d_model, model.ff_mult or the layer counts ' +
          '(model.text_layers, model.decoder_layers)'
        : `batch_size: ${fits}   # or lower limits.max_audio_s, or raise the budget`;
    // backend auto where nvidia-smi sees no GPU: wasm, most likely, but a GPU it cannot see (WebGPU on another
    // vendor's card) may hold more.
    const severity = limit.assumed ? 'warn' : 'error';
    return firstFired([
      share > 1 &&
        at(
          ctx,
          est.parameterBytes >= limit.bytes * THRESHOLDS.memoryWarnShare ? 'model.d_model' : 'batching.batch_size',
          severity,
          `${detail} exceeds ${limit.what}${limit.assumed ? ` (${limit.assumed})` : ''}`,
          fix,
        ),
      share > THRESHOLDS.memoryWarnShare &&
        at(
          ctx,
          'batching.batch_size',
          'warn',
          `${detail} is ${(share * 100).toFixed(0)}% of ${limit.what}; allocator fragmentation may push it over`,
          fix,
        ),
    ]);
  },
};

/**
 * The config at the batch its run trains where the dataset is read here (environment checks on): a batch_size above
 * the training rows trains at the rows (data/buckets.ts batchSizeWithin), and `note` says so; else the config.
 */
export function atTrainedBatch(ctx: { loaded: LoadedConfig; config: XttsConfig; host?: HostInventory }): {
  config: XttsConfig;
  note: string;
} {
  const asked = ctx.config.batching.batch_size;
  const read = ctx.host && ctx.config.task !== 'vocoder' ? readTrainingRows(ctx.loaded) : undefined;
  if (!read || 'error' in read || read.trainRows === 0 || read.trainRows >= asked)
    return { config: ctx.config, note: '' };
  return {
    config: { ...ctx.config, batching: { ...ctx.config.batching, batch_size: read.trainRows } },
    note: `; batch_size ${asked} is more than the ${read.trainRows} training utterances, which are the batch`,
  };
}

export const batchingSmallBatchRule: Rule = {
  id: 'batching/small-batch',
  title: 'Batch size keeps a GPU busy',
  severity: 'info',
  rationale:
    'In this engine the host spends roughly the same time per kernel whatever its ' +
    'size; tiny batches leave the GPU idle between kernels. Raise the batch (or ' +
    'accumulate) to amortise dispatch.',
  check(ctx) {
    const b = ctx.config.device.backend;
    if (b !== 'webgpu' && b !== 'tensorflow') return [];
    const bs = ctx.config.batching.batch_size;
    return bs < THRESHOLDS.minGpuBatchSize
      ? [
          at(
            ctx,
            'batching.batch_size',
            'info',
            `batch_size ${bs} on a GPU backend: per-kernel host cost dominates at this size`,
            `batch_size: ${THRESHOLDS.minGpuBatchSize * 2}`,
          ),
        ]
      : [];
  },
};

export const batchingReferenceFramesRule: Rule = {
  id: 'batching/reference-frames',
  tasks: ['acoustic'],
  title: 'The reference window fits in the clips',
  severity: 'error',
  rationale:
    'The reference window is cut from another clip of the same speaker (or, with batching.reference_join, ' +
    'from up to 4 of them); a window longer than the clips the limits admit is padding the conditioning ' +
    'encoder pays for in every step and memory.',
  check(ctx) {
    const c = ctx.config;
    const longest = Math.ceil((c.limits.max_audio_s * c.audio.sample_rate_hz) / c.audio.hop_length) + 1;
    const clips = c.batching.reference_join ? REFERENCE_JOIN_CLIPS : 1;
    if (c.batching.reference_frames <= longest * clips) return [];
    const what = c.batching.reference_join
      ? `${clips} of the longest clips limits.max_audio_s ${c.limits.max_audio_s} s admits (${longest * clips} frames)`
      : `the longest clip limits.max_audio_s ${c.limits.max_audio_s} s admits (${longest} frames)`;
    return [
      at(
        ctx,
        'batching.reference_frames',
        'error',
        `reference_frames ${c.batching.reference_frames} is longer than ${what}`,
        `reference_frames: ${Math.min(192, longest * clips)}`,
      ),
    ];
  },
};

/**
 * What the config's training would have to fit in: the budget; else, with the environment, the GPU
 * it names or (backend webgpu/tensorflow/auto with a GPU) the first one, wasm's heap, or the host.
 */
export function memoryLimitFor(ctx: { config: XttsConfig; host?: HostInventory }): MemoryLimit | undefined {
  const dev = ctx.config.device;
  if (dev.model_memory_budget_mb !== null || !ctx.host)
    return trainingMemoryLimit(ctx.config, dev.backend, { memoryBytes: Number.POSITIVE_INFINITY });
  const gpu = dev.model_device !== null ? findGpu(ctx.host.gpus, dev.model_device) : ctx.host.gpus[0];
  // A model_device this host does not have: another rule names that; there is nothing to compare with.
  if (dev.model_device !== null && !gpu) return undefined;
  // auto trains on a GPU where there is one, else on wasm.
  const backend = dev.backend === 'auto' ? (gpu ? 'webgpu' : 'wasm') : dev.backend;
  const limit = trainingMemoryLimit(ctx.config, backend, { memoryBytes: ctx.host.memoryBytes, gpu });
  return limit && dev.backend === 'auto' && !gpu
    ? { ...limit, assumed: 'device.backend auto trains on wasm where no GPU is seen; train refuses it there' }
    : limit;
}

export const batchingVoiceAugmentationRule: Rule = {
  id: 'batching/voice-augmentation',
  title: 'Voice warping and reference joining are set where they act',
  severity: 'warn',
  rationale:
    "batching.voice_warp, voice_warp_share and reference_join shape the acoustic model's training batches (its " +
    'utterances and their reference clips); a vocoder run reads none of them, voice_warp_share does nothing ' +
    'while voice_warp is 0, and voice_warp nothing at a share of 0. A setting that does nothing is a mistake ' +
    'worth hearing about before a run. voice_warp_reference: false leaves the reference unwarped, so only ' +
    "model.speaker_pitch's pitch can tell the model how its utterance was warped; without it the warp is noise.",
  check(ctx) {
    const b = ctx.config.batching;
    if (ctx.config.task === 'vocoder')
      return fired([
        b.voice_warp > 0 &&
          at(
            ctx,
            'batching.voice_warp',
            'info',
            'a vocoder run does not warp voices (its batches are segments)',
            'voice_warp: 0',
          ),
        b.reference_join &&
          at(ctx, 'batching.reference_join', 'info', 'a vocoder run reads no reference clips', 'reference_join: false'),
      ]);
    return fired([
      b.voice_warp > 0 &&
        b.voice_warp_share === 0 &&
        at(
          ctx,
          'batching.voice_warp_share',
          'info',
          `voice_warp ${b.voice_warp} warps nothing at share 0`,
          'voice_warp_share: 0.5',
        ),
      b.voice_warp > 0 &&
        !b.voice_warp_reference &&
        !ctx.config.model.speaker_pitch &&
        at(
          ctx,
          'batching.voice_warp_reference',
          'warn',
          'voice_warp_reference false reads the references as recorded, and without model.speaker_pitch nothing ' +
            "tells the model how each utterance was warped: it would learn the warped voices' average",
          'speaker_pitch: true (in model), or voice_warp_reference: true',
        ),
      b.voice_warp === 0 &&
        !b.voice_warp_reference &&
        at(
          ctx,
          'batching.voice_warp_reference',
          'info',
          'voice_warp_reference false does nothing while voice_warp is 0',
          'voice_warp: 0.15',
        ),
      b.voice_warp === 0 &&
        b.voice_warp_share !== 0.5 &&
        at(
          ctx,
          'batching.voice_warp_share',
          'info',
          `voice_warp_share ${b.voice_warp_share} does nothing while voice_warp is 0`,
          'voice_warp: 0.15',
        ),
    ]);
  },
};
