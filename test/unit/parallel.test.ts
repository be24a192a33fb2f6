// Data-parallel training's parts: the all-reduce between threads (sums, buckets, aborts), each
// replica's rows of a batch, and the property the whole design rests on — replicas that train on
// their rows with the whole batch's denominators and their rows of the whole batch's dropout masks
// give losses and gradients that add up to one device's on the whole batch.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import '../../src/core/model/gradients.js';
import { uploadBatch } from '../../src/core/model/batch.js';
import { computeLosses, wholeDenominators } from '../../src/core/model/losses.js';
import { XttsModel } from '../../src/core/model/model.js';
import {
  abortCollective,
  abortReason,
  Collective,
  createCollective,
} from '../../src/core/training/parallel/collective.js';
import { parseGpusFlag, planReplicas } from '../../src/core/training/parallel/group.js';
import {
  allReduceSpans,
  bucketSizes,
  shardOf,
  shardRows,
  zeroSpans,
} from '../../src/core/training/parallel/replica.js';
import { repoRoot } from '../helpers/cli.js';
import { PRESETS, shapeFor, SIZES, syntheticHostBatch, trainingConfig } from './model-fixtures.js';

before(async () => {
  await tf.setBackend('cpu');
});

// Worker threads cannot load TypeScript: they run the build of the collective.
const builtCollective = join(repoRoot, 'src', 'core', 'dist', 'training', 'parallel', 'collective.js');

