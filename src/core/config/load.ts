// Reading a config: YAML with source positions, `extends` chains, `--set` overrides, schema
// validation with ajv. Every problem becomes a Finding with file:line:col; nothing here throws for
// a user mistake.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import {
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parse as parseYamlValue,
  parseDocument,
  visit,
  type Document,
  type Node,
  type Pair,
  type Scalar,
} from 'yaml';
import { formatPosition, type SourcePosition, XttsError, ExitCode } from '../errors.js';
import { didYouMean } from '../util/index.js';
import { type Finding, ruleDocsLink } from './findings.js';
import { ConfigSchema, type XttsConfig } from './schema.js';

export type KeyPath = (string | number)[];

/** One YAML file (or the `--set` overrides) that contributed values to a config. */
export interface ConfigSource {
  /** Path as the user gave it, or `--set` for command-line overrides. */
  file: string;
  /** Folder relative paths written in this source resolve against. */
  dir: string;
  doc?: Document;
  lineCounter?: LineCounter;
  /** For `--set`: the override text per dotted key. */
  overrides?: Map<string, string>;
  value: Record<string, unknown>;
}

export interface LoadedConfig {
  config: XttsConfig;
  /** The file the user named (first of `sources`). */
  file: string;
  /** Child first: the user's file, then what it extends, then the presets below; `--set` first of all. */
  sources: ConfigSource[];
  /** Absolute dataset root, resolved against the file that set `dataset.path`. */
  datasetDir: string;
  /** Absolute cache database path. */
  cachePath: string;
  /** Absolute run folder. */
  outputDir: string;
  /** Where a key (or its value) was written, for findings about it. */
  locate(path: KeyPath | string, which?: 'key' | 'value'): SourcePosition | undefined;
}

export interface LoadResult {
  /** Present when the config parsed and matched the schema (findings may still hold warnings). */
  loaded?: LoadedConfig;
  findings: Finding[];
}

export interface LoadOptions {
  /** `key.path=value` overrides, YAML scalars or flow collections (e.g. `training.learning_rate=3e-4`). */
  set?: readonly string[];
  /** Working directory for output and cache paths (default process.cwd()). */
  cwd?: string;
}

export const PRESETS = ['tiny', 'small', 'normal', 'big', 'quickstart', 'dual-gpu'] as const;
const MAX_EXTENDS_DEPTH = 8;

/**
 * The folder holding the YAML presets: $XTTS_CONFIGS_DIR, or the first `configs/` with the presets
 * above this module (the repository's, from src/core or src/core/dist), or beside a bundle.
 */
export function presetsDir(): string {
  if (process.env.XTTS_CONFIGS_DIR) return process.env.XTTS_CONFIGS_DIR;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'configs', 'tiny.yaml'))) return join(dir, 'configs');
    dir = dirname(dir);
  }
  return join(dirname(fileURLToPath(import.meta.url)), 'configs');
}

export function presetPath(name: string): string {
  return join(presetsDir(), `${name}.yaml`);
}

function finding(
  ruleId: string,
  message: string,
  position: SourcePosition | undefined,
  keyPath = '',
  fix?: string,
): Finding {
  return { ruleId, severity: 'error', message, keyPath, position, fix, docs: ruleDocsLink(ruleId) };
}

