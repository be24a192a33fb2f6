// trainStep on the real model: the tiny preset learns a small synthetic set, two accumulated halves
// of a batch give the full batch's update, and a run resumed from a checkpoint on disk (weights,
// optimizer state, dropout RNG) continues bit for bit.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { uploadBatch } from '../../src/core/model/batch.js';
import { XttsModel } from '../../src/core/model/model.js';
import { loadWeights, saveWeights } from '../../src/core/model/weights-file.js';
import { AdamW } from '../../src/core/training/optim/adamw.js';
import { disposeStepResult, STEP_STATS, trainStep } from '../../src/core/training/optim/train-step.js';
import { joinedRegExp } from '../helpers/regexp.js';
import {
  evenAlignment,
  maxAbsDiff,
  PRESETS,
  shapeFor,
  SIZES,
  syntheticBatch,
  syntheticHostBatch,
  trainingConfig,
} from './model-fixtures.js';

let dir: string;
before(async () => {
  await tf.setBackend('cpu');
  dir = mkdtempSync(join(tmpdir(), 'xtts-train-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('trainStep', () => {
  it("lowers the tiny model's loss on a small synthetic set to under half in 160 steps", async () => {
    // Small shapes keep this near 45 s on 2 cores: tfjs-cpu costs ~190 ms per tiny-model step
    // before the batch size matters (1,700 kernel calls, ~100 weight-sized matmuls).
    const config = PRESETS.tiny;
    const t = trainingConfig({
      learning_rate: 3e-3,
      max_steps: 160,
      schedule: { name: 'warmup_cosine', warmup_steps: 20, min_learning_rate: 1e-4 },
    });
    const model = new XttsModel(config, SIZES, { seed: 1 });
    const opt = new AdamW(model.trainableVariables(), t);
    const batches = [0, 1, 2, 3].map((i) => syntheticBatch(shapeFor(config, 2, 4, 8, 8), 100 + i));
    const losses: number[] = [];
    for (let step = 0; step < t.max_steps; step++) {
      const r = trainStep(model, opt, batches[step % 4], t.loss);
      assert.equal(r.applied, true);
      // Read back every 10th step only, as the trainer does.
      if (step % 10 === 0 || step === t.max_steps - 1) {
        const stats = await r.stats.data();
        assert.equal(stats[STEP_STATS.indexOf('finite')], 1);
        losses.push(stats[STEP_STATS.indexOf('loss')]);
      }
      disposeStepResult(r);
    }
    const initial = losses[0];
    const final = losses.slice(-4).reduce((a, b) => a + b, 0) / 4;
    assert.ok(
      final < 0.5 * initial,
      `loss ${initial.toFixed(3)} -> ${final.toFixed(3)} (${losses.map((l) => l.toFixed(2)).join(' ')})`,
    );
    assert.equal(opt.nonFiniteSteps.dataSync()[0], 0);
    model.dispose();
    opt.dispose();
  });

  it('gives the same update for one batch as for its two halves accumulated', () => {
    // Dropout off (the halves would draw other masks); every utterance has the same frame count so
    // that each half's per-frame mean weighs the same as in the full batch.
    const config = { ...PRESETS.tiny, dropout: 0 };
    const t = trainingConfig({
      optimizer: { name: 'adamw', beta1: 0.9, beta2: 0.98, epsilon: 1e-3, weight_decay: 0.01 },
    });
    const shape = shapeFor(config, 4, 6, 12, 10);
    // Text lengths with as many symbols in each half (3 + 1): the duration loss is a mean over symbols.
    const host = syntheticHostBatch(shape, 7, { text: [6, 4, 6, 4], frames: [12, 12, 12, 12] });
    const slice = (from: number, to: number) => {
      const rows = (a: Int32Array | Float32Array, per: number) => a.slice(from * per, to * per) as typeof a;
      const part = {
        tokens: rows(host.tokens, 6) as Int32Array,
        textLengths: rows(host.textLengths, 1) as Int32Array,
        languages: rows(host.languages, 1) as Int32Array,
        mel: rows(host.mel, 12 * SIZES.nMels) as Float32Array,
        melLengths: rows(host.melLengths, 1) as Int32Array,
        refMel: rows(host.refMel, 10 * SIZES.nMels) as Float32Array,
        refLengths: rows(host.refLengths, 1) as Int32Array,
        refPitch: rows(host.refPitch, 1) as Float32Array,
      };
      return {
        ...uploadBatch(part, { ...shape, batchSize: to - from }),
        alignment: evenAlignment(part.textLengths, part.melLengths, 6, 12, config.reduction_factor),
      };
    };
    const run = (batches: ReturnType<typeof slice>[]) => {
      const model = new XttsModel(config, SIZES, { seed: 3, prenetDropout: 0 });
      const opt = new AdamW(model.trainableVariables(), t);
      let gradNorm = 0;
      for (const b of batches) {
        const r = trainStep(model, opt, b, t.loss, { accumulate: batches.length });
        if (r.applied) gradNorm = r.gradNorm!.dataSync()[0];
        disposeStepResult(r);
      }
      return { model, gradNorm };
    };
    const full = run([slice(0, 4)]);
    const halves = run([slice(0, 2), slice(2, 4)]);
    assert.ok(
      Math.abs(full.gradNorm - halves.gradNorm) < 1e-5 * Math.max(1, full.gradNorm),
      `grad norm ${full.gradNorm} vs ${halves.gradNorm}`,
    );
    let worst = 0;
    for (const [name, w] of full.model.getWeights())
      worst = Math.max(worst, maxAbsDiff(w, halves.model.getWeights().get(name)!));
    assert.ok(worst < 1e-5, `weights differ by up to ${worst}`);
    full.model.dispose();
    halves.model.dispose();
  });

  it('resumes from a checkpoint on disk and continues bit for bit, dropout included', async () => {
    const config = PRESETS.tiny; // dropout 0.1 in the blocks, 0.5 in the prenet
    const t = trainingConfig({
      grad_clip_norm: 1,
      schedule: { name: 'warmup_cosine', warmup_steps: 2, min_learning_rate: 1e-5 },
      max_steps: 8,
    });
    const batches = [0, 1, 2].map((i) => syntheticBatch(shapeFor(config, 2, 5, 8, 8), 30 + i));
    const a = new XttsModel(config, SIZES, { seed: 11 });
    const optA = new AdamW(a.trainableVariables(), t);
    const step = (m: XttsModel, o: AdamW, i: number) => {
      const r = trainStep(m, o, batches[i % 3], t.loss);
      const stats = Array.from(r.stats.dataSync());
      disposeStepResult(r);
      return stats;
    };
    for (let i = 0; i < 3; i++) step(a, optA, i);
    await saveWeights(dir, 'model', a.getWeights(), { dropoutRng: a.dropout.rngState });
    await saveWeights(dir, 'optimizer', optA.getState());

    // A resumed run has the config's seed (dropout pools derive from it), fresh weights and a fresh
    // optimizer until the checkpoint is loaded.
    const b = new XttsModel(config, SIZES, { seed: 11 });
    const optB = new AdamW(b.trainableVariables(), t);
    assert.ok(maxAbsDiff(b.getWeights().get('dec.head.w')!, a.getWeights().get('dec.head.w')!) > 0);
    const w = await loadWeights(dir, 'model');
    b.setWeights(w.tensors);
    b.dropout.rngState = w.meta.dropoutRng as number;
    optB.setState((await loadWeights(dir, 'optimizer')).tensors);
    assert.equal(optB.step, 3);
    for (let i = 3; i < 6; i++) assert.deepEqual(step(b, optB, i), step(a, optA, i), `step ${i}`);
    for (const [name, x] of a.getWeights()) assert.equal(maxAbsDiff(x, b.getWeights().get(name)!), 0, name);

    // Without the dropout RNG state the continuation differs (the test can fail).
    const c = new XttsModel(config, SIZES, { seed: 11 });
    const optC = new AdamW(c.trainableVariables(), t);
    c.setWeights(a.getWeights());
    optC.setState(optA.getState());
    assert.notDeepEqual(step(c, optC, 6), step(a, optA, 6));
    [a, b, c].forEach((m) => m.dispose());
  });
});

test(
  'the prefetch ring stays within device.data_memory_budget_mb: fewer slots ' + '(said), or a clear error under two',
  async () => {
    const { ringDepthWithin } = await import('../../src/core/training/trainer.js');
    const { loadConfig, presetPath } = await import('../../src/core/config/load.js');
    const config = (set: string[]) => loadConfig(presetPath('quickstart'), { set }).loaded!.config;
    const said: string[] = [];
    const MiB = 2 ** 20;
    assert.equal(
      ringDepthWithin(config(['device.data_memory_budget_mb=64', 'pipeline.prefetch_depth=64']), 10 * MiB, (m) =>
        said.push(m),
      ),
      6,
    );
    assert.match(
      said[0],
      joinedRegExp(
        /pipeline\.prefetch_depth 64 × 10\.0 MiB would exceed /,
        /device\.data_memory_budget_mb 64: the prefetch ring holds 6 batches/,
      ),
    );
    assert.equal(
      ringDepthWithin(config(['device.data_memory_budget_mb=64', 'pipeline.prefetch_depth=4']), 10 * MiB, (m) =>
        said.push(m),
      ),
      4,
    );
    assert.equal(said.length, 1);
    assert.throws(
      () => ringDepthWithin(config(['device.data_memory_budget_mb=64']), 40 * MiB, () => {}),
      (e: Error & { code?: string; suggestions?: string[] }) =>
        e.code === 'DATA_BUDGET_TOO_SMALL' &&
        /raise device\.data_memory_budget_mb to at least 80/.test(e.suggestions![0]),
    );
    // null: an eighth of this host's memory.
    const eighth = (await import('node:os')).totalmem() / 8;
    assert.equal(
      ringDepthWithin(config(['pipeline.prefetch_depth=64']), eighth / 10, () => {}),
      10,
    );
  },
);
