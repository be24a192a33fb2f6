// Native files beside a bundle: found there when bundled, left to their packages otherwise; Dawn
// unpacked from its brotli copy once, atomically, and reused.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, test } from 'node:test';
import { brotliCompressSync } from 'node:zlib';
import { bundleDir, ensureDawnBinary, nativeBindingPath, wasmDir } from '../../src/core/backend/index.js';

const g = globalThis as { __XTTS_BUNDLE_DIR__?: string };
afterEach(() => {
  delete g.__XTTS_BUNDLE_DIR__;
});

test('outside a bundle: packages find their own native files', () => {
  assert.equal(bundleDir(), undefined);
  assert.equal(nativeBindingPath(), undefined);
  assert.equal(ensureDawnBinary(), undefined);
  assert.ok(existsSync(join(wasmDir(), 'tfjs-backend-wasm-simd.wasm')));
});

test('inside a bundle: native files beside it; Dawn unpacked on first use and reused', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'xtts-native-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  g.__XTTS_BUNDLE_DIR__ = dir;
  assert.equal(nativeBindingPath(), join(dir, 'better_sqlite3.node'));
  assert.equal(nativeBindingPath('xtts_nvml.node'), join(dir, 'xtts_nvml.node'));
  assert.equal(wasmDir(), dir);
  assert.throws(() => ensureDawnBinary(), /neither dawn\.node nor dawn\.node\.br/);
  const payload = Buffer.alloc(300_000);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 7919) % 251;
  writeFileSync(join(dir, 'dawn.node.br'), brotliCompressSync(payload));
  const unpacked = ensureDawnBinary();
  assert.equal(unpacked, join(dir, 'dawn.node'));
  assert.deepEqual(readFileSync(unpacked), payload);
  assert.equal(statSync(unpacked).mode & 0o111, 0o111, 'executable, like the original addon');
  const mtime = statSync(unpacked).mtimeMs;
  assert.equal(ensureDawnBinary(), unpacked);
  assert.equal(statSync(unpacked).mtimeMs, mtime, 'not written again');
});
