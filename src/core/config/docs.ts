// Generates docs/config-reference.md, docs/rules.md and docs/exit-codes.md from the schema, the rule
// registry, the thresholds and ExitCode, so the docs cannot drift from the code.
import { readFileSync } from 'node:fs';
import type { TSchema } from '@sinclair/typebox';
import { ExitCode } from '../errors.js';
import { estimateParameters } from './estimate.js';
import { loadConfig, presetPath } from './load.js';
import { RULES } from './rules.js';
import { ConfigSchema } from './schema.js';
import { THRESHOLD_MEANINGS, THRESHOLDS } from './thresholds.js';

type SchemaNode = TSchema & Record<string, unknown>;

function typeOf(s: SchemaNode): string {
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((v) => `\`${v}\``).join(' \\| ');
  if (Array.isArray(s.anyOf)) return (s.anyOf as SchemaNode[]).map(typeOf).join(' \\| ');
  if ('const' in s) return `\`${JSON.stringify(s.const)}\``;
  if (s.type === 'array') return `list of ${typeOf(s.items as SchemaNode)}`;
  const bounds: string[] = [];
  if (typeof s.minimum === 'number') bounds.push(`≥ ${s.minimum}`);
  if (typeof s.exclusiveMinimum === 'number') bounds.push(`> ${s.exclusiveMinimum}`);
  if (typeof s.maximum === 'number') bounds.push(`≤ ${s.maximum}`);
  if (typeof s.exclusiveMaximum === 'number') bounds.push(`< ${s.exclusiveMaximum}`);
  return `${String(s.type)}${bounds.length ? ` (${bounds.join(', ')})` : ''}`;
}

function defaultOf(s: SchemaNode): string {
  if (!('default' in s)) return '—';
  const d = s.default;
  if (typeof d === 'object' && d !== null && !Array.isArray(d) && Object.keys(d).length === 0) return '';
  return `\`${JSON.stringify(d)}\``;
}

function rows(schema: SchemaNode, prefix: string, out: string[]): void {
  const props = (schema.properties ?? {}) as Record<string, SchemaNode>;
  for (const [key, child] of Object.entries(props)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (child.type === 'object' && child.properties) {
      rows(child, path, out);
      continue;
    }
    const desc = String(child.description ?? '')
      .replace(/\|/g, '\\|')
      .replace(/\n/g, ' ');
    out.push(`| \`${path}\` | ${typeOf(child)} | ${defaultOf(child)} | ${desc} |`);
  }
}

export function generateConfigReference(): string {
  const out: string[] = [
    '# Config reference',
    '',
    '<!-- Generated from src/core/config/schema.ts by `npm run build`; do not edit by hand. -->',
    '',
    'An xtts config is a YAML file validated against one JSON Schema (`docs/config.schema.json`).',
    'Numbers may be written as `1e-4` (YAML 1.2). A config may `extends:` a preset (`tiny`, `small`, `normal`,',
    "`big`, `quickstart`, `dual-gpu`) or another file; its values then override the preset's. Any key can be",
    'overridden on the command line: `--set training.learning_rate=3e-4`. Check a config with',
    '`xtts validate-gpu-optimization --config FILE`.',
    '',
    '## Presets',
    '',
    '| preset | d_model | layers (text/cond/decoder) | heads | batch | parameters (estimate) |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const name of ['tiny', 'small', 'normal', 'big']) {
    const { loaded } = loadConfig(presetPath(name));
    if (!loaded) continue;
    const m = loaded.config.model;
    out.push(
      `| \`${name}\` | ${m.d_model} ` +
        `| ${m.text_layers}/${m.cond_layers}/${m.decoder_layers} | ${m.heads} ` +
        `| ${loaded.config.batching.batch_size} ` +
        `| ${(estimateParameters(loaded.config) / 1e6).toFixed(2)} M |`,
    );
  }
  const root = ConfigSchema as unknown as SchemaNode;
  for (const [section, schema] of Object.entries(root.properties as Record<string, SchemaNode>)) {
    out.push('', `## \`${section}\``, '');
    out.push(String(schema.description ?? ''), '');
    if (schema.type !== 'object') {
      out.push('| key | type | default | meaning |', '| --- | --- | --- | --- |');
      out.push(`| \`${section}\` | ${typeOf(schema)} | ${defaultOf(schema)} | ${String(schema.description ?? '')} |`);
      continue;
    }
    out.push('| key | type | default | meaning |', '| --- | --- | --- | --- |');
    rows(schema, section, out);
  }
  return `${out.join('\n')}\n`;
}

