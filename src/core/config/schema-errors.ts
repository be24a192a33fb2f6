// Schema validation (ajv) and its errors as findings: what the key must be, what it got, and where.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { didYouMean } from '../util/index.js';
import { type ConfigSource, joinKeyPath, type KeyPath, locateIn } from './config-source.js';
import { type Finding, ruleDocsLink } from './findings.js';
import { ConfigSchema } from './schema.js';

let validator: ValidateFunction | undefined;

export function getValidator(): ValidateFunction {
  validator ??= new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true }).compile(ConfigSchema);
  return validator;
}

/** Numbers that YAML allows but a config cannot use: .inf, -.inf, .nan. */
export function nonFiniteFindings(value: unknown, sources: readonly ConfigSource[], path: KeyPath = []): Finding[] {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    const what = Number.isNaN(value) ? '.nan (not a number)' : value > 0 ? '.inf (infinity)' : '-.inf (minus infinity)';
    return [
      {
        ruleId: 'schema/type',
        severity: 'error',
        message: `\`${joinKeyPath(path)}\` is ${what}; it must be a finite number`,
        keyPath: joinKeyPath(path),
        position: locateIn(sources, path, 'value'),
        docs: ruleDocsLink('schema/type'),
      },
    ];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => nonFiniteFindings(v, sources, [...path, i]));
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => nonFiniteFindings(v, sources, [...path, k]));
  return [];
}

/** Human-readable description of what a schema node accepts. */
function describeSchema(schema: Record<string, unknown> | undefined): string {
  if (!schema) return 'a valid value';
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Record<string, unknown>[]).map(describeSchema).join(', or ');
  if ('const' in schema) return JSON.stringify(schema.const);
  const t = schema.type as string | undefined;
  const bounds: string[] = [];
  if (typeof schema.minimum === 'number') bounds.push(`≥ ${schema.minimum}`);
  if (typeof schema.exclusiveMinimum === 'number') bounds.push(`> ${schema.exclusiveMinimum}`);
  if (typeof schema.maximum === 'number') bounds.push(`≤ ${schema.maximum}`);
  if (typeof schema.exclusiveMaximum === 'number') bounds.push(`< ${schema.exclusiveMaximum}`);
  const noun =
    t === 'integer'
      ? 'a whole number'
      : t === 'number'
        ? 'a number'
        : t === 'string'
          ? 'a string'
          : t === 'boolean'
            ? 'true or false'
            : t === 'null'
              ? 'null'
              : t === 'array'
                ? 'a list'
                : t === 'object'
                  ? 'a mapping'
                  : 'a valid value';
  return bounds.length ? `${noun} ${bounds.join(' and ')}` : noun;
}

function showValue(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

export function schemaFindings(errors: readonly ErrorObject[], sources: readonly ConfigSource[]): Finding[] {
  const out: Finding[] = [];
  // An anyOf failure also reports one error per arm; keep only the anyOf for that path.
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const e of errors) {
    if (
      e.keyword !== 'anyOf' &&
      e.keyword !== 'additionalProperties' &&
      e.keyword !== 'required' &&
      anyOfPaths.has(e.instancePath)
    )
      continue;
    if (e.keyword !== 'anyOf' && [...anyOfPaths].some((p) => e.instancePath.startsWith(`${p}/`))) continue;
    const path: KeyPath = e.instancePath
      .split('/')
      .slice(1)
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s.replace(/~1/g, '/').replace(/~0/g, '~')));
    const parent = e.parentSchema as Record<string, unknown> | undefined;
    if (e.keyword === 'additionalProperties') {
      const key = (e.params as { additionalProperty: string }).additionalProperty;
      const known = Object.keys((parent?.properties as Record<string, unknown>) ?? {});
      const guess = didYouMean(key, known);
      const where = path.length ? `in \`${joinKeyPath(path)}\`` : 'at the top level';
      const full = [...path, key];
      out.push({
        ruleId: 'schema/unknown-key',
        severity: 'error',
        message: `unknown key \`${key}\` ${where}${guess ? ` — did you mean \`${guess}\`?` : ''}`,
        keyPath: joinKeyPath(full),
        position: locateIn(sources, full, 'key'),
        fix: guess ? `rename it: ${guess}: ...` : `remove it; known keys here: ${known.join(', ')}`,
        docs: ruleDocsLink('schema/unknown-key'),
      });
    } else if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      out.push({
        ruleId: 'schema/missing-key',
        severity: 'error',
        message: `\`${joinKeyPath([...path, missing])}\` is required`,
        keyPath: joinKeyPath([...path, missing]),
        position: locateIn(sources, path, 'key'),
        fix:
          missing === 'dataset' || (missing === 'path' && joinKeyPath(path) === 'dataset')
            ? 'dataset:\n  path: path/to/dataset   # folder with metadata.csv and wavs/'
            : `${missing}: ...`,
        docs: ruleDocsLink('schema/missing-key'),
      });
    } else {
      const expected = describeSchema(e.keyword === 'anyOf' ? parent : (e.parentSchema as Record<string, unknown>));
      let message = `\`${joinKeyPath(path)}\` must be ${expected}, got ${showValue(e.data)}`;
      let fix: string | undefined;
      if (e.keyword === 'enum' && typeof e.data === 'string') {
        const guess = didYouMean(e.data, (e.params as { allowedValues: string[] }).allowedValues.map(String));
        if (guess) {
          message += ` — did you mean ${JSON.stringify(guess)}?`;
          fix = `${path[path.length - 1]}: ${guess}`;
        }
      } else if (e.keyword === 'pattern') {
        message = `\`${joinKeyPath(path)}\` = ${showValue(e.data)} is not a language code like "en" or "pt-br"`;
      } else if (e.keyword === 'uniqueItems') {
        message = `\`${joinKeyPath(path)}\` lists the same item twice`;
      } else if (e.keyword === 'minLength' || e.keyword === 'minItems') {
        message = `\`${joinKeyPath(path)}\` must not be empty`;
      }
      out.push({
        ruleId:
          e.keyword === 'enum'
            ? 'schema/enum'
            : e.keyword === 'type' || e.keyword === 'anyOf'
              ? 'schema/type'
              : 'schema/range',
        severity: 'error',
        message,
        keyPath: joinKeyPath(path),
        position: locateIn(sources, path, 'value'),
        fix,
        docs: ruleDocsLink(
          e.keyword === 'enum'
            ? 'schema/enum'
            : e.keyword === 'type' || e.keyword === 'anyOf'
              ? 'schema/type'
              : 'schema/range',
        ),
      });
    }
  }
  return out;
}
