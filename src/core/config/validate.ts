// `xtts validate-gpu-optimization` as one core call: load (positions, schema) then lint (rules).
import { countBySeverity, type Finding, type Severity, severityRank, sortFindings } from './findings.js';
import { loadConfig } from './load.js';
import { describeEstimate, estimateTrainingMemory } from './estimate.js';
import { hostInventory } from '../env/index.js';
import { lintConfig, memoryLimitFor } from './rules.js';
import { atTrainedBatch } from './rules-batching.js';

export interface ValidationOptions {
  set?: readonly string[];
  /** Run the checks that look at this machine (dataset on disk, backends, GPUs, cores). */
  environment?: boolean;
  failSeverity?: Severity;
}

export interface ValidationReport {
  file: string;
  /** Whether the config parsed and matched the schema (rules only run when it did). */
  schemaValid: boolean;
  findings: Finding[];
  summary: Record<Severity, number>;
  failSeverity: Severity;
  /** No finding at or above failSeverity. */
  passed: boolean;
  /**
   * Training memory at the largest batch, and what it must fit in (null: not known here); absent when the config did
   * not load, and for a vocoder's config (the estimate is the acoustic model's: it said 10 M parameters and 2.8 GiB
   * of vocoder-tiny's 1.6 M, whatever vocoder.channels).
   */
  memory?: {
    estimateBytes: number;
    parameters: number;
    description: string;
    limitBytes: number | null;
    limit: string | null;
  };
}

export function validateConfigFile(file: string, options: ValidationOptions = {}): ValidationReport {
  const failSeverity = options.failSeverity ?? 'error';
  const { loaded, findings } = loadConfig(file, { set: options.set });
  const all = loaded ? [...findings, ...lintConfig(loaded, { environment: options.environment })] : findings;
  const sorted = sortFindings(all);
  let memory: ValidationReport['memory'];
  if (loaded && loaded.config.task !== 'vocoder') {
    const host = options.environment === false ? undefined : hostInventory();
    const trained = atTrainedBatch({ loaded, config: loaded.config, host });
    const est = estimateTrainingMemory(trained.config);
    const limit = memoryLimitFor({ config: loaded.config, host });
    const known = limit && Number.isFinite(limit.bytes) ? limit : undefined;
    memory = {
      estimateBytes: est.totalBytes,
      parameters: est.parameters,
      description: describeEstimate(trained.config, est) + trained.note,
      limitBytes: known?.bytes ?? null,
      limit: known ? known.what : null,
    };
  }
  return {
    file,
    schemaValid: loaded !== undefined,
    ...(memory ? { memory } : {}),
    findings: sorted,
    summary: countBySeverity(sorted),
    failSeverity,
    passed: !sorted.some((f) => severityRank(f.severity) >= severityRank(failSeverity)),
  };
}

/** Findings that come from reading the file (unreadable, not YAML) rather than from its content. */
export function isInputFailure(report: ValidationReport): boolean {
  return report.findings.some((f) => f.ruleId.startsWith('input/') || f.ruleId === 'yaml/syntax');
}