export function generateRulesDoc(): string {
  const out: string[] = [
    '# Config rules',
    '',
    '<!-- Generated from src/core/config/rules.ts and thresholds.ts by `npm run build`; do not edit by hand. -->',
    '',
    '`xtts validate-gpu-optimization` checks the schema (ids `schema/*`, `yaml/*`, `input/*`, `config/*`) and then',
    'these rules. Each finding names its rule id, a severity, the file position, and the YAML to write instead.',
    'Rules marked *machine* look at the host the command runs on; `--no-environment` skips them.',
    '',
    '## Schema and input findings',
    '',
    '### schema-unknown-key',
    'A key the schema does not know; usually a typo — the finding suggests the closest known key.',
    '### schema-duplicate-key',
    'The same key twice in one mapping; YAML would silently keep the last one.',
    '### schema-missing-key',
    'A required key is absent.',
    '### schema-type',
    'A value of the wrong type (a string where a number belongs, say).',
    '### schema-enum',
    'A value outside the allowed set; a close match is suggested.',
    '### schema-range',
    'A number outside its range, an empty string or list, or a malformed language code.',
    '### yaml-syntax',
    'The file is not valid YAML.',
    '### input-missing-file',
    '### input-not-a-file',
    '### input-unreadable',
    '### input-empty',
    '### input-binary',
    '### input-not-utf8',
    'The config could not be read as a UTF-8 YAML file; the command exits with code 2.',
    '### input-bad-override',
    'A `--set` flag is not `key.path=value` or its value is not valid YAML.',
    '### config-extends-cycle',
    '### config-extends-depth',
    '`extends` loops back to a file already in the chain, or chains too many files.',
    '',
    '## GPU-feeding rules',
  ];
  for (const r of RULES) {
    out.push(
      '',
      `### ${r.id.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}`,
      '',
      `**${r.title}** — \`${r.id}\`, ${r.severity}${r.environment ? ', *machine*' : ''}.`,
      '',
      r.rationale,
    );
  }
  out.push(
    '',
    '## Thresholds',
    '',
    'All xtts tools share these (src/core/config/thresholds.ts): the validator, ' +
      '`analyze-data-pipeline`, `profile-bottleneck` and `diagnose-gpu-utilization`. ' +
      'The last two take `--threshold NAME=VALUE` to override one for a run.',
    '',
    '| name | value | meaning |',
    '| --- | --- | --- |',
  );
  for (const [k, v] of Object.entries(THRESHOLDS))
    out.push(`| \`${k}\` | ${v} | ${THRESHOLD_MEANINGS[k as keyof typeof THRESHOLDS]} |`);
  return `${out.join('\n')}\n`;
}

const EXIT_MEANING: Record<string, string> = {
  ok: 'Success; for linters, no finding at or above the fail level.',
  findings:
    'Findings at or above the fail level, a run that failed, or work done in part ' +
    '(`synthesize --texts` with lines it could not speak: the others are spoken).',
  usage: 'Usage or input error: a bad flag, or a file that cannot be read or parsed.',
  environment: 'The environment cannot do what was asked: backend not installed, no device, out of device memory.',
  hangup:
    'Hung up (SIGHUP: the terminal or SSH session closed, or the reader of its output left) after saving ' +
    'what could be saved.',
  interrupted: 'Interrupted (Ctrl-C) after saving what could be saved.',
  terminated: 'Terminated (SIGTERM: `docker stop`, Kubernetes, Slurm preemption) after saving what could be saved.',
};

export function generateExitCodesDoc(): string {
  const out = [
    '# Exit codes',
    '',
    '<!-- Generated from src/core/errors.ts by `npm run build`; do not edit by hand. -->',
    '',
    'Every xtts command and utility binary exits with one of these. With `--json`, stdout holds exactly one',
    'JSON envelope: `{"status": "success" | "findings" | "interrupted", "result": …, "warnings": […]}` or',
    '`{"status": "error", "error": {"code", "message", "suggestions"}, "warnings": […]}`. The status follows the',
    'exit code: `success` for 0, `findings` for 1 (the result is there: what was found, or what was done in',
    'part), `interrupted` for 129, 130 and 143 (the result so far; `null` where the signal came before there was',
    'any, or a second signal ended the command at once, with the reason in `warnings`), `error` for any other.',
    '',
    '| code | name | meaning |',
    '| --- | --- | --- |',
  ];
  for (const [name, code] of Object.entries(ExitCode))
    out.push(`| ${code} | \`${name}\` | ${EXIT_MEANING[name] ?? ''} |`);
  return `${out.join('\n')}\n`;
}

export function generateJsonSchema(): string {
  return `${JSON.stringify(ConfigSchema, null, 2)}\n`;
}

/** Every generated doc, by path relative to the repository root. */
export function generatedDocs(): Record<string, string> {
  return {
    'docs/config-reference.md': generateConfigReference(),
    'docs/rules.md': generateRulesDoc(),
    'docs/exit-codes.md': generateExitCodesDoc(),
    'docs/config.schema.json': generateJsonSchema(),
  };
}

/** Paths whose content on disk differs from what would be generated. */
export function staleDocs(repoRoot: string): string[] {
  const stale: string[] = [];
  for (const [rel, text] of Object.entries(generatedDocs())) {
    let current = '';
    try {
      current = readFileSync(`${repoRoot}/${rel}`, 'utf8');
    } catch {
      /* missing counts as stale */
    }
    if (current !== text) stale.push(rel);
  }
  return stale;
}
