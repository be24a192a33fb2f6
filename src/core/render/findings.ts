// Rendering config findings: a readable report grouped by severity, and SARIF 2.1.0 for CI systems
// that annotate pull requests (GitHub code scanning, GitLab, Azure DevOps).
import { relative } from 'node:path';
import { formatPosition } from '../errors.js';
import type { Finding, Severity } from '../config/index.js';
import type { ValidationReport } from '../config/index.js';
import { RULES } from '../config/index.js';
import { paint, renderTable } from './style.js';

const ORDER: Severity[] = ['error', 'warn', 'info'];

export function renderValidationReport(report: ValidationReport): string {
  const out: string[] = [];
  out.push(paint.bold(`xtts validate-gpu-optimization — ${report.file}`));
  for (const sev of ORDER) {
    const group = report.findings.filter((f) => f.severity === sev);
    if (group.length === 0) continue;
    out.push('');
    out.push(`${paint.severity(sev)} (${group.length})`);
    const rows = group.map((f) => [f.position ? formatPosition(f.position) : '', f.ruleId, f.message, f.fix ?? '']);
    out.push(
      renderTable(['where', 'rule', 'finding', 'fix'], rows, {
        widths: columnWidths([0.22, 0.18, 0.36, 0.24]),
      }).trimEnd(),
    );
  }
  const m = report.memory;
  if (m)
    out.push(
      '',
      `training memory: ${m.description}` +
        (m.limitBytes !== null
          ? `; ${((m.estimateBytes / m.limitBytes) * 100).toFixed(0)}% of ${m.limit}`
          : ' (no limit known here: set device.model_memory_budget_mb to check it)'),
    );
  const { error, warn, info } = report.summary;
  const parts = `${error} error${error === 1 ? '' : 's'}, ${warn} warning${warn === 1 ? '' : 's'}, ${info} info`;
  out.push('');
  if (report.findings.length === 0) out.push(paint.ok(`✓ no findings — ${report.file} is ready to keep a GPU fed`));
  else if (report.passed) out.push(paint.ok(`✓ ${parts} (fail level: ${report.failSeverity})`));
  else out.push(paint.error(`✗ ${parts} (fail level: ${report.failSeverity})`));
  if (report.findings.length) out.push(paint.dim('rules are explained in docs/rules.md'));
  return out.join('\n');
}

/** Column widths that fit the terminal (120 columns when not a terminal), at least 10 each. */
function columnWidths(shares: number[]): Record<number, number> {
  const total = Math.max(80, process.stdout.columns || 120) - (3 * shares.length + 1);
  return Object.fromEntries(shares.map((s, i) => [i, Math.max(10, Math.floor(total * s))]));
}

const SARIF_LEVEL: Record<Severity, 'error' | 'warning' | 'note'> = { error: 'error', warn: 'warning', info: 'note' };

/** SARIF 2.1.0 log with one run; rules carry their docs text, results their positions and fixes. */
export function toSarif(report: ValidationReport, toolVersion: string): object {
  const ruleIds = [...new Set(report.findings.map((f) => f.ruleId))];
  const byId = new Map(RULES.map((r) => [r.id, r]));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'xtts validate-gpu-optimization',
            version: toolVersion,
            rules: ruleIds.map((id) => ({
              id,
              shortDescription: { text: byId.get(id)?.title ?? id },
              fullDescription: { text: byId.get(id)?.rationale ?? id },
              helpUri: report.findings.find((f) => f.ruleId === id)?.docs,
            })),
          },
        },
        results: report.findings.map((f: Finding) => ({
          ruleId: f.ruleId,
          level: SARIF_LEVEL[f.severity],
          message: { text: f.fix ? `${f.message}\nFix: ${f.fix}` : f.message },
          ...(f.position && !f.position.file.startsWith('--set')
            ? {
                locations: [
                  {
                    physicalLocation: {
                      artifactLocation: {
                        uri: relative(process.cwd(), f.position.file).split('\\').join('/') || f.position.file,
                      },
                      ...(f.position.line
                        ? { region: { startLine: f.position.line, startColumn: f.position.col ?? 1 } }
                        : {}),
                    },
                  },
                ],
              }
            : {}),
          properties: { keyPath: f.keyPath },
        })),
      },
    ],
  };
}
