// The config linter's rules: what keeps a GPU fed in this engine. Each rule has a stable id, a
// default severity, a docs paragraph (docs/rules.md is generated from these) and a check that
// returns findings with positions and the YAML to write instead.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hostInventory, findGpu, packageInstalled, type HostInventory } from '../env/index.js';
import { FP16_TRAINING_BACKENDS, precisionSupported } from '../backend/index.js';
import {
  batchSizeWithin,
  describeEstimate,
  estimateTrainingMemory,
  formatBytes,
  type MemoryLimit,
  trainingMemoryLimit,
} from './estimate.js';
import { type Finding, type Severity, ruleDocsLink } from './findings.js';
import type { LoadedConfig } from './load.js';
import type { Backend, XttsConfig } from './schema.js';
import { THRESHOLDS } from './thresholds.js';

export interface RuleContext {
  loaded: LoadedConfig;
  config: XttsConfig;
  /** The machine, or undefined when checks that depend on it are turned off (`--no-environment`). */
  host?: HostInventory;
}

export interface Rule {
  id: string;
  title: string;
  /** The worst severity this rule reports. */
  severity: Severity;
  /** Why this matters for GPU utilisation; shown in docs/rules.md. */
  rationale: string;
  /** Whether the rule looks at this machine (skipped with --no-environment). */
  environment?: boolean;
  check(ctx: RuleContext): Omit<Finding, 'ruleId' | 'docs'>[];
}

type Draft = Omit<Finding, 'ruleId' | 'docs'>;

function at(ctx: RuleContext, keyPath: string, severity: Severity, message: string, fix?: string): Draft {
  return { severity, message, keyPath, position: ctx.loaded.locate(keyPath), fix };
}

/** Workers the pipeline will really run: `auto` is cores - 1 (one core stays with the trainer). */
export function effectiveWorkers(config: XttsConfig, cpuCores: number): number {
  return config.pipeline.workers === 'auto' ? Math.max(1, cpuCores - 1) : config.pipeline.workers;
}

export { FP16_TRAINING_BACKENDS };

const BACKEND_PACKAGES: Record<Exclude<Backend, 'auto'>, string[]> = {
  webgpu: ['@tensorflow/tfjs-backend-webgpu', 'webgpu'],
  tensorflow: ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'],
  wasm: ['@tensorflow/tfjs-backend-wasm'],
  cpu: ['@tensorflow/tfjs-backend-cpu'],
};

