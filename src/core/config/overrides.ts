// `--set key.path=value`: command-line overrides as one more config source, over all the files.
import { parse as parseYamlValue } from 'yaml';
import { FORBIDDEN_KEYS } from './config-file.js';
import type { ConfigSource } from './config-source.js';
import { isPlainObject } from './extends.js';
import { errorFinding, type Finding } from './findings.js';
import { shellQuote } from '../util/index.js';

function forbiddenKeyIn(value: unknown, depth = 0): string | undefined {
  if (depth > 64 || value === null || typeof value !== 'object') return undefined;
  for (const k of Object.keys(value)) {
    if (FORBIDDEN_KEYS.has(k)) return k;
    const inner = forbiddenKeyIn((value as Record<string, unknown>)[k], depth + 1);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

/** Parse `--set key.path=value` flags into one override object. */
export function parseOverrides(set: readonly string[]): { source?: ConfigSource; findings: Finding[] } {
  const findings: Finding[] = [];
  const value: Record<string, unknown> = {};
  const overrides = new Map<string, string>();
  for (const item of set) {
    const eq = item.indexOf('=');
    const keyPath = eq > 0 ? item.slice(0, eq).trim() : '';
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/.test(keyPath)) {
      findings.push(
        errorFinding(
          'input/bad-override',
          'expected key.path=value',
          { file: `--set ${item}` },
          '',
          'e.g. --set training.learning_rate=3e-4',
        ),
      );
      continue;
    }
    const raw = item.slice(eq + 1);
    // Outside quotes, YAML takes ` #` as the start of a comment and folds a newline into a space: a path such as
    // `/data/take #2/c.sqlite` would become `/data/take` (and files would be written there), silently.
    const unquoted = raw.replace(/"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'/g, '');
    if (/(^|\s)#|\n/.test(unquoted)) {
      findings.push(
        errorFinding(
          'input/bad-override',
          `--set ${JSON.stringify(item)}: the value is read as YAML, where ${
            /\n/.test(unquoted) ? 'a newline folds into a space' : '` #` starts a comment that drops the rest'
          }`,
          { file: `--set ${item}` },
          keyPath,
          // A JSON string is a YAML double-quoted scalar (its escapes included), shell-quoted as one argument.
          `quote the value inside the argument, e.g. --set ${shellQuote(`${keyPath}=${JSON.stringify(raw)}`)}`,
        ),
      );
      continue;
    }
    let parsed: unknown;
    try {
      parsed = raw === '' ? '' : parseYamlValue(raw);
    } catch (e) {
      findings.push(
        errorFinding(
          'input/bad-override',
          `--set ${item}: the value is not valid YAML (${(e as Error).message.split('\n')[0]})`,
          { file: `--set ${item}` },
          keyPath,
          'quote strings that contain YAML syntax',
        ),
      );
      continue;
    }
    // Keys that would reach an object's prototype are refused, in the path and inside a mapping value,
    // as the YAML reader refuses them in files: never applied, never silently dropped.
    const forbidden = keyPath.split('.').find((p) => FORBIDDEN_KEYS.has(p)) ?? forbiddenKeyIn(parsed);
    if (forbidden !== undefined) {
      findings.push(
        errorFinding(
          'schema/unknown-key',
          `--set ${item}: \`${forbidden}\` is not a setting (a key that would change an object's prototype)`,
          { file: `--set ${item}` },
          keyPath,
          'remove this --set',
        ),
      );
      continue;
    }
    let cursor = value;
    const parts = keyPath.split('.');
    for (const p of parts.slice(0, -1)) {
      if (!isPlainObject(cursor[p])) cursor[p] = {};
      cursor = cursor[p] as Record<string, unknown>;
    }
    cursor[parts[parts.length - 1]] = parsed;
    overrides.set(keyPath, raw);
  }
  if (findings.length) return { findings };
  return { source: { file: '--set', dir: process.cwd(), overrides, value }, findings };
}
