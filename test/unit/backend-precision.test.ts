// The precision table says which backend trains in mixed_fp16: webgpu only, through xtts's own
// tensor-core matmul, since TensorFlow.js itself has no float16. These tests check that claim against
// the installed packages, so that an upgrade that adds a float16 path fails here and the table (and
// the config validator that reads it) gets revisited.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { FP16_TRAINING_BACKENDS, PRECISION_SUPPORT, precisionSupported } from '../../src/core/backend/precision.js';

const require_ = createRequire(import.meta.url);

test('webgpu alone trains in mixed_fp16; every backend trains in fp32; auto with mixed_fp16 means webgpu', () => {
  assert.deepEqual(FP16_TRAINING_BACKENDS, ['webgpu']);
  for (const b of ['webgpu', 'tensorflow', 'wasm', 'cpu'] as const) {
    assert.deepEqual(precisionSupported(b, 'fp32'), { ok: true, reason: `${b} trains in fp32` });
    const fp16 = precisionSupported(b, 'mixed_fp16');
    assert.equal(fp16.ok, b === 'webgpu', b);
    if (b !== 'webgpu') assert.equal(fp16.reason, `${b}: ${PRECISION_SUPPORT[b].float16}`);
  }
  assert.deepEqual(precisionSupported('auto', 'mixed_fp16'), {
    ok: true,
    reason: 'auto trains mixed_fp16 on webgpu only',
  });
  assert.deepEqual(precisionSupported('auto', 'fp32'), { ok: true, reason: 'auto trains in fp32' });
});

test('tfjs-core has no float16 dtype', () => {
  const types = readFileSync(
    join(dirname(require_.resolve('@tensorflow/tfjs-core/package.json')), 'dist', 'types.d.ts'),
    'utf8',
  );
  const map = /interface DataTypeMap \{([^}]*)\}/.exec(types);
  assert.ok(map, 'DataTypeMap not found in tfjs-core types');
  assert.deepEqual([...map[1].matchAll(/(\w+): /g)].map((m) => m[1]).sort(), [
    'bool',
    'complex64',
    'float32',
    'int32',
    'string',
  ]);
});

test("tfjs-backend-webgpu emits no f16 shader code: mixed_fp16's f16 is xtts's own matmul program", () => {
  const dist = join(dirname(require_.resolve('@tensorflow/tfjs-backend-webgpu/package.json')), 'dist');
  // Node loads dist/tf-backend-webgpu.node.js (package.json "main"); the bundler, the per-module
  // build (dist/**/*.js, "module"); the other UMD builds repeat the same code.
  const files = (readdirSync(dist, { recursive: true }) as string[]).filter(
    (f) => f.endsWith('.js') && (f === 'tf-backend-webgpu.node.js' || !f.startsWith('tf-backend-webgpu')),
  );
  assert.ok(files.length > 200, `${files.length} files`);
  let f32Programs = 0;
  for (const f of files) {
    const src = readFileSync(join(dist, f), 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, '');
    assert.doesNotMatch(src, /enable f16|\bf16\b|shader-f16/, f);
    if (/array<f32>|vec4<f32>/.test(src)) f32Programs++;
  }
  assert.ok(f32Programs > 10, `${f32Programs} files with f32 storage`);
});
