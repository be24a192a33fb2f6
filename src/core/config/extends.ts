// `extends` chains: the user's file, the file or preset it extends, and so on, layered child over parent.
import { isAbsolute, relative, resolve } from 'node:path';
import type { SourcePosition } from '../errors.js';
import { FORBIDDEN_KEYS, parseConfigSource, readConfigText } from './config-file.js';
import { type ConfigSource, locateIn } from './config-source.js';
import { errorFinding, type Finding } from './findings.js';
import { PRESETS, presetPath } from './presets.js';

const MAX_EXTENDS_DEPTH = 8;

/** Whether an `extends` value names a bundled preset (a bare name: no folder, no .yaml), not a file. */
export function isPresetName(ref: string): boolean {
  return PRESETS.includes(ref as (typeof PRESETS)[number]) && !/[\\/]|\.ya?ml$/.test(ref);
}

function resolveExtends(ref: string, fromDir: string): string {
  if (isPresetName(ref)) return presetPath(ref);
  return isAbsolute(ref) ? ref : resolve(fromDir, ref);
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge: objects merge key by key, everything else (arrays included) is replaced by `over`. */
export function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (FORBIDDEN_KEYS.has(k)) continue;
    out[k] = isPlainObject(v) && isPlainObject(out[k]) ? mergeConfig(out[k] as Record<string, unknown>, v) : v;
  }
  return out;
}

/**
 * Read the user's file and each file its `extends` names, child first, as sources. A cycle, a chain too
 * deep or a broken `extends` target ends the chain with a finding at the `extends` line that led there.
 */
export function readExtendsChain(file: string): { sources: ConfigSource[]; findings: Finding[] } {
  const findings: Finding[] = [];
  const sources: ConfigSource[] = [];
  const seen = new Set<string>();
  let current: string | undefined = file;
  let displayName = file;
  let extendedFrom: SourcePosition | undefined;
  while (current !== undefined) {
    const abs = resolve(current);
    if (seen.has(abs)) {
      findings.push(
        errorFinding(
          'config/extends-cycle',
          `\`extends\` forms a cycle back to ${displayName}`,
          extendedFrom,
          'extends',
          'remove one of the `extends` lines',
        ),
      );
      break;
    }
    if (seen.size >= MAX_EXTENDS_DEPTH) {
      findings.push(
        errorFinding(
          'config/extends-depth',
          `\`extends\` chains more than ${MAX_EXTENDS_DEPTH} files`,
          extendedFrom,
          'extends',
        ),
      );
      break;
    }
    seen.add(abs);
    const read = readConfigText(current);
    if (extendedFrom && read.findings.length) {
      // A broken `extends` target is reported where the `extends` line is.
      for (const f of read.findings)
        findings.push({
          ...f,
          message: `extends: ${f.message}`,
          position: f.ruleId === 'input/missing-file' ? extendedFrom : f.position,
          keyPath: 'extends',
          fix:
            f.ruleId === 'input/missing-file'
              ? `extends: one of ${PRESETS.join(', ')}, or a path relative to this file`
              : f.fix,
        });
      break;
    }
    findings.push(...read.findings);
    if (read.text === undefined) break;
    const parsed = parseConfigSource(displayName, read.text, current);
    findings.push(...parsed.findings);
    if (!parsed.source) break;
    sources.push(parsed.source);
    const ext = parsed.source.value.extends;
    if (ext === undefined) break;
    if (typeof ext !== 'string' || ext === '') {
      findings.push(
        errorFinding(
          'schema/type',
          '`extends` must be a preset name or a path',
          locateIn([parsed.source], ['extends'], 'value'),
          'extends',
          `extends: quickstart   # one of ${PRESETS.join(', ')}`,
        ),
      );
      break;
    }
    extendedFrom = locateIn([parsed.source], ['extends'], 'value');
    current = resolveExtends(ext, parsed.source.dir);
    // Positions name a file that exists from where the user is: relative when inside the working directory.
    const rel = relative(process.cwd(), current);
    displayName = rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : current;
  }
  return { sources, findings };
}

/** The sources' values layered into one: each parent under its child, `--set` over all; `extends` is dropped. */
export function mergeSources(sources: readonly ConfigSource[]): Record<string, unknown> {
  let merged: Record<string, unknown> = {};
  for (const src of [...sources].reverse()) {
    const { extends: _ignored, ...rest } = src.value;
    merged = mergeConfig(merged, rest);
  }
  return merged;
}
