// Checkpoint files: a round trip keeps every value, and a write killed at any moment (simulated by
// leftover temp files, and done for real with SIGKILL) leaves the previous checkpoint loadable.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { isXttsError } from '../../src/core/errors.js';
import { XttsModel } from '../../src/core/model/model.js';
import { loadWeights, saveWeights } from '../../src/core/model/weights-file.js';
import { maxAbsDiff, PRESETS, SIZES } from './model-fixtures.js';

let dir: string;
before(async () => {
  await tf.setBackend('cpu');
  dir = mkdtempSync(join(tmpdir(), 'xtts-weights-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function tensorsOf(seed: number): Map<string, tf.Tensor> {
  return new Map<string, tf.Tensor>([
    ['a.w', tf.randomNormal([3, 5], 0, 1, 'float32', seed)],
    ['a.b', tf.tensor1d([seed, -0, Number.MIN_VALUE, 3.4e38])],
    ['step', tf.scalar(seed * 1000 + 7, 'int32')],
  ]);
}

describe('weights files', () => {
  it("round-trips a model's weights and meta bit for bit", async () => {
    const model = new XttsModel(PRESETS.tiny, SIZES, { seed: 4 });
    const { bytes } = await saveWeights(dir, 'model', model.getWeights(), { step: 12, note: 'x' });
    assert.equal(bytes, model.parameterCount() * 4);
    const { tensors, meta } = await loadWeights(dir, 'model');
    assert.deepEqual(meta, { step: 12, note: 'x' });
    const other = new XttsModel(PRESETS.tiny, SIZES, { seed: 5 });
    other.setWeights(tensors);
    for (const [name, t] of model.getWeights()) {
      assert.deepEqual(other.getWeights().get(name)!.shape, t.shape);
      assert.equal(maxAbsDiff(other.getWeights().get(name)!, t), 0, name);
    }
    const ints = await saveWeights(dir, 'ints', tensorsOf(2)).then(() => loadWeights(dir, 'ints'));
    assert.equal(ints.tensors.get('step')!.dtype, 'int32');
    assert.equal(ints.tensors.get('step')!.dataSync()[0], 2007);
    assert.deepEqual(Array.from(ints.tensors.get('a.b')!.dataSync()), Array.from(tensorsOf(2).get('a.b')!.dataSync()));
    model.dispose();
    other.dispose();
  });

  it('keeps the previous checkpoint when a write died half way, and cleans up after the next one', async () => {
    await saveWeights(dir, 'ckpt', tensorsOf(1));
    await saveWeights(dir, 'ckpt.best', tensorsOf(9));
    // What a write killed mid-way leaves: a partial binary and a partial manifest under temp names.
    writeFileSync(join(dir, 'ckpt.0123456789abcdef.bin.tmp-999-deadbeef'), Buffer.alloc(10));
    writeFileSync(join(dir, 'ckpt.json.tmp-999-deadbeef'), '{"format":"xtts-wei');
    let { tensors } = await loadWeights(dir, 'ckpt');
    assert.equal(tensors.get('step')!.dataSync()[0], 1007);
    await saveWeights(dir, 'ckpt', tensorsOf(2));
    ({ tensors } = await loadWeights(dir, 'ckpt'));
    assert.equal(tensors.get('step')!.dataSync()[0], 2007);
    const files = readdirSync(dir).filter((f) => f.startsWith('ckpt.') && !f.startsWith('ckpt.best'));
    assert.equal(files.length, 2, `left: ${files}`);
    assert.equal((await loadWeights(dir, 'ckpt.best')).tensors.get('step')!.dataSync()[0], 9007);
  });

  it('detects a damaged binary', async () => {
    await saveWeights(dir, 'damaged', tensorsOf(3));
    const manifest = JSON.parse(readFileSync(join(dir, 'damaged.json'), 'utf8')) as { bin: string };
    const bin = readFileSync(join(dir, manifest.bin));
    bin[5] ^= 0xff;
    writeFileSync(join(dir, manifest.bin), bin);
    await assert.rejects(
      loadWeights(dir, 'damaged'),
      (e) => isXttsError(e) && e.code === 'CHECKPOINT_CORRUPT' && /sha256/.test(e.message),
    );
    await assert.rejects(loadWeights(dir, 'absent'), (e) => isXttsError(e) && e.code === 'CHECKPOINT_MISSING');
  });

  it('survives a writer killed with SIGKILL at random moments: every load sees a complete checkpoint', async () => {
    const weightsModule = fileURLToPath(new URL('../../src/core/model/weights-file.ts', import.meta.url));
    const child = join(dir, 'writer.mts');
    // Writes 24 MB checkpoints forever, each one's values all equal to its generation number.
    writeFileSync(
      child,
      `import * as tf from ${JSON.stringify(fileURLToPath(import.meta.resolve('@tensorflow/tfjs-core')))};
       import ${JSON.stringify(fileURLToPath(import.meta.resolve('@tensorflow/tfjs-backend-cpu')))};
       import { saveWeights } from ${JSON.stringify(weightsModule)};
       await tf.setBackend('cpu');
       for (let gen = Number(process.argv[2]); ; gen++) {
         const t = tf.fill([6_000_000], gen);
         await saveWeights(process.argv[3], 'live', new Map([['w', t]]), { gen });
         t.dispose();
         process.stdout.write(gen + '\\n');
       }`,
    );
    const live = join(dir, 'live');
    let lastGen = -1;
    for (let round = 0; round < 5; round++) {
      const proc = spawn(process.execPath, ['--import', 'tsx', child, String(round * 1000), live], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let written = 0;
      proc.stdout.on('data', (d: Buffer) => (written += d.toString().trim().split('\n').length));
      // Kill once at least one checkpoint exists, at a random point of a later write.
      while (written < 1 + (round % 2)) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 150)));
      proc.kill('SIGKILL');
      await new Promise((r) => proc.once('exit', r));
      const { tensors, meta } = await loadWeights(live, 'live');
      const values = tensors.get('w')!.dataSync();
      const gen = meta.gen as number;
      assert.ok(gen >= round * 1000 && gen > lastGen, `generation ${gen} after round ${round}`);
      assert.equal(values[0], gen);
      assert.equal(values[values.length - 1], gen);
      lastGen = gen;
      tensors.get('w')!.dispose();
    }
  });
});
