// Every threshold the config linter, the pipeline analyzer, the profiler and the diagnosis use, in
// one place, so that the tools never disagree (the seed tools did: one called 10% input wait fine,
// another critical). The thresholds table of docs/rules.md is generated from this file.

export const THRESHOLDS = {
  /**
   * Share of step time the trainer waits for input: below `inputBoundModerate` it is not input-bound,
   * up to `inputBoundHigh` moderately, above highly. TensorFlow's input-pipeline analyzer uses the
   * same 5% / 20% cut-offs (tensorflow/profiler input_pipeline_analyzer).
   */
  inputBoundModerate: 0.05,
  inputBoundHigh: 0.2,
  /** Prefetch slots below this give no overlap between producer and trainer (double buffering). */
  minPrefetchDepth: 2,
  /** More slots than this rarely help and only hold memory: the producer is either fast enough or not. */
  maxUsefulPrefetchDepth: 8,
  /** Buckets above this compile too many shader/kernel variants; 1 wastes padding. */
  maxBuckets: 16,
  /** Memory estimate above this share of the budget is a warning (fragmentation, workspace). */
  memoryWarnShare: 0.85,
  /** Batches below this leave a GPU mostly idle in this engine (per-kernel host cost dominates). */
  minGpuBatchSize: 8,
  /** Reading the loss back every step forces a device sync each step; below this interval, warn. */
  minLogEvery: 5,
  /** Checkpoints more often than this many steps spend more time writing than training on small models. */
  minCheckpointEvery: 50,
  /** Coefficient of variation of step time above which step time is called oscillating. */
  oscillatingStepCv: 0.25,
  /** GPU busy share below which a step is host/dispatch-bound when input wait is low. */
  dispatchBoundGpuBusy: 0.5,
  /** Device sync/readback share of a step above which the run is sync-bound. */
  syncBoundShare: 0.15,
  /** Device memory used above this share leaves too little headroom. */
  memoryHeadroomShare: 0.9,
  /**
   * GPU busy share at or above which a run is compute-bound: the healthy state, where waiting for the device is waiting
   * for work.
   */
  computeBoundGpuBusy: 0.85,
  /** GPU busy (utilisation %) before xtts starts, above which another process is using the GPU (our choice). */
  idleGpuBusyPct: 10,
  /** Device memory in use before xtts starts, as a share, above which another process holds the GPU (our choice). */
  idleGpuMemoryShare: 0.1,
  /**
   * Share of samples in which a harmful clock-event reason (thermal, power brake, slowdown) must be active to be
   * reported.
   */
  throttleShareReported: 0.1,
  /**
   * Live tensors gained per step (least-squares slope over the steady steps) from which memory is said to leak (our
   * choice: a step frees all it makes).
   */
  leakTensorsPerStep: 0.5,
  /**
   * Share of a data-parallel step that rank 0 spends in the all-reduce (summing and waiting for the slowest replica):
   * moderate from here (our choice).
   */
  allReduceModerate: 0.1,
  /** ... and high from here: the replicas spend a quarter of their time not computing (our choice). */
  allReduceHigh: 0.25,
  /**
   * Model FLOPs utilisation (of the device's peak for the run's precision) under which a busy GPU is called busy but
   * slow (our choice).
   */
  lowMfu: 0.2,
  /**
   * Share of a GPU step the host spends issuing its kernels (forward/backward and optimizer dispatch) from which a run
   * with step capture off is host-bound where the GPU's busy share is not measured (our choice).
   */
  eagerDispatchShare: 0.5,
} as const;

/** One line per threshold for docs/rules.md (the comments above, said for a reader of the docs). */
export const THRESHOLD_MEANINGS: Record<keyof typeof THRESHOLDS, string> = {
  inputBoundModerate:
    'Input wait share of step time from which a run is moderately input-bound ' +
    '(TensorFlow input-pipeline analyzer: 5%).',
  inputBoundHigh:
    'Input wait share from which a run is highly input-bound (TensorFlow: 20%); the diagnosis calls it critical.',
  minPrefetchDepth: 'Fewer prefetch slots give no overlap between producers and the trainer.',
  maxUsefulPrefetchDepth: 'More slots than this rarely help and only hold memory.',
  maxBuckets: 'More buckets compile more kernel variants than padding saves.',
  memoryWarnShare: 'Estimated training memory above this share of the budget is a warning.',
  minGpuBatchSize: 'Smaller GPU batches leave the GPU mostly idle in this engine (per-kernel host cost dominates).',
  minLogEvery: 'Reading the loss back more often than every this many steps syncs the device too often.',
  minCheckpointEvery: 'Checkpoints more often than this spend more time writing than training on small models.',
  oscillatingStepCv:
    'Coefficient of variation of step time (per readback interval when there are ' +
    'enough) above which step time oscillates.',
  dispatchBoundGpuBusy:
    'GPU busy share below which a run that is not input-bound is host/dispatch-bound (below half of it: graded high).',
  syncBoundShare:
    'Readback/sync share of step time above which a run is sync-bound (twice it: ' +
    'high), unless the GPU is compute-bound.',
  memoryHeadroomShare: 'Peak device memory share above which there is too little headroom.',
  computeBoundGpuBusy:
    'GPU busy share from which a run is compute-bound: the GPU is the bottleneck, the healthy state.',
  idleGpuBusyPct: 'Utilisation (%) of a GPU before xtts starts above which the diagnosis says another process uses it.',
  idleGpuMemoryShare:
    'Memory share in use before xtts starts above which the diagnosis says another process holds the GPU.',
  throttleShareReported:
    'Share of samples with a harmful clock-event reason (thermal, power brake, ' +
    'slowdown) from which the diagnosis reports it.',
  leakTensorsPerStep:
    'Live tensors gained per step (the slope over the steps after the first fifth) ' +
    'from which the profiler and the diagnosis report a memory leak: a training step ' +
    'frees every tensor it makes.',
  allReduceModerate:
    'Share of a data-parallel step rank 0 spends in the all-reduce (its gradient read ' +
    "back, exchanged through host memory, the other replicas' uploaded and summed; waiting for " +
    'the slowest replica is not counted) from which the profiler calls it moderately all-reduce-bound.',
  allReduceHigh: 'The all-reduce share from which the profiler grades it high.',
  lowMfu:
    'Model FLOPs utilisation (matmul and convolution FLOPs per second over the ' +
    "device's dense peak for the run's precision: FP32, or FP16 tensor for " +
    'mixed_fp16) under which the profiler calls a compute-bound GPU busy but slow.',
  eagerDispatchShare:
    "Share of a GPU step the host spends issuing kernels from which, where the GPU's busy share is not measured " +
    '(no timestamp queries, no NVML), the profiler calls a run with step capture off host-bound.',
};

export type ThresholdName = keyof typeof THRESHOLDS;

/** Grade an input-wait share the way every xtts tool does. */
export function gradeInputWait(share: number): 'not' | 'moderately' | 'highly' {
  if (share < THRESHOLDS.inputBoundModerate) return 'not';
  if (share < THRESHOLDS.inputBoundHigh) return 'moderately';
  return 'highly';
}
