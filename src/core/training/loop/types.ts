// What `train` takes and gives back: its options, its progress lines and its result. Apart from the
// loop so that the loop's parts can name them without importing the loop.
import type { BackendChoice } from '../../backend/index.js';
import type { LoadedConfig } from '../../config/index.js';
import type { Backend } from '../../config/index.js';
import type { PrepareProgress } from '../../data/index.js';
import type { HostGcSummary } from '../../telemetry/index.js';
import type { StepCaptureSummary } from '../optim/step-replay.js';

export interface TrainProgress {
  step: number;
  maxSteps: number;
  loss: number;
  learningRate: number;
  samplesPerS: number;
  dataWaitShare: number;
  stepMs: number;
  etaS: number;
  nonFiniteSteps: number;
  /** Mean GPU utilisation over the last log interval (NVML or nvidia-smi), when on a GPU. */
  gpuUtilizationPct?: number;
}

export interface TrainOptions {
  loaded: LoadedConfig;
  datasetDir?: string;
  backend?: Backend;
  maxSteps?: number;
  /** Stop after the step that passes this many minutes of training (preparation not counted). */
  maxMinutes?: number;
  /** After every step (cheap: for a progress bar). */
  onStep?: (s: { step: number; startStep: number; maxSteps: number; elapsedMs: number }) => void;
  /**
   * Refuse a dataset with any unusable row (DATASET_ROWS_SKIPPED, naming the first) instead of training on the rest.
   */
  strict?: boolean;
  outputDir?: string;
  resume?: boolean;
  /** Profiling: no checkpoints, validation or eval audio; only the steps. */
  stepsOnly?: boolean;
  /**
   * Profiling: run the last N steps under the backend's device timer (WebGPU timestamp queries around
   * every program; libtensorflow's kernel times; none on the CPU backends, which then run no such
   * steps) and record each one's device time. Timing serialises dispatch, so these steps are probes
   * for device time, never part of the step-time statistics.
   */
  deviceTimedSteps?: number;
  onPrepareProgress?: (p: PrepareProgress) => void;
  onProgress?: (p: TrainProgress) => void;
  onMessage?: (m: string) => void;
  /** Set `stop` to end the run after the current step (Ctrl-C): a checkpoint is written first. */
  control?: { stop: boolean };
}

export interface TrainResult {
  task: 'acoustic';
  runDir: string;
  backend: BackendChoice;
  parameters: number;
  startStep: number;
  steps: number;
  stoppedBy: 'max_steps' | 'time_limit' | 'early_stopping' | 'interrupted' | 'non_finite';
  trainRows: number;
  validationRows: number;
  skippedRows: number;
  /** Loss read back at each log interval. */
  lossCurve: { step: number; loss: number }[];
  validation: { step: number; loss: number }[];
  bestValidationLoss: number | null;
  nonFiniteSteps: number;
  checkpoints: string[];
  evalFiles: string[];
  /**
   * kernelsPerStep: engine kernels of an eager step, GPU programs of a replayed one (replayedShare of
   * the measured steps were); programsPerStep: GPU programs (webgpu, else null); hostDispatchMsMedian:
   * the host's time issuing a step's work (forward/backward and optimizer spans).
   */
  timing: {
    stepMsMedian: number;
    samplesPerS: number;
    kernelsPerStep: number;
    programsPerStep: number | null;
    replayedShare: number;
    hostDispatchMsMedian: number;
    dataWaitShare: number;
  };
  /** What step capture did (device.step_capture), per bucket shape; null on data-parallel runs. */
  stepCapture: StepCaptureSummary | null;
  /** Garbage collection on the trainer's thread, which issues the device's work, over the run. */
  hostGc: HostGcSummary;
  /**
   * webgpu on one device: batches uploaded through a reused staging buffer, and those that went
   * through queue.writeBuffer because none was free (backend/webgpu-uploads.ts); null elsewhere.
   */
  batchUploads: { staged: number; missed: number } | null;
}

/** Where the run is, shared by the loop and its parts: the last step made, the next batch's place, what stopped it. */
export interface RunState {
  step: number;
  /** The next batch to train on (a checkpoint's resume point). */
  position: { epoch: number; batch: number };
  stoppedBy: TrainResult['stoppedBy'];
}
