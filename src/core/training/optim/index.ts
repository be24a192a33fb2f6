// What other subsystems use of the optimisation math.
export { AdamW, type AdamWOptions, type ApplyResult, type OptimizerConfig } from './adamw.js';
export { clipByGlobalNorm, clipFactor, globalNorm } from './clip.js';
export { learningRateAt, type ScheduleConfig } from './schedule.js';
export {
  disposeStepResult,
  STEP_STATS,
  stepResultTensors,
  type StepResult,
  trainStep,
  type TrainStepOptions,
} from './train-step.js';
