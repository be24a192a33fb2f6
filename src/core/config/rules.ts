// The config linter's rules: what keeps a GPU fed in this engine. Each rule has a stable id, a
// default severity, a docs paragraph (docs/rules.md is generated from these) and a check that
// returns findings with positions and the YAML to write instead. The rules live in a file per topic
// (rules-*.ts); RULES lists them in the order docs/rules.md and the linter use.
import { hostInventory } from '../env/index.js';
import { FP16_TRAINING_BACKENDS } from '../backend/index.js';
import { type Finding, ruleDocsLink } from './findings.js';
import type { LoadedConfig } from './load.js';
import type { Rule, RuleContext } from './rule-context.js';
import {
  batchingMemoryRule,
  batchingReferenceFramesRule,
  batchingSmallBatchRule,
  batchingVoiceAugmentationRule,
} from './rules-batching.js';
import { batchingStaticShapesRule } from './rules-batching.js';
import { audioConsistencyRule, datasetPathRule, datasetRowsRule, modelShapeRule } from './rules-data.js';
import { deviceBackendRule, deviceDualGpuRule } from './rules-device.js';
import { pipelineCacheRule, pipelinePrefetchDepthRule, pipelinePrefetchMemoryRule } from './rules-pipeline.js';
import { pipelineWorkersVsCoresRule } from './rules-pipeline.js';
import { trainingEvalSentencesRule, trainingIntervalsRule, trainingLogSyncRule } from './rules-training.js';
import { trainingOptimizerRule, trainingPrecisionRule } from './rules-training.js';
import { textEspeakRule, textLanguagesRule } from './rules-text.js';
import { vocoderAcousticKeysRule, vocoderCheckpointsRule, vocoderShapeRule } from './rules-vocoder.js';
import type { XttsConfig } from './schema.js';

export type { Rule, RuleContext } from './rule-context.js';
export { memoryLimitFor } from './rules-batching.js';

/** Workers the pipeline will really run: `auto` is cores - 1 (one core stays with the trainer). */
export function effectiveWorkers(config: XttsConfig, cpuCores: number): number {
  return config.pipeline.workers === 'auto' ? Math.max(1, cpuCores - 1) : config.pipeline.workers;
}

export { FP16_TRAINING_BACKENDS };

export const RULES: Rule[] = [
  datasetPathRule,
  datasetRowsRule,
  audioConsistencyRule,
  modelShapeRule,
  textLanguagesRule,
  textEspeakRule,
  pipelineWorkersVsCoresRule,
  pipelinePrefetchDepthRule,
  pipelineCacheRule,
  batchingStaticShapesRule,
  batchingMemoryRule,
  batchingSmallBatchRule,
  pipelinePrefetchMemoryRule,
  deviceBackendRule,
  deviceDualGpuRule,
  trainingPrecisionRule,
  trainingOptimizerRule,
  trainingEvalSentencesRule,
  batchingReferenceFramesRule,
  batchingVoiceAugmentationRule,
  trainingIntervalsRule,
  trainingLogSyncRule,
  vocoderShapeRule,
  vocoderCheckpointsRule,
  vocoderAcousticKeysRule,
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
export const TRAIN_BLOCKING_RULES = [
  'batching/memory',
  'audio/consistency',
  'model/shape',
  'text/languages',
  'training/precision',
  'training/optimizer',
  'training/eval-sentences',
  'batching/reference-frames',
  'vocoder/shape',
] as const;

/**
 * The blocking rules about what the data pipeline reads and computes (texts, features, reference windows):
 * `analyze-data-pipeline` refuses a config with their errors as `train` does, rather than time a pipeline no run
 * would use.
 */
export const DATA_BLOCKING_RULES = [
  'audio/consistency',
  'text/languages',
  'batching/reference-frames',
] as const satisfies readonly (typeof TRAIN_BLOCKING_RULES)[number][];

export function lintConfig(loaded: LoadedConfig, options: LintOptions = {}): Finding[] {
  const useEnv = options.environment !== false;
  const ctx: RuleContext = { loaded, config: loaded.config, host: useEnv ? hostInventory() : undefined };
  const out: Finding[] = [];
  for (const rule of RULES) {
    if ((rule.environment && !useEnv) || (options.only && !options.only.includes(rule.id))) continue;
    if (rule.tasks && !rule.tasks.includes(loaded.config.task)) continue;
    for (const d of rule.check(ctx)) out.push({ ...d, ruleId: rule.id, docs: ruleDocsLink(rule.id) });
  }
  return out;
}
