// The feature cache's public API, and the three operations behind `xtts cache stats|verify|clear`
// (which cache a command means is the config's answer: resolveCachePath in config/load.ts). Nothing here
// loads the config subsystem: every run's producer threads import this, and config brings ajv, the schema
// and the backends with it (~0.5 s of CPU a thread at each run's start).
import { existsSync } from 'node:fs';
import { ExitCode, isXttsError, XttsError } from '../errors.js';
import { clearCache, FeatureCache, type CacheStats, type VerifyReport } from './cache.js';
import { isCorruptDatabase } from '../util/index.js';
import { corruptCache } from './damage.js';

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
  } catch (e) {
    throw isCorruptDatabase(e) ? corruptCache(path, e) : e;
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
  let cache: FeatureCache;
  let report: VerifyReport;
  try {
    cache = openExisting(path, !repair);
  } catch (e) {
    // A file too damaged to open is what verify reports (exit 1), not a failure of the command.
    if (isXttsError(e) && e.code === 'CACHE_CORRUPT') return damagedReport(path, e.message);
    throw e;
  }
  try {
    try {
      report = cache.verify();
    } catch (e) {
      if (isXttsError(e) && e.code === 'CACHE_CORRUPT') return damagedReport(path, e.message);
      throw e;
    }
    const ok =
      report.integrity === 'ok' &&
      report.badFeatures.length === 0 &&
      report.badTokens.length === 0 &&
      report.staleAudio.length === 0;
    // Entries can be removed from a whole file; a damaged file is removed as a whole (the CLI says how).
    const repairable = repair && !ok && report.integrity === 'ok';
    if (repairable) cache.repair(report);
    return { ...report, path, ok, repaired: repairable };
  } finally {
    cache.close();
  }
}

/** verify's report of a cache file SQLite cannot read: its integrity is the damage; nothing else is checked. */
function damagedReport(path: string, damage: string): CacheVerifyResult {
  const none = {
    checkedFeatures: 0,
    badFeatures: [],
    checkedTokens: 0,
    badTokens: [],
    checkedAudio: 0,
    staleAudio: [],
  };
  return { ...none, integrity: damage, path, ok: false, repaired: false };
}

export function cacheClear(path: string): { path: string; removedBytes: number; existed: boolean } {
  const existed = existsSync(path);
  return { path, existed, ...clearCache(path) };
}