/** Ranks 1..world-1 in threads: each sums `values(rank)` `rounds` times and posts the results. */
function peers(
  shared: ReturnType<typeof createCollective>,
  length: number,
  rounds: number,
  failAt?: { rank: number; round: number },
) {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    import(workerData.module).then(async ({ Collective, abortCollective }) => {
      const c = new Collective(workerData.shared, workerData.rank);
      const out = [];
      try {
        for (let round = 0; round < workerData.rounds; round++) {
          if (workerData.failAt && workerData.failAt.rank === workerData.rank && workerData.failAt.round === round) {
            abortCollective(workerData.shared, 'rank ' + workerData.rank + ' ran out of memory');
            throw new Error('failed on purpose');
          }
          const v = new Float32Array(workerData.length);
          for (let i = 0; i < v.length; i++) v[i] = Math.fround((workerData.rank + 1) * 0.1 + i * 1e-3 + round);
          out.push(Array.from(await c.allReduceSum(v)));
        }
        parentPort.postMessage({ ok: true, out });
      } catch (e) {
        parentPort.postMessage({ ok: false, message: e.message });
      }
    });`;
  return Array.from({ length: shared.world - 1 }, (_, k) => {
    const w = new Worker(code, {
      eval: true,
      workerData: { module: pathToFileURL(builtCollective).href, shared, rank: k + 1, length, rounds, failAt },
    });
    return new Promise<{ ok: boolean; out?: number[][]; message?: string }>((resolve, reject) => {
      w.once('message', (m) => {
        resolve(m);
        void w.terminate();
      });
      w.once('error', reject);
    });
  });
}

const valuesOf = (rank: number, round: number, length: number) =>
  Float32Array.from({ length }, (_, i) => Math.fround((rank + 1) * 0.1 + i * 1e-3 + round));

describe('collective', { skip: existsSync(builtCollective) ? false : 'run npm run build first' }, () => {
  test(
    'all-reduce over 4 threads in buckets: every rank gets the same sum, in rank ' + 'order, round after round',
    async () => {
      const world = 4;
      const length = 2_500; // 3 buckets of 1,000
      const shared = createCollective(world, 1_000);
      const others = peers(shared, length, 3);
      const c = new Collective(shared, 0);
      const mine: Float32Array[] = [];
      for (let round = 0; round < 3; round++) mine.push(await c.allReduceSum(valuesOf(0, round, length)));
      const theirs = await Promise.all(others);
      for (let round = 0; round < 3; round++) {
        const want = new Float32Array(length);
        for (let r = 0; r < world; r++) {
          const v = valuesOf(r, round, length);
          for (let i = 0; i < length; i++) want[i] += v[i];
        }
        assert.deepEqual(Array.from(mine[round]), Array.from(want), `round ${round}`);
        for (const t of theirs) {
          assert.ok(t.ok, t.message);
          assert.deepEqual(t.out![round], Array.from(want), `round ${round}: a peer's sum differs`);
        }
      }
    },
  );

  test(
    'a replica that fails aborts the group: every waiting rank throws its reason ' + 'instead of waiting forever',
    async () => {
      const shared = createCollective(3, 64);
      const others = peers(shared, 100, 2, { rank: 2, round: 1 });
      const c = new Collective(shared, 0);
      // Rank 2 may abort before rank 0 has left round 0's last barrier: either round throws the reason.
      await assert.rejects(async () => {
        for (let round = 0; round < 2; round++) await c.allReduceSum(valuesOf(0, round, 100));
      }, /rank 2 ran out of memory/);
      const [one, two] = await Promise.all(others);
      assert.equal(one.ok, false);
      assert.match(one.message!, /rank 2 ran out of memory/);
      assert.equal(two.message, 'failed on purpose');
      // The first reason stays.
      abortCollective(shared, 'later');
      await assert.rejects(c.barrier(), /rank 2 ran out of memory/);
    },
  );

  test('a rank that sees the abort reads its whole reason, never one still being written', async () => {
    // In lockstep, a thread aborts each of 200 groups while this one spins on it until it sees the
    // abort: each time it must read the whole reason (CI once saw an empty one).
    const reason = 'rank 1 ran out of memory: '.padEnd(900, 'x');
    const groups = Array.from({ length: 200 }, () => createCollective(2, 1));
    const turn = new Int32Array(new SharedArrayBuffer(4)).fill(-1);
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      import(workerData.module).then(({ abortCollective }) => {
        const turn = new Int32Array(workerData.turn);
        workerData.groups.forEach((g, i) => {
          while (Atomics.load(turn, 0) !== i);
          abortCollective(g, workerData.reason);
        });
        parentPort.postMessage('done');
      });`;
    const w = new Worker(code, {
      eval: true,
      workerData: { module: pathToFileURL(builtCollective).href, groups, reason, turn: turn.buffer },
    });
    try {
      const short: number[] = [];
      groups.forEach((g, i) => {
        Atomics.store(turn, 0, i);
        let r = abortReason(g);
        while (r === null) r = abortReason(g);
        if (r !== reason) short.push(r.length);
      });
      assert.deepEqual(short, [], 'reasons read short (their lengths)');
    } finally {
      await w.terminate();
    }
  });

  test('one replica: the sum is a copy, no waiting', async () => {
    const c = new Collective(createCollective(1, 4), 0);
    const v = Float32Array.from([1, 2, 3, 4, 5, 6]);
    const s = await c.allReduceSum(v);
    assert.deepEqual(Array.from(s), [1, 2, 3, 4, 5, 6]);
    assert.notEqual(s, v);
  });
});

describe("the all-reduce's spans", () => {
  test('overlapped with the step: before the last device is done it is hidden, after it its own time', () => {
    const spans = zeroSpans();
    // Started at 100; this device done at 150, the other at 170; done at 190.
    allReduceSpans(spans, {
      start: 100,
      end: 190,
      idle: 150,
      stepDone: 170,
      timeline: [
        { kind: 'fetch', t0: 100, t1: 120 },
        { kind: 'readback', t0: 120, t1: 130 },
        { kind: 'exchange', t0: 130, t1: 165 },
        { kind: 'upload', t0: 165, t1: 175 },
        { kind: 'fetch', t0: 175, t1: 176 },
        { kind: 'readback', t0: 176, t1: 180 },
        { kind: 'exchange', t0: 180, t1: 190 },
      ],
    });
    assert.equal(spans.syncMs, 70);
    assert.equal(spans.peerWaitMs, 20);
    assert.equal(spans.allReduceMs, 20);
    // After 170: a fetch of 1 and a readback of 4; the exchange of 10; the upload's 5 are the rest.
    assert.equal(spans.readbackMs, 5);
    assert.equal(spans.exchangeMs, 10);
    // Before 170: the readback's 10 and the upload's 5.
    assert.equal(spans.overlapMs, 15);
  });

  test('after the step (eager, or another backend): all of it is its own time', () => {
    const spans = zeroSpans();
    allReduceSpans(spans, {
      start: 0,
      end: 30,
      idle: 0,
      stepDone: -5,
      timeline: [
        { kind: 'readback', t0: 0, t1: 10 },
        { kind: 'exchange', t0: 10, t1: 30 },
      ],
    });
    assert.deepEqual([spans.syncMs, spans.peerWaitMs, spans.allReduceMs], [0, 0, 30]);
    assert.deepEqual([spans.readbackMs, spans.exchangeMs, spans.overlapMs], [10, 20, 0]);
  });

  test('bucket sizes; the latest time the replicas published, on this thread clock', () => {
    assert.deepEqual(bucketSizes(10, 4), [4, 4, 2]);
    assert.deepEqual(bucketSizes(8, 4), [4, 4]);
    const shared = createCollective(2, 4);
    const [a, b] = [new Collective(shared, 0), new Collective(shared, 1)];
    a.publishTime(1000);
    b.publishTime(1500);
    assert.ok(Math.abs(a.latestTime() - 1500) < 1e-6);
  });
});

describe('rows of a batch', () => {
  test('shares as even as possible, the larger first, covering the batch once', () => {
    assert.deepEqual(shardRows(7, 3), [
      { start: 0, size: 3, total: 7 },
      { start: 3, size: 2, total: 7 },
      { start: 5, size: 2, total: 7 },
    ]);
    assert.deepEqual(
      shardRows(4, 4).map((r) => r.size),
      [1, 1, 1, 1],
    );
  });

  test('a shard holds exactly its rows of every array, as copies', () => {
    const s = shapeFor(PRESETS.tiny, 5, 9, 12, 6);
    const host = syntheticHostBatch(s, 3);
    const dims = { batchSize: 5, tokens: 9, frames: 12, refFrames: 6, nMels: s.nMels, reductionFactor: 2 };
    const shard = shardOf(host, dims, { start: 2, size: 2, total: 5 });
    assert.equal(shard.dims.batchSize, 2);
    assert.deepEqual(Array.from(shard.host.tokens), Array.from(host.tokens.subarray(18, 36)));
    assert.deepEqual(Array.from(shard.host.melLengths), Array.from(host.melLengths.subarray(2, 4)));
    assert.deepEqual(Array.from(shard.host.mel), Array.from(host.mel.subarray(2 * 12 * s.nMels, 4 * 12 * s.nMels)));
    assert.deepEqual(Array.from(shard.host.refMel), Array.from(host.refMel.subarray(2 * 6 * s.nMels, 4 * 6 * s.nMels)));
    shard.host.tokens[0] = -1;
    assert.notEqual(host.tokens[18], -1, 'a copy, not a view');
  });

  test(
    'uploadBatch copies: changing the host arrays afterwards (a producer refilling ' +
      'the slot) does not change the tensors',
    async () => {
      const s = shapeFor(PRESETS.tiny, 2, 5, 8, 4);
      const host = syntheticHostBatch(s, 9);
      const t = uploadBatch(host, {
        batchSize: 2,
        tokens: 5,
        frames: 8,
        refFrames: 4,
        nMels: s.nMels,
        reductionFactor: 2,
      });
      const before = { tokens: Array.from(await t.tokens.data()), mel: Array.from(await t.mel.data()) };
      host.tokens.fill(7);
      host.mel.fill(7);
      assert.deepEqual(Array.from(await t.tokens.data()), before.tokens);
      assert.deepEqual(Array.from(await t.mel.data()), before.mel);
      for (const x of Object.values(t)) x.dispose();
    },
  );
});

describe('replicas add up to one device', () => {
  test(
    "3 shards with the whole batch's denominators and dropout rows: losses and " +
      'gradients of one device on the whole batch',
    async () => {
      const config = {
        ...PRESETS.tiny,
        d_model: 32,
        heads: 2,
        text_layers: 1,
        cond_layers: 1,
        decoder_layers: 1,
        prenet_dim: 32,
        postnet_layers: 1,
        postnet_channels: 32,
        dropout: 0.2,
        prenet_dropout: 0.5,
      };
      const model = new XttsModel(config, SIZES, { seed: 5 });
      const loss = trainingConfig().loss;
      const B = 7;
      const s = shapeFor(config, B, 10, 16, 8);
      const host = syntheticHostBatch(s, 11, { text: [10, 7, 4, 9, 3, 8, 6], frames: [16, 12, 8, 16, 6, 14, 0] });
      const dims = { batchSize: B, tokens: 10, frames: 16, refFrames: 8, nMels: SIZES.nMels, reductionFactor: 2 };
      const vars = [...model.trainableVariables().values()];
      const run = async (h: typeof host, d: typeof dims, whole?: [number, number]) => {
        const t = uploadBatch(h, d);
        const alignment = await model.align(
          t,
          h.textLengths.subarray(0, d.batchSize),
          h.melLengths.subarray(0, d.batchSize),
          0.3,
        );
        const inputs = { ...t, alignment };
        let parts: number[] = [];
        const { grads } = tf.variableGrads(() => {
          const w = whole && wholeDenominators(...whole);
          const l = computeLosses(model.forward(inputs, { training: true }), inputs, loss, w);
          parts = [l.total, l.melPre, l.melPost, l.alignedText, l.duration].map((x) => x.dataSync()[0]);
          return l.total;
        }, vars);
        const g = vars.map((v) => Array.from(grads[v.name].dataSync()));
        tf.dispose([...Object.values(t), alignment.steps, alignment.durations, ...Object.values(grads)]);
        return { parts, grads: g, spoken: alignment.spokenTokens! };
      };
      const rng = model.dropout.rngState;
      const one = await run(host, dims);
      let frames = 0;
      for (const f of host.melLengths) frames += f;
      const rows = shardRows(B, 3);
      const shards = rows.map((r) => shardOf(host, dims, r));
      // The denominators: real frames · nMels and spoken tokens of all shards together.
      const spoken: number[] = [];
      for (const sh of shards)
        spoken.push(
          (await model.align(uploadBatch(sh.host, sh.dims), sh.host.textLengths, sh.host.melLengths, 0.3))
            .spokenTokens!,
        );
      assert.equal(
        spoken.reduce((a, b) => a + b, 0),
        one.spoken,
      );
      const sumParts = [0, 0, 0, 0, 0];
      const sumGrads = one.grads.map((g) => new Array(g.length).fill(0));
      for (const [i, sh] of shards.entries()) {
        model.dropout.rngState = rng;
        model.dropout.shard = rows[i];
        const r = await run(sh.host, sh.dims, [frames * SIZES.nMels, one.spoken]);
        model.dropout.shard = null;
        r.parts.forEach((x, k) => (sumParts[k] += x));
        r.grads.forEach((g, v) => g.forEach((x, k) => (sumGrads[v][k] += x)));
      }
      sumParts.forEach((x, k) =>
        assert.ok(
          Math.abs(x - one.parts[k]) <= 1e-5 * Math.max(1, Math.abs(one.parts[k])),
          `loss part ${k}: ${x} vs ${one.parts[k]}`,
        ),
      );
      let worst = 0;
      one.grads.forEach((g, v) =>
        g.forEach((x, k) => (worst = Math.max(worst, Math.abs(sumGrads[v][k] - x) / Math.max(1e-3, Math.abs(x))))),
      );
      assert.ok(worst < 1e-3, `gradients differ by up to ${worst} (relative)`);
      // Dropout is on: without the shard's rows of the whole mask the sums would differ.
      model.dropout.rngState = rng;
      const unsharded = await run(shards[0].host, shards[0].dims, [frames * SIZES.nMels, one.spoken]);
      model.dropout.rngState = rng;
      model.dropout.shard = rows[0];
      const sharded = await run(shards[0].host, shards[0].dims, [frames * SIZES.nMels, one.spoken]);
      model.dropout.shard = null;
      assert.notEqual(unsharded.parts[0], sharded.parts[0], 'the test would pass without dropout rows');
      model.dispose();
    },
  );
});

describe('which devices', () => {
  test('--gpus: all, cpu:N, indices and names', () => {
    assert.equal(parseGpusFlag('all'), 'all');
    assert.equal(parseGpusFlag('cpu:3'), 'cpu:3');
    assert.deepEqual(parseGpusFlag('0,1'), [0, 1]);
    assert.deepEqual(parseGpusFlag('H200, 1'), ['H200', 1]);
    assert.throws(() => parseGpusFlag('0,,1'), /an empty device in the list/);
    // cpu:N out of range, negative or fractional is said of the flag (not taken for GPU names, nor for a --set).
    for (const bad of ['cpu:0', 'cpu:999', 'cpu:-1', 'cpu:1.5', 'cpu:'])
      assert.throws(
        () => parseGpusFlag(bad),
        (e: Error & { code?: string }) =>
          e.code === 'GPUS_INVALID' &&
          e.message.includes(`--gpus "${bad}": cpu:N takes a whole number of CPU replicas`),
        bad,
      );
  });

  test(
    'plans: CPU replicas on wasm (or cpu when asked); GPU lists on webgpu; ' + 'mismatches refused with what to do',
    async () => {
      assert.equal(await planReplicas(null, 'auto'), null);
      assert.deepEqual(await planReplicas('cpu:2', 'auto'), {
        backend: 'wasm',
        devices: [null, null],
        reason: '2 CPU replicas on the wasm backend (device.gpus cpu:2)',
      });
      assert.equal((await planReplicas('cpu:2', 'cpu'))!.backend, 'cpu');
      await assert.rejects(planReplicas('cpu:2', 'webgpu'), /asks for CPU replicas, but the backend is webgpu/);
      await assert.rejects(
        planReplicas([0, 1], 'wasm'),
        (e: Error & { suggestions?: string[] }) =>
          /GPU replicas train on webgpu/.test(e.message) && /--gpus cpu:2/.test(e.suggestions!.join(' ')),
      );
      assert.deepEqual((await planReplicas([0, 'H100'], 'auto'))!.devices, [0, 'H100']);
      assert.match((await planReplicas([0, 0], 'webgpu'))!.reason, /share a GPU and take turns/);
    },
  );
});
