// Reading a config: YAML with source positions (config-file.ts, config-source.ts), `extends` chains
// (extends.ts), `--set` overrides (overrides.ts), schema validation with ajv (schema-errors.ts). Every
// problem becomes a Finding with file:line:col; nothing here throws for a user mistake.
import { resolve } from 'node:path';
import { formatPosition, type SourcePosition, XttsError, ExitCode } from '../errors.js';
import { type ConfigSource, type KeyPath, locateIn, splitKeyPath } from './config-source.js';
import { mergeSources, readExtendsChain } from './extends.js';
import type { Finding } from './findings.js';
import { parseOverrides } from './overrides.js';
import { getValidator, nonFiniteFindings, schemaFindings } from './schema-errors.js';
import { ConfigSchema, type XttsConfig } from './schema.js';
import { shellQuote } from '../util/index.js';

export { type ConfigSource, type KeyPath, joinKeyPath, splitKeyPath } from './config-source.js';
export { parseConfigSource, readConfigText } from './config-file.js';
export { mergeConfig } from './extends.js';
export { parseOverrides } from './overrides.js';
export { PRESETS, presetPath, presetsDir } from './presets.js';

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
  /** The --set overrides it was loaded with, as given. */
  set?: readonly string[];
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
  const chain = readExtendsChain(file);
  findings.push(...chain.findings);
  sources.push(...chain.sources);
  if (findings.length) return { findings };

  const merged = mergeSources(sources);
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
    ...(options.set?.length ? { set: options.set } : {}),
  };
  return { loaded, findings };
}

/**
 * Refuses a `task: vocoder` config (TASK_NOT_ACOUSTIC, at its task key) for what works on the acoustic model only:
 * `what` says what the command does, `instead` what to do.
 */
export function requireAcousticTask(loaded: LoadedConfig, what: string, instead: string): void {
  if (loaded.config.task !== 'vocoder') return;
  throw new XttsError('TASK_NOT_ACOUSTIC', `${loaded.file}: task: vocoder — ${what}`, {
    exitCode: ExitCode.usage,
    position: loaded.locate('task') ?? { file: loaded.file },
    suggestions: [instead],
  });
}

/** Load a config for a command that needs a usable one: errors become one XttsError (exit 2). */
export function loadConfigOrThrow(file: string, options: LoadOptions = {}): LoadedConfig {
  const { loaded, findings } = loadConfig(file, options);
  const errors = findings.filter((f) => f.severity === 'error');
  if (loaded && errors.length === 0) return loaded;
  throw configInvalid(file, errors, options.set);
}

const DEFAULT_CACHE_PATH = (ConfigSchema.properties.pipeline.properties.cache.properties.path as { default: string })
  .default;

/** The feature cache a command means: --cache, else the config's pipeline.cache.path, else the default. */
export function resolveCachePath(options: { cache?: string; config?: string; set?: string[] }): string {
  if (options.cache) return resolve(options.cache);
  if (options.config) return loadConfigOrThrow(options.config, { set: options.set }).cachePath;
  return resolve(DEFAULT_CACHE_PATH);
}

/** CONFIG_INVALID for these error findings: each with its position, and the validator's command. */
/**
 * The config's errors as one usage error; `set`: the --set overrides it was loaded with (the command it suggests
 * repeats them).
 */
export function configInvalid(file: string, errors: readonly Finding[], set: readonly string[] = []): XttsError {
  const sets = set.map((x) => ` --set ${shellQuote(x)}`).join('');
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
      suggestions: [`run \`xtts validate-gpu-optimization --config ${file}${sets}\` for every finding with its fix`],
    },
  );
}
