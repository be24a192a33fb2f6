// The audio half of preprocessing on real WAVs and a real SQLite cache: a second run computes
// nothing; editing one file recomputes exactly that one; changing the hop recomputes all; bad files
// become reason-coded failures that are remembered; a build killed midway resumes cleanly.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { FeatureCache } from '../../src/core/cache/cache.js';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { prepareFeatures } from '../../src/core/data/features.js';
import type { ManifestRow } from '../../src/core/data/manifest.js';
import { writeToneWav } from '../helpers/wav.js';

const audio = loadConfig(presetPath('quickstart')).loaded!.config.audio;

function dataset(n: number) {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-feat-'));
  mkdirSync(join(dir, 'wavs'));
  const rows: ManifestRow[] = [];
  for (let i = 0; i < n; i++) {
    const audioPath = join(dir, 'wavs', `u${i}.wav`);
    writeToneWav(audioPath, 0.4 + (i % 5) * 0.1, 22050, 200 + i * 10);
    rows.push({ id: `u${i}`, file: join(dir, 'metadata.csv'), line: i + 1, audioPath, text: 'x', speaker: 'default' });
  }
  return { dir, rows, cachePath: join(dir, 'cache.sqlite') };
}

test('cold, warm, one edited file, and a changed setting', async () => {
  const d = dataset(12);
  let cache = FeatureCache.open(d.cachePath);
  const cold = await prepareFeatures({ cache, rows: d.rows, audio, workers: 2 });
  assert.equal(cold.computed, 12);
  assert.equal(cold.features.size, 12);
  const warm = await prepareFeatures({ cache, rows: d.rows, audio, workers: 2 });
  assert.equal(warm.computed, 0);
  const sorted = (m: Map<string, unknown>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
  assert.deepEqual(sorted(warm.features), sorted(cold.features));
  writeToneWav(d.rows[3].audioPath, 0.9, 22050, 333);
  const edited = await prepareFeatures({ cache, rows: d.rows, audio, workers: 0 });
  assert.equal(edited.computed, 1);
  assert.notEqual(edited.features.get('u3')!.featureKey, cold.features.get('u3')!.featureKey);
  const hop = await prepareFeatures({ cache, rows: d.rows, audio: { ...audio, hop_length: 200 }, workers: 2 });
  assert.equal(hop.computed, 12);
  cache.close();
  cache = FeatureCache.open(d.cachePath);
  const v = cache.verify();
  assert.equal(v.integrity, 'ok');
  assert.deepEqual(v.badFeatures, []);
  cache.close();
});

test('rows whose audio is the same bytes (copies, links) share one computation, or one failure', async () => {
  const d = dataset(2);
  const rows = [...d.rows];
  for (const [i, from] of [0, 0, 1].entries()) {
    const audioPath = join(d.dir, 'wavs', `copy${i}.wav`);
    copyFileSync(d.rows[from].audioPath, audioPath);
    rows.push({ ...d.rows[from], id: `copy${i}`, line: 10 + i, audioPath });
  }
  const broken = join(d.dir, 'wavs', 'broken.wav');
  writeFileSync(broken, 'not audio at all');
  for (const id of ['b1', 'b2']) rows.push({ ...d.rows[0], id, audioPath: broken });
  const cache = FeatureCache.open(d.cachePath);
  for (const workers of [2, 0]) {
    const r = await prepareFeatures({ cache, rows, audio, workers });
    if (workers === 2) assert.equal(r.computed, 3, 'two clips and the broken file, each once');
    assert.equal(r.features.size, 5);
    assert.equal(r.features.get('copy0')!.featureKey, r.features.get('u0')!.featureKey);
    assert.equal(r.features.get('copy2')!.featureKey, r.features.get('u1')!.featureKey);
    assert.deepEqual(r.failures.map((f) => f.row.id).sort(), ['b1', 'b2']);
  }
  cache.close();
});

test('unreadable and unsupported files are reason-coded and remembered', async () => {
  const d = dataset(3);
  writeFileSync(d.rows[0].audioPath, 'not audio at all');
  const b = Buffer.alloc(44);
  b.write('RIFF', 0);
  b.writeUInt32LE(36, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(7, 20); // mu-law
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt16LE(8, 34);
  b.write('data', 36);
  writeFileSync(d.rows[1].audioPath, b);
  const cache = FeatureCache.open(d.cachePath);
  const r = await prepareFeatures({ cache, rows: d.rows, audio, workers: 1 });
  assert.deepEqual(r.failures.map((f) => [f.row.id, f.reason]).sort(), [
    ['u0', 'unsupported_format'],
    ['u1', 'unsupported_format'],
  ]);
  assert.equal(r.features.size, 1);
  const again = await prepareFeatures({ cache, rows: d.rows, audio, workers: 1 });
  assert.equal(again.computed, 0, 'failures are cached by content hash too');
  assert.equal(again.failures.length, 2);
  cache.close();
});

test('a build killed midway keeps whole entries and resumes with the rest', async () => {
  const d = dataset(40);
  const script = `
    import { FeatureCache } from '${new URL('../../src/core/cache/cache.ts', import.meta.url).href}';
    import { prepareFeatures } from '${new URL('../../src/core/data/features.ts', import.meta.url).href}';
    import { writeSync } from 'node:fs';
    const rows = JSON.parse(process.argv[2]);
    const cache = FeatureCache.open(process.argv[3]);
    // At the ninth feature the build says so and stops there (up to a minute) until it is killed, so that the kill
    // lands midway however slowly the test reads the pipe.
    await prepareFeatures({ cache, rows, audio: JSON.parse(process.argv[4]), workers: 1, commitEvery: 2,
      onProgress: (p) => {
        if (p.done !== 9) return;
        writeSync(1, 'nine\\n');
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);
      } });
    process.stdout.write('finished\\n');
  `;
  const scriptFile = join(d.dir, 'build.mts');
  writeFileSync(scriptFile, script);
  const { NODE_TEST_CONTEXT: _ignored, ...env } = process.env;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', scriptFile, JSON.stringify(d.rows), d.cachePath, JSON.stringify(audio)],
    { stdio: ['ignore', 'pipe', 'inherit'], env },
  );
  const exited = new Promise((r) => child.once('exit', r));
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('nine')) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', () => resolve());
  });
  await exited;
  const cache = FeatureCache.open(d.cachePath);
  assert.equal(cache.verify().integrity, 'ok');
  const before = cache.stats().features;
  assert.ok(before >= 8 && before < 40, `${before} features survived the kill`);
  const r = await prepareFeatures({ cache, rows: d.rows, audio, workers: 2 });
  assert.equal(r.computed, 40 - before);
  assert.equal(r.features.size, 40);
  cache.close();
});

test('a result the stage cannot take (the cache write fails) fails the stage instead of hanging it', async () => {
  const d = dataset(4);
  const cache = FeatureCache.open(d.cachePath);
  const failing = new Proxy(cache, {
    get(target, prop, receiver) {
      if (prop === 'putMany')
        return () => {
          throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  await assert.rejects(
    prepareFeatures({ cache: failing, rows: d.rows, audio, workers: 2, commitEvery: 1 }),
    /database or disk is full/,
  );
  cache.close();
});
