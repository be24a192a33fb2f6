// The same model on the wasm backend: it must load and give the cpu backend's numbers. wasm lacks
// Conv2DBackpropFilter and UnsortedSegmentSum and its fused matmul reads rank-3 shapes only, so it
// exercises every backend-specific path of the model (the conv composition, one-hot embeddings,
// the rank-3 fused matmul) and the composed AdamW update.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { before, describe, it } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import '../../src/core/model/gradients.js';
import { XttsModel } from '../../src/core/model/model.js';
import { AdamW } from '../../src/core/training/optim/adamw.js';
import { disposeStepResult, STEP_STATS, trainStep } from '../../src/core/training/optim/train-step.js';
import { evenAlignment, PRESETS, shapeFor, SIZES, syntheticHostBatch, trainingConfig } from './model-fixtures.js';
import { uploadBatch } from '../../src/core/model/batch.js';

let wasmReady = false;
before(async () => {
  const require = createRequire(import.meta.url);
  setWasmPaths(`${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'))}/`);
  wasmReady = await tf.setBackend('wasm').catch(() => false);
});

describe('wasm backend', () => {
  it('computes what cpu computes: forward outputs, loss, gradient norm and the updated weights', async (t) => {
    if (!wasmReady) return t.skip('the wasm backend does not load here');
    const config = PRESETS.tiny; // dropout on in the blocks: both backends draw the same masks
    const host = syntheticHostBatch(shapeFor(config, 2, 6, 12, 10), 5);
    const shape = shapeFor(config, 2, 6, 12, 10);
    const run = async (backend: string) => {
      await tf.setBackend(backend);
      const model = new XttsModel(config, SIZES, { seed: 8 });
      const opt = new AdamW(model.trainableVariables(), trainingConfig());
      const batch = {
        ...uploadBatch(host, shape),
        alignment: evenAlignment(host.textLengths, host.melLengths, 6, 12, config.reduction_factor),
      };
      const out = model.forward(batch, { training: false });
      const melPost = Array.from(await out.melPost!.data());
      const r = trainStep(model, opt, batch, trainingConfig().loss);
      const stats = Array.from(await r.stats.data());
      disposeStepResult(r);
      const head = Array.from(await model.getWeights().get('dec.head.w')!.data());
      const conv = Array.from(await model.getWeights().get('postnet.0.w')!.data());
      model.dispose();
      opt.dispose();
      return { melPost, stats, head, conv };
    };
    const cpu = await run('cpu');
    const wasm = await run('wasm');
    const worst = (a: number[], b: number[]) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
    assert.ok(worst(cpu.melPost, wasm.melPost) < 1e-4, `melPost differs by ${worst(cpu.melPost, wasm.melPost)}`);
    // Losses to 1e-5; the gradient norm (a float32 sum of 1.7 M squares, summed in a different order
    // by each backend) to 0.3% of itself: per-variable gradient norms agree to 1e-5 relative.
    const norm = STEP_STATS.indexOf('gradNorm');
    assert.ok(
      worst(cpu.stats.slice(0, norm), wasm.stats.slice(0, norm)) < 1e-5 * Math.max(1, cpu.stats[0]),
      `losses differ: ${cpu.stats} vs ${wasm.stats}`,
    );
    assert.ok(
      Math.abs(cpu.stats[norm] - wasm.stats[norm]) < 3e-3 * cpu.stats[norm],
      `gradient norms differ: ${cpu.stats[norm]} vs ${wasm.stats[norm]}`,
    );
    assert.equal(wasm.stats[STEP_STATS.indexOf('finite')], 1);
    // After one Adam step each weight moved by about ±lr; a sign flip would show as 2·lr = 2e-3.
    assert.ok(worst(cpu.head, wasm.head) < 2e-4, `dec.head.w differs by ${worst(cpu.head, wasm.head)}`);
    assert.ok(worst(cpu.conv, wasm.conv) < 2e-4, `postnet.0.w differs by ${worst(cpu.conv, wasm.conv)}`);
  });
});
