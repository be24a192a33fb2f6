// The feature cache's public API, and the three operations behind `xtts cache stats|verify|clear`.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ExitCode, XttsError } from '../errors.js';
import { loadConfigOrThrow } from '../config/index.js';
import { ConfigSchema } from '../config/index.js';
import { clearCache, FeatureCache, type CacheStats, type VerifyReport } from './cache.js';

export {
  FeatureCache,
  clearCache,
  identifyCache,
  contentKey,
  canonicalJson,
  sha256Hex,
  CACHE_SCHEMA_VERSION,
  CACHE_APPLICATION_ID,
  type CacheStats,
  type VerifyReport,
  type CachedFeature,
} from './cache.js';

const DEFAULT_CACHE_PATH = (ConfigSchema.properties.pipeline.properties.cache.properties.path as { default: string })
  .default;

/** The cache a command means: --cache, else the config's pipeline.cache.path, else the default. */
export function resolveCachePath(options: { cache?: string; config?: string; set?: string[] }): string {
  if (options.cache) return resolve(options.cache);
  if (options.config) return loadConfigOrThrow(options.config, { set: options.set }).cachePath;
  return resolve(DEFAULT_CACHE_PATH);
}

function openExisting(path: string, readonly: boolean): FeatureCache {
  if (!existsSync(path)) {
    throw new XttsError('CACHE_NOT_FOUND', `no feature cache at ${path}`, {
      exitCode: ExitCode.usage,
      suggestions: [
        'it is created by `xtts train` or `xtts analyze-data-pipeline`; pass --config or --cache to name another',
      ],
    });
  }
  return readonly ? FeatureCache.openReadonly(path) : FeatureCache.open(path);
}

export function cacheStats(path: string): CacheStats {
  const cache = openExisting(path, true);
  try {
    return cache.stats();
  } finally {
    cache.close();
  }
}

export interface CacheVerifyResult extends VerifyReport {
  path: string;
  ok: boolean;
  repaired: boolean;
}

export function cacheVerify(path: string, repair: boolean): CacheVerifyResult {
  const cache = openExisting(path, !repair);
  try {
    const report = cache.verify();
    const ok =
      report.integrity === 'ok' &&
      report.badFeatures.length === 0 &&
      report.badTokens.length === 0 &&
      report.staleAudio.length === 0;
    if (repair && !ok) cache.repair(report);
    return { ...report, path, ok, repaired: repair && !ok };
  } finally {
    cache.close();
  }
}

export function cacheClear(path: string): { path: string; removedBytes: number; existed: boolean } {
  const existed = existsSync(path);
  return { path, existed, ...clearCache(path) };
}
