// Every threshold the config linter, the pipeline analyzer, the profiler and the diagnosis use, in
// one place, so that the tools never disagree (the seed tools did: one called 10% input wait fine,
// another critical). docs/rules.md and docs/thresholds.md are generated from this file.

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
} as const;

export type ThresholdName = keyof typeof THRESHOLDS;

/** Grade an input-wait share the way every xtts tool does. */
export function gradeInputWait(share: number): 'not' | 'moderately' | 'highly' {
  if (share < THRESHOLDS.inputBoundModerate) return 'not';
  if (share < THRESHOLDS.inputBoundHigh) return 'moderately';
  return 'highly';
}
