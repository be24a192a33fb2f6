// The GPU-program registry (backend/gpu-programs.ts) on the cpu backend, whose kernel registry is
// tfjs's own: a group's kernels are registered exactly while it is selected, each built for the
// selection in force; an override stands in front of tfjs's kernel and gives it back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import {
  defineGpuKernel,
  defineGpuOverride,
  GPU_PROGRAM_GROUPS,
  gpuKernelActive,
  gpuProgramSelection,
  selectGpuPrograms,
  switchGpuPrograms,
} from '../../src/core/backend/index.js';

test('a kernel runs while its group is selected, built for the selection in force', async () => {
  await tf.setBackend('cpu');
  const before = gpuProgramSelection();
  const built: string[] = [];
  defineGpuKernel(
    tf,
    'softmax',
    'XttsRegistryProbe',
    (sel) => {
      built.push(sel.matmul);
      return (({ inputs }: { inputs: { x: tf.TensorInfo } }) => inputs.x) as unknown as tf.KernelFunc;
    },
    'cpu',
  );
  try {
    assert.equal(gpuKernelActive(tf, 'XttsRegistryProbe'), true);
    switchGpuPrograms(tf, 'softmax', false);
    assert.equal(gpuKernelActive(tf, 'XttsRegistryProbe'), false);
    assert.deepEqual(gpuProgramSelection().off, ['softmax']);
    // Another group's switch leaves this one as it is; the selection's other parts stay too.
    switchGpuPrograms(tf, 'masks', false);
    assert.deepEqual([...gpuProgramSelection().off].sort(), ['masks', 'softmax']);
    selectGpuPrograms(tf, { off: [], matmul: 'tiled' });
    assert.equal(gpuKernelActive(tf, 'XttsRegistryProbe'), true);
    assert.equal(built.at(-1), 'tiled', 'rebuilt for the new selection');
    const x = tf.tensor1d([1, 2, 3]);
    assert.deepEqual(
      Array.from(await (tf.engine().runKernel('XttsRegistryProbe', { x }) as tf.Tensor).data()),
      [1, 2, 3],
    );
  } finally {
    selectGpuPrograms(tf, before);
    tf.unregisterKernel('XttsRegistryProbe', 'cpu');
  }
});

test('an override stands in front of tfjs kernel while selected, and gives it back', async () => {
  await tf.setBackend('cpu');
  // The registry's overrides are for webgpu: here a stand-in webgpu kernel plays tfjs's.
  const tfjs = (() => ({ dataId: {}, shape: [], dtype: 'float32' })) as unknown as tf.KernelFunc;
  tf.registerKernel({ kernelName: 'XttsRegistryTfjs', backendName: 'webgpu', kernelFunc: tfjs });
  const before = gpuProgramSelection();
  try {
    defineGpuOverride(tf, 'device-sums', 'XttsRegistryTfjs', (original, sel) => {
      assert.equal(original.kernelFunc, tfjs);
      const ours = (() => sel) as unknown as tf.KernelFunc;
      return ours;
    });
    assert.notEqual(tf.getKernel('XttsRegistryTfjs', 'webgpu')?.kernelFunc, tfjs);
    switchGpuPrograms(tf, 'device-sums', false);
    assert.equal(tf.getKernel('XttsRegistryTfjs', 'webgpu')?.kernelFunc, tfjs, "tfjs's kernel is back");
    switchGpuPrograms(tf, 'device-sums', true);
    assert.notEqual(tf.getKernel('XttsRegistryTfjs', 'webgpu')?.kernelFunc, tfjs);
  } finally {
    selectGpuPrograms(tf, before);
    tf.unregisterKernel('XttsRegistryTfjs', 'webgpu');
  }
});

test('no GPU program registers itself or keeps an on/off switch of its own', async () => {
  const { readdirSync, readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { repoRoot } = await import('../helpers/cli.js');
  assert.equal(new Set(GPU_PROGRAM_GROUPS).size, GPU_PROGRAM_GROUPS.length);
  const switches: string[] = [];
  for (const dir of ['src/core/backend', 'src/core/model', 'src/core/training/optim'])
    for (const f of readdirSync(join(repoRoot, dir)).filter((n) => n.endsWith('.ts'))) {
      const text = readFileSync(join(repoRoot, dir, f), 'utf8');
      if (/^let (enabled|paired|program|unit)\b/m.test(text) || /tf\.registerKernel\(/.test(text))
        if (f !== 'gpu-programs.ts' && f !== 'wasm.ts' && f !== 'cpu.ts')
          // wasm.ts puts a CPU fix in front of tfjs-backend-wasm's matmul, cpu.ts replaces tfjs-backend-cpu's
          // layout kernels and matmul: no GPU program.
          switches.push(`${dir}/${f}`);
    }
  assert.deepEqual(switches, [], 'define kernels with defineGpuKernel; select them with selectGpuPrograms');
});