export const RULES: Rule[] = [
  {
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
      const out: Draft[] = [];
      for (const [key, name] of [
        ['dataset.metadata', c.metadata],
        ['dataset.validation_metadata', c.validation_metadata],
      ] as const) {
        if (name === null) continue;
        const file = join(dir, name);
        if (!existsSync(file))
          out.push(
            at(
              ctx,
              key,
              'error',
              `metadata file not found: ${file}`,
              `${key.split('.')[1]}: <file name inside ${c.path}>`,
            ),
          );
        else {
          try {
            accessSync(file, constants.R_OK);
          } catch {
            out.push(at(ctx, key, 'error', `metadata file is not readable: ${file}`, `chmod a+r ${file}`));
          }
        }
      }
      return out;
    },
  },
  {
    id: 'audio/consistency',
    title: 'STFT and mel settings are consistent',
    severity: 'error',
    rationale:
      'A window longer than the FFT, a mel range above Nyquist or a hop longer than ' +
      'the window produce features that silently lose information.',
    check(ctx) {
      const a = ctx.config.audio;
      const out: Draft[] = [];
      if ((a.n_fft & (a.n_fft - 1)) !== 0)
        out.push(
          at(
            ctx,
            'audio.n_fft',
            'error',
            `n_fft ${a.n_fft} is not a power of two (the FFT needs one)`,
            `n_fft: ${2 ** Math.round(Math.log2(a.n_fft))}`,
          ),
        );
      if (a.win_length > a.n_fft)
        out.push(
          at(
            ctx,
            'audio.win_length',
            'error',
            `win_length ${a.win_length} is longer than n_fft ${a.n_fft}`,
            `win_length: ${a.n_fft}`,
          ),
        );
      if (a.hop_length > a.win_length)
        out.push(
          at(
            ctx,
            'audio.hop_length',
            'warn',
            `hop_length ${a.hop_length} is longer than win_length ${a.win_length}: samples ` +
              `between windows are never seen`,
            `hop_length: ${Math.floor(a.win_length / 4)}`,
          ),
        );
      if (a.fmax_hz > a.sample_rate_hz / 2)
        out.push(
          at(
            ctx,
            'audio.fmax_hz',
            'error',
            `fmax_hz ${a.fmax_hz} is above Nyquist (${a.sample_rate_hz / 2} Hz for ${a.sample_rate_hz} Hz audio)`,
            `fmax_hz: ${a.sample_rate_hz / 2}`,
          ),
        );
      if (a.fmin_hz >= a.fmax_hz)
        out.push(
          at(ctx, 'audio.fmin_hz', 'error', `fmin_hz ${a.fmin_hz} is not below fmax_hz ${a.fmax_hz}`, 'fmin_hz: 0'),
        );
      return out;
    },
  },
  {
    id: 'model/shape',
    title: 'Model dimensions fit together',
    severity: 'error',
    rationale:
      'Heads must divide the model width; the positional tables must cover the longest ' +
      'sequences the limits admit, or long utterances fail mid-run.',
    check(ctx) {
      const m = ctx.config.model;
      const out: Draft[] = [];
      if (m.d_model % m.heads !== 0) {
        const heads = [16, 8, 4, 2, 1].find((h) => m.d_model % h === 0 && h <= m.heads) ?? 1;
        out.push(
          at(ctx, 'model.heads', 'error', `heads ${m.heads} does not divide d_model ${m.d_model}`, `heads: ${heads}`),
        );
      }
      if (m.alignment_heads > m.heads)
        out.push(
          at(
            ctx,
            'model.alignment_heads',
            'error',
            `alignment_heads ${m.alignment_heads} is more than heads ${m.heads}`,
            `alignment_heads: ${Math.max(1, Math.floor(m.heads / 2))}`,
          ),
        );
      if (m.postnet_kernel % 2 === 0)
        out.push(
          at(
            ctx,
            'model.postnet_kernel',
            'error',
            `postnet_kernel ${m.postnet_kernel} must be odd to keep frames aligned`,
            `postnet_kernel: ${m.postnet_kernel + 1}`,
          ),
        );
      const a = ctx.config.audio;
      const frames = Math.ceil((ctx.config.limits.max_audio_s * a.sample_rate_hz) / a.hop_length) + 1;
      if (frames > m.max_mel_frames)
        out.push(
          at(
            ctx,
            'model.max_mel_frames',
            'error',
            `limits.max_audio_s ${ctx.config.limits.max_audio_s} s is ${frames} frames, more ` +
              `than model.max_mel_frames ${m.max_mel_frames}`,
            `max_mel_frames: ${2 ** Math.ceil(Math.log2(frames))}`,
          ),
        );
      if (ctx.config.limits.max_text_chars + 3 > m.max_text_tokens)
        out.push(
          at(
            ctx,
            'model.max_text_tokens',
            'error',
            `limits.max_text_chars ${ctx.config.limits.max_text_chars} (+3 special tokens) ` +
              `exceeds model.max_text_tokens ${m.max_text_tokens}`,
            `max_text_tokens: ${2 ** Math.ceil(Math.log2(ctx.config.limits.max_text_chars + 3))}`,
          ),
        );
      if (ctx.config.limits.min_audio_s >= ctx.config.limits.max_audio_s)
        out.push(
          at(
            ctx,
            'limits.min_audio_s',
            'error',
            'limits.min_audio_s is not below limits.max_audio_s: every row would be skipped',
            'min_audio_s: 0.3',
          ),
        );
      return out;
    },
  },
  {
    id: 'pipeline/workers-vs-cores',
    title: 'Preprocessing workers match the CPU cores',
    severity: 'warn',
    rationale:
      'More workers than cores make them fight each other and the training thread ' +
      '(which issues every kernel in this engine, so it needs a core of its own); too ' +
      'few leave feature extraction on the critical path when the cache is cold.',
    check(ctx) {
      if (!ctx.host) return [];
      const cores = ctx.host.cpuCores;
      const w = ctx.config.pipeline.workers;
      if (w === 'auto') return [];
      const best = Math.max(1, cores - 1);
      if (w > cores)
        return [
          at(
            ctx,
            'pipeline.workers',
            'warn',
            `${w} workers on ${cores} CPU cores: workers and the training thread will compete`,
            `workers: ${best}   # or auto`,
          ),
        ];
      if (w === 0 && !ctx.config.pipeline.cache.enabled)
        return [
          at(
            ctx,
            'pipeline.workers',
            'warn',
            'no workers and no cache: every batch is decoded and featurised on the training thread while the GPU waits',
            `workers: ${best}`,
          ),
        ];
      if (w < best && cores >= 4 && w < 2)
        return [
          at(
            ctx,
            'pipeline.workers',
            'info',
            `${w} worker on ${cores} cores: a cold cache will be filled slowly`,
            `workers: auto   # ${best} here`,
          ),
        ];
      return [];
    },
  },
  {
    id: 'pipeline/prefetch-depth',
    title: 'Prefetch depth overlaps input with compute',
    severity: 'warn',
    rationale:
      'With fewer than 2 slots the producer cannot prepare the next batch while the ' +
      'trainer computes; beyond 8 the ring only holds memory.',
    check(ctx) {
      const depth = ctx.config.pipeline.prefetch_depth;
      if (depth < THRESHOLDS.minPrefetchDepth)
        return [
          at(
            ctx,
            'pipeline.prefetch_depth',
            'warn',
            `prefetch_depth ${depth}: the trainer waits for every batch to be assembled`,
            'prefetch_depth: 3',
          ),
        ];
      if (depth > THRESHOLDS.maxUsefulPrefetchDepth)
        return [
          at(
            ctx,
            'pipeline.prefetch_depth',
            'info',
            `prefetch_depth ${depth} holds ${depth} batches in memory; more ` +
              `than ${THRESHOLDS.maxUsefulPrefetchDepth} rarely helps`,
            'prefetch_depth: 4',
          ),
        ];
      return [];
    },
  },
  {
    id: 'pipeline/cache',
    title: 'The feature cache is on',
    severity: 'warn',
    rationale:
      'Without the cache every epoch decodes, resamples and computes log-mels again: ' +
      'on a 2-core host that alone can starve a GPU.',
    check(ctx) {
      return ctx.config.pipeline.cache.enabled
        ? []
        : [
            at(
              ctx,
              'pipeline.cache.enabled',
              'warn',
              'the feature cache is off: audio is decoded and featurised again every epoch',
              'cache:\n  enabled: true',
            ),
          ];
    },
  },
  {
    id: 'batching/static-shapes',
    title: 'Batches come in a few static shapes',
    severity: 'warn',
    rationale:
      'Every new tensor shape compiles new kernels (WebGPU shaders, XLA-free TF graphs ' +
      "re-plan); dynamic shapes mean a compile stall on most of the first epoch's " +
      'steps. A handful of buckets keeps compiles few and padding low.',
    check(ctx) {
      const b = ctx.config.batching.buckets;
      if (b === 0)
        return [
          at(
            ctx,
            'batching.buckets',
            'warn',
            'buckets: 0 pads each batch to its own length: nearly every step has a new shape and recompiles kernels',
            'buckets: 4',
          ),
        ];
      if (b > THRESHOLDS.maxBuckets)
        return [
          at(
            ctx,
            'batching.buckets',
            'warn',
            `${b} buckets: each shape compiles its own kernels; more ` +
              `than ${THRESHOLDS.maxBuckets} costs more compiles than it saves padding`,
            'buckets: 8',
          ),
        ];
      if (b === 1)
        return [
          at(
            ctx,
            'batching.buckets',
            'info',
            'one bucket pads every utterance to the longest: most frames are padding on mixed-length data',
            'buckets: 4',
          ),
        ];
      return [];
    },
  },
  {
    id: 'batching/memory',
    title: 'The batch fits the memory budget',
    severity: 'error',
    rationale:
      'Parameters, gradients and AdamW moments take 16 bytes a parameter; activations ' +
      'grow with batch × layers × sequence length and with the square of it in ' +
      'attention. Out of memory mid-run loses the run; the estimate catches it before.',
    check(ctx) {
      const est = estimateTrainingMemory(ctx.config);
      const limit = memoryLimitFor(ctx);
      if (!limit) return [];
      const share = est.totalBytes / limit.bytes;
      const detail = describeEstimate(ctx.config, est);
      const fits = batchSizeWithin(ctx.config, est, limit.bytes, THRESHOLDS.memoryWarnShare);
      // Parameters alone over the limit: no batch size helps, the model is too large.
      const fix =
        est.parameterBytes >= limit.bytes * THRESHOLDS.memoryWarnShare
          ? 'a smaller model: lower model.d_model, model.ff_mult or the layer counts ' +
            '(model.text_layers, model.decoder_layers)'
          : `batch_size: ${fits}   # or lower limits.max_audio_s, or raise the budget`;
      // backend auto where nvidia-smi sees no GPU: wasm, most likely, but a GPU it cannot see (WebGPU on another
      // vendor's card) may hold more.
      const severity = limit.assumed ? 'warn' : 'error';
      if (share > 1)
        return [
          at(
            ctx,
            est.parameterBytes >= limit.bytes * THRESHOLDS.memoryWarnShare ? 'model.d_model' : 'batching.batch_size',
            severity,
            `${detail} exceeds ${limit.what}${limit.assumed ? ` (${limit.assumed})` : ''}`,
            fix,
          ),
        ];
      if (share > THRESHOLDS.memoryWarnShare)
        return [
          at(
            ctx,
            'batching.batch_size',
            'warn',
            `${detail} is ${(share * 100).toFixed(0)}% of ${limit.what}; allocator fragmentation may push it over`,
            fix,
          ),
        ];
      return [];
    },
  },
  {
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
  },
  {
    id: 'pipeline/prefetch-memory',
    title: 'The prefetch ring fits the data budget',
    severity: 'error',
    rationale:
      'The ring preallocates depth × slot bytes up front; a ring larger than the ' +
      "producer's budget fails at start or swaps.",
    check(ctx) {
      const budgetMb = ctx.config.device.data_memory_budget_mb;
      if (budgetMb === null) return [];
      const est = estimateTrainingMemory(ctx.config);
      const ring = est.slotBytes * ctx.config.pipeline.prefetch_depth;
      const budget = budgetMb * 1024 * 1024;
      if (ring <= budget) return [];
      const depth = Math.max(1, Math.floor(budget / est.slotBytes));
      return [
        at(
          ctx,
          'pipeline.prefetch_depth',
          'error',
          `the ring (${ctx.config.pipeline.prefetch_depth} slots ` +
            `× ${formatBytes(est.slotBytes)}) needs ${formatBytes(ring)}, above ` +
            `data_memory_budget_mb ${budgetMb}`,
          `prefetch_depth: ${depth}`,
        ),
      ];
    },
  },
  {
    id: 'device/backend',
    title: 'The backend exists here',
    severity: 'error',
    environment: true,
    rationale: 'A backend that is not installed falls over at start, after the data is prepared.',
    check(ctx) {
      const dev = ctx.config.device;
      const out: Draft[] = [];
      if (dev.backend !== 'auto') {
        const pkgs = BACKEND_PACKAGES[dev.backend];
        if (!pkgs.some((p) => packageInstalled(p))) {
          const why =
            dev.backend === 'tensorflow'
              ? 'neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node is installed (their ' +
                'install downloads libtensorflow; the GPU build wants CUDA 11.2 and cuDNN 8.1)'
              : `${pkgs.join(' and ')} not installed`;
          out.push(
            at(
              ctx,
              'device.backend',
              'error',
              `backend ${dev.backend}: ${why}`,
              dev.backend === 'tensorflow'
                ? 'backend: webgpu   # or: npm install @tensorflow/tfjs-node-gpu on a host with network'
                : 'backend: auto',
            ),
          );
        } else if (dev.backend === 'webgpu' && ctx.host && ctx.host.gpus.length === 0) {
          out.push(
            at(
              ctx,
              'device.backend',
              'warn',
              `backend webgpu, but no NVIDIA GPU is visible here ` +
                `(${ctx.host.gpuNote ?? 'none'}); Dawn may still find another GPU — run \`xtts ` +
                `diagnose-gpu-utilization\` to see its adapters`,
              'backend: auto',
            ),
          );
        }
      }
      return out;
    },
  },
  {
    id: 'device/dual-gpu',
    title: 'The data device is one that exists, apart from the training devices',
    severity: 'error',
    rationale:
      'Validation and eval on the device that trains would contend with it; a device ' +
      'that does not exist fails at start; budgets larger than the device memory are ' +
      'never honoured. "cpu" (a CPU worker) needs none of this.',
    check(ctx) {
      const dev = ctx.config.device;
      if (dev.data_device === null) return [];
      if (typeof dev.data_device === 'string' && dev.data_device.toLowerCase() === 'cpu') return [];
      const out: Draft[] = [];
      const same = (a: number | string, b: number | string) => String(a).toLowerCase() === String(b).toLowerCase();
      if (dev.model_device === null && dev.gpus === null)
        out.push(
          at(
            ctx,
            'device.data_device',
            'error',
            'data_device names a GPU but model_device is not set: name both devices for ' +
              'dual-device mode (or validate on the CPU: data_device: cpu)',
            'model_device: 0\ndata_device: 1',
          ),
        );
      if (dev.model_device !== null && same(dev.model_device, dev.data_device))
        out.push(
          at(
            ctx,
            'device.data_device',
            'error',
            `data_device and model_device are both ${JSON.stringify(dev.data_device)}: ` +
              `dual-device mode needs two devices`,
            'data_device: null   # or another GPU, or cpu',
          ),
        );
      if (Array.isArray(dev.gpus) && dev.gpus.some((g) => same(g, dev.data_device!)))
        out.push(
          at(
            ctx,
            'device.data_device',
            'error',
            `data_device ${JSON.stringify(dev.data_device)} also trains ` +
              `(device.gpus ${JSON.stringify(dev.gpus)}): the data device must be another`,
            'data_device: cpu',
          ),
        );
      if (dev.backend !== 'webgpu' && dev.backend !== 'auto')
        out.push(
          at(
            ctx,
            'device.backend',
            'error',
            `a GPU data device runs on webgpu; backend is ${dev.backend}`,
            'backend: webgpu',
          ),
        );
      if (!ctx.host) return out;
      // data_memory_budget_mb bounds host memory (the prefetch ring), not the data device's.
      for (const [key, ref, budget] of [
        ['device.model_device', dev.model_device, dev.model_memory_budget_mb],
        ['device.data_device', dev.data_device, null],
      ] as const) {
        if (ref === null) continue;
        const gpu = findGpu(ctx.host.gpus, ref);
        if (!gpu) {
          out.push(
            at(
              ctx,
              key,
              ctx.host.gpus.length ? 'error' : 'warn',
              ctx.host.gpus.length
                ? `no GPU ${JSON.stringify(ref)} here; ` +
                    `GPUs: ${ctx.host.gpus.map((g) => `${g.index} ${g.name}`).join(', ')}`
                : `cannot check ${key} = ${JSON.stringify(ref)} on this machine: ${ctx.host.gpuNote ?? 'no GPU'}`,
              ctx.host.gpus.length
                ? `${key.split('.')[1]}: ${ctx.host.gpus[0].index}`
                : 'validate on the GPU host, or pass --no-environment to skip machine checks',
            ),
          );
          continue;
        }
        if (budget !== null && budget * 1024 * 1024 > gpu.memoryTotalBytes) {
          const budgetKey = 'device.model_memory_budget_mb';
          out.push(
            at(
              ctx,
              budgetKey,
              'error',
              `${budgetKey.split('.')[1]} ${budget} is more than GPU ${gpu.index} ` +
                `(${gpu.name}) has: ${formatBytes(gpu.memoryTotalBytes)}`,
              `${budgetKey.split('.')[1]}: ${Math.floor((gpu.memoryTotalBytes / 1024 / 1024) * 0.9)}`,
            ),
          );
        }
      }
      return out;
    },
  },
  {
    id: 'training/precision',
    title: 'The backend trains in the precision asked for',
    severity: 'error',
    rationale:
      'Mixed precision on a backend that trains in float32 only, or over data-parallel ' +
      'replicas (which train in float32), would silently not be mixed: `xtts train` ' +
      'refuses it through this rule, so the validator does too, with or without ' +
      '--no-environment.',
    check(ctx) {
      const p = ctx.config.training.precision;
      if (p === 'fp32') return [];
      const support = precisionSupported(ctx.config.device.backend, p, ctx.config.device.gpus);
      return support.ok
        ? []
        : [at(ctx, 'training.precision', 'error', `precision ${p}: ${support.reason}`, 'precision: fp32')];
    },
  },
  {
    id: 'training/optimizer',
    title: 'The learning rates and weight decay make a trainable run',
    severity: 'error',
    rationale:
      'Decoupled weight decay multiplies the weights by 1 − lr·weight_decay each step: ' +
      'at 1 or more they are zeroed or flipped and the run blows up at its first ' +
      'steps; a floor above the peak makes the schedule climb when it should decay.',
    check(ctx) {
      const t = ctx.config.training;
      const out: Draft[] = [];
      const shrink = t.learning_rate * t.optimizer.weight_decay;
      if (shrink >= 0.1)
        out.push(
          at(
            ctx,
            'training.optimizer.weight_decay',
            'error',
            `learning_rate ${t.learning_rate} × weight_decay ${t.optimizer.weight_decay} ` +
              `= ${shrink.toPrecision(3)}: each step scales the weights ` +
              `by ${(1 - shrink).toPrecision(3)}, which wipes them out within steps`,
            `weight_decay: ${Math.min(0.1, 0.01 / t.learning_rate).toPrecision(2)}`,
          ),
        );
      if (t.schedule.name === 'warmup_cosine' && t.schedule.min_learning_rate > t.learning_rate)
        out.push(
          at(
            ctx,
            'training.schedule.min_learning_rate',
            'error',
            `min_learning_rate ${t.schedule.min_learning_rate} is above ` +
              `learning_rate ${t.learning_rate}: the cosine "decay" would climb`,
            `min_learning_rate: ${(t.learning_rate / 100).toPrecision(2)}`,
          ),
        );
      return out;
    },
  },
  {
    id: 'training/eval-sentences',
    title: 'Eval sentences are in languages the model learns',
    severity: 'error',
    rationale:
      'An eval sentence in a language the run has no language token for cannot be ' +
      'spoken: it would fail at the first eval, hours into the run.',
    check(ctx) {
      const c = ctx.config;
      const known = c.text.languages;
      return c.training.eval_sentences.flatMap((e, i) => {
        const language = e.language ?? c.dataset.language;
        return known.includes(language)
          ? []
          : [
              at(
                ctx,
                `training.eval_sentences.${i}${e.language ? '.language' : ''}`,
                'error',
                `eval sentence ${i + 1} is in ${language}, which text.languages (${known.join(', ')}) does not list`,
                `language: ${known[0]}   # or add ${language} to text.languages`,
              ),
            ];
      });
    },
  },
  {
    id: 'batching/reference-frames',
    title: 'The reference window fits in the clips',
    severity: 'error',
    rationale:
      'The reference window is cut from another clip of the same speaker; a window ' +
      'longer than any clip the limits admit is padding the conditioning encoder pays ' +
      'for in every step and memory.',
    check(ctx) {
      const c = ctx.config;
      const longest = Math.ceil((c.limits.max_audio_s * c.audio.sample_rate_hz) / c.audio.hop_length) + 1;
      return c.batching.reference_frames > longest
        ? [
            at(
              ctx,
              'batching.reference_frames',
              'error',
              `reference_frames ${c.batching.reference_frames} is longer than the longest clip ` +
                `limits.max_audio_s ${c.limits.max_audio_s} s admits (${longest} frames)`,
              `reference_frames: ${Math.min(192, longest)}`,
            ),
          ]
        : [];
    },
  },
  {
    id: 'training/intervals',
    title: 'Checkpoint, validation and eval intervals fit the run',
    severity: 'warn',
    rationale:
      'An interval longer than the run never fires (no validation curve, only the ' +
      'final checkpoint); a very short checkpoint interval spends the run writing ' +
      'files; warm-up longer than the run never reaches the peak learning rate.',
    check(ctx) {
      const t = ctx.config.training;
      const out: Draft[] = [];
      for (const key of ['validate_every', 'eval_every', 'checkpoint_every'] as const) {
        if (t[key] > t.max_steps)
          out.push(
            at(
              ctx,
              `training.${key}`,
              'warn',
              `${key} ${t[key]} is longer than max_steps ${t.max_steps}: it never ` +
                `fires${key === 'checkpoint_every' ? ' (only the final checkpoint is written)' : ''}`,
              `${key}: ${Math.max(1, Math.floor(t.max_steps / 4))}`,
            ),
          );
      }
      if (t.checkpoint_every < THRESHOLDS.minCheckpointEvery && t.max_steps > t.checkpoint_every * 4)
        out.push(
          at(
            ctx,
            'training.checkpoint_every',
            'warn',
            `a checkpoint every ${t.checkpoint_every} steps: writing weights and optimizer ` +
              `state that often stalls the device`,
            `checkpoint_every: ${Math.max(THRESHOLDS.minCheckpointEvery * 10, Math.floor(t.max_steps / 20))}`,
          ),
        );
      if (t.schedule.name !== 'constant' && t.schedule.warmup_steps >= t.max_steps)
        out.push(
          at(
            ctx,
            'training.schedule.warmup_steps',
            'warn',
            `warmup_steps ${t.schedule.warmup_steps} ≥ max_steps ${t.max_steps}: the ` +
              `learning rate never reaches its peak`,
            `warmup_steps: ${Math.floor(t.max_steps / 10)}`,
          ),
        );
      if (t.early_stopping_patience > 0 && t.validate_every > t.max_steps)
        out.push(
          at(
            ctx,
            'training.early_stopping_patience',
            'warn',
            'early stopping needs validations, and validate_every is longer than the run',
            `validate_every: ${Math.max(1, Math.floor(t.max_steps / 10))}`,
          ),
        );
      return out;
    },
  },
  {
    id: 'training/log-sync',
    title: 'The loss is not read back every step',
    severity: 'warn',
    rationale:
      'Reading a value from the device waits for all queued work: logging every step ' +
      'turns an asynchronous pipeline into a synchronous one and idles the GPU while ' +
      'the host catches up.',
    check(ctx) {
      const t = ctx.config.training;
      return t.log_every < THRESHOLDS.minLogEvery && t.max_steps > 100
        ? [
            at(
              ctx,
              'training.log_every',
              'warn',
              `log_every ${t.log_every}: the host waits for the device ` +
                `every ${t.log_every === 1 ? '' : `${t.log_every} `}step${t.log_every === 1 ? '' : 's'}`,
              'log_every: 25',
            ),
          ]
        : [];
    },
  },
];

export interface LintOptions {
  /** Skip rules that look at this machine (for configs meant for another host). */
  environment?: boolean;
  /** Run only these rules. */
  only?: readonly string[];
}

/**
 * Rules whose errors `xtts train` refuses to start with: each would fail the run later or train something else than
 * asked.
 */
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

export const TRAIN_BLOCKING_RULES = [
  'batching/memory',
  'audio/consistency',
  'model/shape',
  'training/precision',
  'training/optimizer',
  'training/eval-sentences',
  'batching/reference-frames',
] as const;

export function lintConfig(loaded: LoadedConfig, options: LintOptions = {}): Finding[] {
  const useEnv = options.environment !== false;
  const ctx: RuleContext = { loaded, config: loaded.config, host: useEnv ? hostInventory() : undefined };
  const out: Finding[] = [];
  for (const rule of RULES) {
    if ((rule.environment && !useEnv) || (options.only && !options.only.includes(rule.id))) continue;
    for (const d of rule.check(ctx)) out.push({ ...d, ruleId: rule.id, docs: ruleDocsLink(rule.id) });
  }
  return out;
}
