// `xtts cache stats|verify|clear` as processes on a real cache built from real WAVs.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { FeatureCache } from '../../src/core/cache/cache.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { prepareFeatures } from '../../src/core/data/features.js';
import { runCli } from '../helpers/cli.js';
import { writeToneWav } from '../helpers/wav.js';

test('stats, verify (clean, corrupted, repaired) and clear', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-cachecli-'));
  mkdirSync(join(dir, 'wavs'));
  const rows = Array.from({ length: 5 }, (_, i) => {
    const audioPath = join(dir, 'wavs', `c${i}.wav`);
    writeToneWav(audioPath, 0.5, 22050, 300 + 50 * i);
    return { id: `c${i}`, file: 'm', line: i + 1, audioPath, text: 'x', speaker: 'default' };
  });
  const path = join(dir, 'cache.sqlite');
  const cache = FeatureCache.open(path);
  await prepareFeatures({ cache, rows, audio: loadConfig(presetPath('quickstart')).loaded!.config.audio, workers: 0 });
  await prepareFeatures({ cache, rows, audio: loadConfig(presetPath('quickstart')).loaded!.config.audio, workers: 0 });
  cache.close();

  const stats = await runCli(['cache', 'stats', '--cache', path, '--json']);
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(stats.json.result.features, 5);
  assert.equal(stats.json.result.lookups.feature.lookups, 10);
  assert.equal(stats.json.result.lookups.feature.hits, 5);
  assert.match((await runCli(['cache', 'stats', '--cache', path])).stdout, /log-mel features\s+│\s+5\s+│\s+10\s+│\s+5\s+│\s+50\.0%/);

  assert.equal((await runCli(['cache', 'verify', '--cache', path])).code, 0);
  // Truncate one mel blob behind the cache's back, and change one audio file.
  const db = new Database(path);
  db.prepare("UPDATE features SET mel = substr(mel, 1, 100) WHERE rowid = (SELECT MIN(rowid) FROM features)").run();
  db.close();
  writeToneWav(rows[2].audioPath, 0.7, 22050, 999);
  const bad = await runCli(['cache', 'verify', '--cache', path, '--json']);
  assert.equal(bad.code, 1);
  assert.equal(bad.json.result.badFeatures.length, 1);
  assert.deepEqual(bad.json.result.staleAudio, [rows[2].audioPath]);
  const fixed = await runCli(['cache', 'verify', '--cache', path, '--repair', '--json']);
  assert.equal(fixed.code, 0);
  assert.equal(fixed.json.result.repaired, true);
  assert.equal((await runCli(['cache', 'verify', '--cache', path])).code, 0);

  const cleared = await runCli(['cache', 'clear', '--cache', path, '--json']);
  assert.equal(cleared.json.result.existed, true);
  assert.ok(cleared.json.result.removedBytes > 0);
  const gone = await runCli(['cache', 'stats', '--cache', path, '--json']);
  assert.equal(gone.code, 2);
  assert.equal(gone.json.error.code, 'CACHE_NOT_FOUND');
});
