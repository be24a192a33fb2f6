// MelStats: merged partial statistics equal statistics over the concatenation, including across a
// real worker thread (state sent by postMessage), and stay accurate where the naive sum of squares
// loses everything (large mean, small spread).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { MelStats, type MelStatsState } from '../../src/core/data/audio/index.js';
import { concatSamples } from '../helpers/wav.js';

const N_MELS = 5;

function mel(frames: number, seed: number, offset = 0, spread = 1): Float32Array {
  let s = seed;
  return Float32Array.from({ length: frames * N_MELS }, (_, i) => {
    s = (s * 16807) % 2147483647;
    return offset + spread * ((s / 2147483647 - 0.5) * 4 + Math.sin(i % N_MELS));
  });
}

/** Two-pass mean and population std in double precision over [frames, N_MELS]. */
function direct(all: Float32Array): { mean: number[]; std: number[] } {
  const frames = all.length / N_MELS;
  const mean = Array.from({ length: N_MELS }, (_, m) => {
    let s = 0;
    for (let f = 0; f < frames; f++) s += all[f * N_MELS + m];
    return s / frames;
  });
  const std = mean.map((mu, m) => {
    let s = 0;
    for (let f = 0; f < frames; f++) s += (all[f * N_MELS + m] - mu) ** 2;
    return Math.sqrt(s / frames);
  });
  return { mean, std };
}

const concat = (parts: Float32Array[]) => concatSamples(...parts);

function assertClose(
  got: { mean: Float32Array; std: Float32Array },
  want: { mean: number[]; std: number[] },
  tol: number,
): void {
  for (let m = 0; m < N_MELS; m++) {
    assert.ok(Math.abs(got.mean[m] - want.mean[m]) < tol, `mean[${m}] ${got.mean[m]} vs ${want.mean[m]}`);
    assert.ok(Math.abs(got.std[m] - want.std[m]) < tol, `std[${m}] ${got.std[m]} vs ${want.std[m]}`);
  }
}

describe('MelStats', () => {
  const clips = [mel(30, 1), mel(1, 2), mel(57, 3, 2, 0.5), mel(200, 4, -3, 2)];
  const whole = concat(clips);

  test('clip by clip, and merged from parts in any grouping, equals the statistics of the concatenation', () => {
    const one = new MelStats(N_MELS);
    one.add(whole, whole.length / N_MELS);
    const byClip = new MelStats(N_MELS);
    for (const c of clips) byClip.add(c, c.length / N_MELS);
    const a = new MelStats(N_MELS);
    a.add(clips[0], 30);
    a.add(clips[3], 200);
    const b = new MelStats(N_MELS);
    b.add(clips[2], 57);
    b.merge(new MelStats(N_MELS)); // empty merges are no-ops
    const c = new MelStats(N_MELS);
    c.add(clips[1], 1);
    b.merge(c);
    a.merge(b);
    const want = direct(whole);
    for (const s of [one, byClip, a]) {
      const r = s.finalize();
      assert.equal(r.frames, 288);
      assertClose(r, want, 1e-5);
    }
  });

  test('only the first `frames` frames are used, and a mel too short for them is refused', () => {
    const s = new MelStats(N_MELS);
    s.add(concat([clips[0], mel(10, 9, 1000)]), 30);
    assertClose(s.finalize(), direct(clips[0]), 1e-5);
    assert.throws(() => s.add(clips[1], 2), RangeError);
    assert.throws(() => s.merge(new MelStats(N_MELS + 1)), RangeError);
  });

  test('stable where a naive sum of squares cancels: mean 1e4, spread 1e-2', () => {
    const parts = [mel(500, 11, 1e4, 1e-2), mel(700, 12, 1e4, 1e-2)];
    const s = new MelStats(N_MELS);
    for (const p of parts) s.add(p, p.length / N_MELS);
    const want = direct(concat(parts));
    const r = s.finalize();
    for (let m = 0; m < N_MELS; m++)
      assert.ok(Math.abs(r.std[m] - want.std[m]) / want.std[m] < 1e-4, `std[${m}] ${r.std[m]} vs ${want.std[m]}`);
  });

  test('a constant bin has std at the floor, never zero; no frames gives zeros and the floor', () => {
    const s = new MelStats(2);
    s.add(Float32Array.from([1, 5, 1, 6, 1, 7]), 3);
    const r = s.finalize();
    assert.equal(r.std[0], Math.fround(1e-5));
    assert.ok(Math.abs(r.std[1] - Math.sqrt(2 / 3)) < 1e-6);
    const empty = new MelStats(2).finalize();
    assert.equal(empty.frames, 0);
    assert.deepEqual([...empty.mean], [0, 0]);
  });

  test('state computed in a worker thread merges into the main thread', async () => {
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      // The worker runs MelStats from source through tsx's CommonJS hook.
      require('tsx/cjs');
      const { MelStats } = require(workerData.module);
      const s = new MelStats(workerData.nMels);
      s.add(workerData.mel, workerData.frames);
      parentPort.postMessage(s.toState());
    `;
    const module = new URL('../../src/core/data/audio/stats.ts', import.meta.url).pathname;
    const state = await new Promise<MelStatsState>((resolve, reject) => {
      const w = new Worker(code, { eval: true, workerData: { module, nMels: N_MELS, mel: clips[3], frames: 200 } });
      w.once('message', resolve);
      w.once('error', reject);
    });
    const main = new MelStats(N_MELS);
    main.add(clips[0], 30);
    main.merge(state);
    assertClose(main.finalize(), direct(concat([clips[0], clips[3]])), 1e-5);
    const restored = MelStats.fromState(structuredClone(main.toState()));
    assert.deepEqual(restored.finalize(), main.finalize());
  });
});
