// Rules on the input pipeline: workers, the prefetch ring and the feature cache that keep the device fed.
import { estimateTrainingMemory, formatBytes } from './estimate.js';
import { at, firstFired, type Rule } from './rule-context.js';
import { THRESHOLDS } from './thresholds.js';

export const pipelineWorkersVsCoresRule: Rule = {
  id: 'pipeline/workers-vs-cores',
  tasks: ['acoustic'],
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
    return firstFired([
      w > cores &&
        at(
          ctx,
          'pipeline.workers',
          'warn',
          `${w} workers on ${cores} CPU cores: workers and the training thread will compete`,
          `workers: ${best}   # or auto`,
        ),
      w === 0 &&
        !ctx.config.pipeline.cache.enabled &&
        at(
          ctx,
          'pipeline.workers',
          'warn',
          'no workers and no cache: every batch is decoded and featurised on the training thread while the GPU waits',
          `workers: ${best}`,
        ),
      w < best &&
        cores >= 4 &&
        w < 2 &&
        at(
          ctx,
          'pipeline.workers',
          'info',
          `${w} worker on ${cores} cores: a cold cache will be filled slowly`,
          `workers: auto   # ${best} here`,
        ),
    ]);
  },
};

export const pipelinePrefetchDepthRule: Rule = {
  id: 'pipeline/prefetch-depth',
  tasks: ['acoustic'],
  title: 'Prefetch depth overlaps input with compute',
  severity: 'warn',
  rationale:
    'With fewer than 2 slots the producer cannot prepare the next batch while the ' +
    'trainer computes; beyond 8 the ring only holds memory.',
  check(ctx) {
    const depth = ctx.config.pipeline.prefetch_depth;
    return firstFired([
      depth < THRESHOLDS.minPrefetchDepth &&
        at(
          ctx,
          'pipeline.prefetch_depth',
          'warn',
          `prefetch_depth ${depth}: the trainer waits for every batch to be assembled`,
          'prefetch_depth: 3',
        ),
      depth > THRESHOLDS.maxUsefulPrefetchDepth &&
        at(
          ctx,
          'pipeline.prefetch_depth',
          'info',
          `prefetch_depth ${depth} holds ${depth} batches in memory; more ` +
            `than ${THRESHOLDS.maxUsefulPrefetchDepth} rarely helps`,
          'prefetch_depth: 4',
        ),
    ]);
  },
};

export const pipelineCacheRule: Rule = {
  id: 'pipeline/cache',
  tasks: ['acoustic'],
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
};

export const pipelinePrefetchMemoryRule: Rule = {
  id: 'pipeline/prefetch-memory',
  tasks: ['acoustic'],
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
};
