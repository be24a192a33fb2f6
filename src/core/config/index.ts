// The config API other subsystems and third-party plugins may use.
export * from './schema.js';
export { type Finding, type Severity, SEVERITIES, severityRank, countBySeverity, sortFindings } from './findings.js';
export {
  loadConfig,
  loadConfigOrThrow,
  requireAcousticTask,
  resolveCachePath,
  presetsDir,
  presetPath,
  PRESETS,
  type LoadedConfig,
  type LoadOptions,
  type LoadResult,
  type KeyPath,
} from './load.js';
export {
  lintConfig,
  RULES,
  TRAIN_BLOCKING_RULES,
  DATA_BLOCKING_RULES,
  effectiveWorkers,
  FP16_TRAINING_BACKENDS,
  type Rule,
} from './rules.js';
export { validateConfigFile, isInputFailure, type ValidationOptions, type ValidationReport } from './validate.js';
export { THRESHOLDS, THRESHOLD_MEANINGS, gradeInputWait } from './thresholds.js';
export { estimateParameters, estimateTrainingMemory, formatBytes, type MemoryEstimate } from './estimate.js';
export { batchSizeWithin, describeEstimate, trainingMemoryLimit } from './estimate.js';
export { ruleDocsLink } from './findings.js';
export { configInvalid } from './load.js';
export { type ConfigChange, patchConfigFile } from './patch.js';
