import type { SourcePosition } from '../errors.js';

export const SEVERITIES = ['error', 'warn', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** severityRank('error') > severityRank('warn') > severityRank('info'). */
export function severityRank(s: Severity): number {
  return s === 'error' ? 3 : s === 'warn' ? 2 : 1;
}

/** One thing a config check found: what, where, and the YAML to write instead. */
export interface Finding {
  /** Stable id, e.g. `schema/unknown-key` or `pipeline/workers-vs-cores`. */
  ruleId: string;
  severity: Severity;
  message: string;
  /** Dotted key path in the config, e.g. `training.learning_rate` ('' for the whole file). */
  keyPath: string;
  position?: SourcePosition;
  /** A concrete fix: the YAML to write, or what to do. */
  fix?: string;
  /** Page in docs/ that explains the rule. */
  docs: string;
}

export const DOCS_BASE = 'docs/rules.md';

export function ruleDocsLink(ruleId: string): string {
  return `${DOCS_BASE}#${ruleId.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`;
}

/**
 * An error the loader finds (ids under input/, yaml/, schema/ and config/): it has an id and a docs paragraph,
 * but no rule object.
 */
export function errorFinding(
  ruleId: string,
  message: string,
  position: SourcePosition | undefined,
  keyPath = '',
  fix?: string,
): Finding {
  return { ruleId, severity: 'error', message, keyPath, position, fix, docs: ruleDocsLink(ruleId) };
}

export function countBySeverity(findings: readonly Finding[]): Record<Severity, number> {
  const counts: Record<Severity, number> = { error: 0, warn: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  return counts;
}

/** Findings ordered by severity (errors first), then by file position. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return [...findings].sort(
    (a, b) =>
      severityRank(b.severity) - severityRank(a.severity) ||
      (a.position?.file ?? '').localeCompare(b.position?.file ?? '') ||
      (a.position?.line ?? 0) - (b.position?.line ?? 0) ||
      (a.position?.col ?? 0) - (b.position?.col ?? 0),
  );
}