/** Read a config file as UTF-8 text, or say precisely why it cannot be. */
export function readConfigText(file: string): { text?: string; findings: Finding[] } {
  const pos = { file };
  let stat;
  try {
    stat = statSync(file);
  } catch {
    const presetHint = PRESETS.includes(file as (typeof PRESETS)[number]) ? `--config ${presetPath(file)}` : undefined;
    return {
      findings: [
        finding(
          'input/missing-file',
          `config file not found: ${file}`,
          pos,
          '',
          presetHint ?? `check the path, or start from a preset: ${PRESETS.map((p) => `configs/${p}.yaml`).join(', ')}`,
        ),
      ],
    };
  }
  if (stat.isDirectory()) {
    return {
      findings: [
        finding('input/not-a-file', `${file} is a folder, not a config file`, pos, '', 'name a .yaml file inside it'),
      ],
    };
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    return {
      findings: [
        finding(
          'input/unreadable',
          `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
          pos,
          '',
          "check the file's permissions",
        ),
      ],
    };
  }
  if (bytes.length === 0 || bytes.toString('utf8').trim() === '') {
    return {
      findings: [
        finding(
          'input/empty',
          `${file} is empty`,
          pos,
          '',
          'write at least `extends: quickstart` and a `dataset: {path: ...}` section',
        ),
      ],
    };
  }
  const nul = bytes.indexOf(0);
  if (nul !== -1) {
    return {
      findings: [
        finding(
          'input/binary',
          `${file} is a binary file (NUL byte at offset ${nul}), not YAML`,
          { file, ...lineColOfByte(bytes, nul) },
          '',
          'name the YAML config, not a data or model file',
        ),
      ],
    };
  }
  try {
    let text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return { text, findings: [] };
  } catch {
    const bad = firstInvalidUtf8(bytes);
    return {
      findings: [
        finding(
          'input/not-utf8',
          `${file} is not valid UTF-8 (byte 0x${bytes[bad].toString(16)} at offset ${bad})`,
          { file, ...lineColOfByte(bytes, bad) },
          '',
          'save the file as UTF-8',
        ),
      ],
    };
  }
}

function lineColOfByte(bytes: Buffer, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++)
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  return { line, col: offset - lineStart + 1 };
}

/** Offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629). */
function firstInvalidUtf8(bytes: Buffer): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const need =
      b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    for (let k = 1; k <= need; k++) if (i + k >= bytes.length || (bytes[i + k] & 0xc0) !== 0x80) return i;
    i += need + 1;
  }
  return bytes.length - 1;
}

/** The key path of the mapping key that starts at `offset` (for findings the parser reports by offset). */
function keyPathAt(doc: Document, offset: number): KeyPath {
  let found: KeyPath = [];
  visit(doc, {
    Pair(_key, pair, path) {
      const k = pair.key as Node | null;
      if (k && isScalar(k) && k.range && k.range[0] === offset) {
        found = [
          ...path.filter((n) => isPair(n)).map((n) => String(((n as Pair).key as Scalar).value)),
          String(k.value),
        ];
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Parse one YAML config file into a source; syntax errors and duplicate keys become findings. */
export function parseConfigSource(
  file: string,
  text: string,
  realPath?: string,
): { source?: ConfigSource; findings: Finding[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, lineCounter, prettyErrors: true });
  const findings: Finding[] = [];
  for (const err of doc.errors) {
    const [start] = err.linePos ?? [];
    const dup = err.code === 'DUPLICATE_KEY';
    const ruleId = dup ? 'schema/duplicate-key' : 'yaml/syntax';
    const message = dup
      ? `duplicate key: ${keyTextAt(text, err.pos[0])} is already set above in the same mapping`
      : err.message.split('\n')[0];
    findings.push(
      finding(
        ruleId,
        message,
        { file, line: start?.line, col: start?.col },
        dup ? joinKeyPath(keyPathAt(doc, err.pos[0])) : '',
        dup ? 'keep one of the two entries' : undefined,
      ),
    );
  }
  if (findings.length) return { findings };
  if (doc.contents === null) {
    return {
      findings: [
        finding(
          'input/empty',
          `${file} holds no settings (only comments or blank lines)`,
          { file },
          '',
          'write at least `extends: quickstart`',
        ),
      ],
    };
  }
  if (!isMap(doc.contents)) {
    const pos = positionOf(doc.contents, lineCounter, file);
    return {
      findings: [
        finding(
          'schema/type',
          `${file} must be a mapping of sections (dataset:, audio:, …), not ` +
            `a ${isSeq(doc.contents) ? 'list' : 'single value'}`,
          pos,
        ),
      ],
    };
  }
  // Keys that would change an object's prototype instead of setting a value are never settings.
  visit(doc, {
    Pair(_key, pair, path) {
      const k = pair.key as Node | null;
      if (k && isScalar(k) && FORBIDDEN_KEYS.has(String(k.value))) {
        const parents = path.filter((n) => isPair(n)).map((n) => String(((n as Pair).key as Scalar).value));
        const where = parents.length ? `in \`${parents.join('.')}\`` : 'at the top level';
        findings.push({
          ruleId: 'schema/unknown-key',
          severity: 'error',
          message: `unknown key \`${String(k.value)}\` ${where}`,
          keyPath: joinKeyPath([...parents, String(k.value)]),
          position: positionOf(k, lineCounter, file),
          fix: 'remove it',
          docs: ruleDocsLink('schema/unknown-key'),
        });
      }
      return undefined;
    },
  });
  if (findings.length) return { findings };
  let value: Record<string, unknown>;
  try {
    value = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  } catch (e) {
    return {
      findings: [
        finding(
          'yaml/syntax',
          `${file}: ${(e as Error).message.split('\n')[0]} (YAML aliases expand to too much data)`,
          { file, line: 1, col: 1 },
          '',
          'write the values out instead of nesting aliases',
        ),
      ],
    };
  }
  return { source: { file, dir: dirname(resolve(realPath ?? file)), doc, lineCounter, value }, findings };
}

/** Numbers that YAML allows but a config cannot use: .inf, -.inf, .nan. */
function nonFiniteFindings(value: unknown, sources: readonly ConfigSource[], path: KeyPath = []): Finding[] {
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

function keyTextAt(text: string, offset: number): string {
  const m = /^[^:\n]+/.exec(text.slice(offset));
  return m ? `\`${m[0].trim()}\`` : 'this key';
}

function positionOf(node: Node | null | undefined, lc: LineCounter, file: string): SourcePosition {
  if (!node?.range) return { file };
  const { line, col } = lc.linePos(node.range[0]);
  return { file, line, col };
}

/** The key and value nodes at `path` in a YAML document, as far down as the path exists. */
function findNodes(doc: Document, path: KeyPath): { key?: Node; value?: Node; depth: number } {
  let node: unknown = doc.contents;
  let key: Node | undefined;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === seg);
      if (!pair) return { key, value: node as Node, depth: i };
      key = pair.key as Node;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
      key = node.items[seg] as Node;
      node = node.items[seg];
    } else {
      return { key, value: node as Node, depth: i };
    }
  }
  return { key, value: node as Node, depth: path.length };
}

export function splitKeyPath(path: string): KeyPath {
  if (path === '') return [];
  return path.split('.').map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

export function joinKeyPath(path: KeyPath): string {
  return path.join('.');
}

function locateIn(sources: readonly ConfigSource[], path: KeyPath, which: 'key' | 'value'): SourcePosition | undefined {
  // The source that wrote the deepest part of the path wins; ties go to the child (earlier) source.
  let best: { pos: SourcePosition; depth: number } | undefined;
  for (const src of sources) {
    if (src.overrides) {
      for (const [k, text] of src.overrides) {
        const kp = splitKeyPath(k);
        const shared = kp.length <= path.length && kp.every((s, i) => s === path[i]) ? path.length : 0;
        if (shared && (!best || shared > best.depth)) best = { pos: { file: `--set ${k}=${text}` }, depth: shared };
      }
      continue;
    }
    if (!src.doc || !src.lineCounter) continue;
    const { key, value, depth } = findNodes(src.doc, path);
    if (depth === 0 && path.length > 0) continue;
    if (!best || depth > best.depth) {
      const node =
        depth === path.length && which === 'key' && key ? key : depth === path.length ? value : (key ?? value);
      best = { pos: positionOf(node, src.lineCounter, src.file), depth };
    }
  }
  const firstFile = sources.find((src) => !src.overrides);
  return best?.pos ?? (firstFile ? { file: firstFile.file } : sources[0] ? { file: sources[0].file } : undefined);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
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
        finding(
          'input/bad-override',
          `--set ${item}: expected key.path=value`,
          { file: `--set ${item}` },
          '',
          'e.g. --set training.learning_rate=3e-4',
        ),
      );
      continue;
    }
    const raw = item.slice(eq + 1);
    let parsed: unknown;
    try {
      parsed = raw === '' ? '' : parseYamlValue(raw);
    } catch (e) {
      findings.push(
        finding(
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
        finding(
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

let validator: ValidateFunction | undefined;
function getValidator(): ValidateFunction {
  validator ??= new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true }).compile(ConfigSchema);
  return validator;
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

function schemaFindings(errors: readonly ErrorObject[], sources: readonly ConfigSource[]): Finding[] {
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

function resolveExtends(ref: string, fromDir: string): string {
  if (PRESETS.includes(ref as (typeof PRESETS)[number]) && !/[\\/]|\.ya?ml$/.test(ref)) return presetPath(ref);
  return isAbsolute(ref) ? ref : resolve(fromDir, ref);
}

/**
 * Load a config: read and parse the file, follow `extends`, apply `--set`, fill defaults and check
 * the schema. Returns findings rather than throwing for anything the user wrote.
 */
export function loadConfig(file: string, options: LoadOptions = {}): LoadResult {
  const findings: Finding[] = [];
  const sources: ConfigSource[] = [];
  if (options.set?.length) {
    const o = parseOverrides(options.set);
    findings.push(...o.findings);
    if (o.source) sources.push(o.source);
  }
  const seen = new Set<string>();
  let current: string | undefined = file;
  let displayName = file;
  let extendedFrom: SourcePosition | undefined;
  while (current !== undefined) {
    const abs = resolve(current);
    if (seen.has(abs)) {
      findings.push(
        finding(
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
        finding(
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
        finding(
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
  if (findings.length) return { findings };

  let merged: Record<string, unknown> = {};
  for (const src of [...sources].reverse()) {
    const { extends: _ignored, ...rest } = src.value;
    merged = mergeConfig(merged, rest);
  }
  const nonFinite = nonFiniteFindings(merged, sources);
  if (nonFinite.length) return { findings: nonFinite };
  const validate = getValidator();
  if (!validate(merged)) {
    return { findings: schemaFindings(validate.errors ?? [], sources) };
  }
  const config = merged as XttsConfig;
  const cwd = options.cwd ?? process.cwd();
  const datasetOrigin = sources.find(
    (s) => (s.value.dataset as Record<string, unknown> | undefined)?.path !== undefined,
  );
  const datasetDir = resolve(datasetOrigin?.overrides ? cwd : (datasetOrigin?.dir ?? cwd), config.dataset.path);
  const loaded: LoadedConfig = {
    config,
    file,
    sources,
    datasetDir,
    cachePath: resolve(cwd, config.pipeline.cache.path),
    outputDir: resolve(cwd, config.output.dir),
    locate: (path, which = 'value') => locateIn(sources, typeof path === 'string' ? splitKeyPath(path) : path, which),
  };
  return { loaded, findings };
}

/** Load a config for a command that needs a usable one: errors become one XttsError (exit 2). */
export function loadConfigOrThrow(file: string, options: LoadOptions = {}): LoadedConfig {
  const { loaded, findings } = loadConfig(file, options);
  const errors = findings.filter((f) => f.severity === 'error');
  if (loaded && errors.length === 0) return loaded;
  throw configInvalid(file, errors);
}

/** CONFIG_INVALID for these error findings: each with its position, and the validator's command. */
export function configInvalid(file: string, errors: readonly Finding[]): XttsError {
  const lines = errors
    .slice(0, 10)
    .map(
      (f) =>
        (f.position ? `${formatPosition(f.position)}: ` : '') +
        `${f.message}` +
        (f.fix ? ` (fix: ${f.fix.split('\n')[0]})` : ''),
    );
  return new XttsError(
    'CONFIG_INVALID',
    `the config has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n  ${lines.join('\n  ')}`,
    {
      exitCode: ExitCode.usage,
      position: errors[0]?.position,
      suggestions: [`run \`xtts validate-gpu-optimization --config ${file}\` for every finding with its fix`],
    },
  );
}
