// The replay order of a recording with early outputs (backend/replay-order.ts): the programs they depend on move
// to the first place their inputs allow, the others keep their order, every program still follows what it reads
// and what read what it overwrites; and on the tests' real WebGPU device a replay tells its caller as each early
// output is made, before the rest of the step, with the eager step's values in the buffer, bit for bit.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as tfCore from '@tensorflow/tfjs-core';
import { disposeBackend, HostTransfers, initBackend } from '../../src/core/backend/index.js';
import { earlyFirst } from '../../src/core/backend/replay-order.js';
import { compareRecordings, recordStep, StepCapture } from '../../src/core/backend/step-capture.js';
import type { Recording } from '../../src/core/backend/step-recording.js';
import { withoutLlvmpipe } from '../helpers/software-webgpu.js';
import '../../src/core/model/gradients.js';

/** A recording of programs given as [output role, ...input roles] (roles 0 and 1 inputs, the rest internal). */
function recording(programs: number[][], outputs: number[], early: number, further: number[] = []): Recording {
  const roles = Array.from({ length: 1 + Math.max(...programs.flat()) }, (_, i) => ({
    kind: (i < 2 ? 'input' : 'internal') as 'input' | 'internal',
    dataId: {},
    bytes: 4,
    index: i,
    def: 0,
    last: 0,
    reads: 0,
  }));
  programs.forEach((p, i) =>
    p.forEach((r) => {
      roles[r].def = Math.min(roles[r].def || i, i);
      roles[r].last = i;
    }),
  );
  for (const o of outputs) roles[o].last = programs.length;
  return {
    programs: programs.map((roles, i) => ({
      pipeline: {} as never,
      dispatch: [1, 1, 1],
      uniforms: [],
      roles,
      further: further[i] ?? 0,
      shaderKey: `p${i}`,
    })),
    roles,
    outputs: outputs.map((role) => ({ role, shape: [1], dtype: 'float32', stored: 'float32' })),
    assigned: [],
    variables: [],
    refused: null,
    early,
  };
}

const keys = (r: Recording) => r.programs.map((p) => p.shaderKey);

describe('replay order', () => {
  test('what only an early output needs as soon as its inputs are made, the rest in recorded order', () => {
    // p0 a=f(in0); p1 b=f(a); p2 g1=f(b); p3 g0=f(a,b); p4 stat=f(a); p5 e=f(g1) (early); p6 flat=f(g1,g0).
    const rec = recording(
      [
        [2, 0],
        [3, 2],
        [4, 3],
        [5, 2, 3],
        [6, 2],
        [7, 4],
        [8, 4, 5],
      ],
      [6, 8, 7],
      1,
    );
    const { rec: ordered, readyAfter } = earlyFirst(rec);
    // e right after g1, before g0 and stat; g1 itself stays where it was (the flat concatenation reads it too).
    assert.deepEqual(keys(ordered), ['p0', 'p1', 'p2', 'p5', 'p3', 'p4', 'p6']);
    assert.deepEqual([...readyAfter], [[3, [0]]]);
    // Roles renumbered: e (7) made at 3, an output (lives to the end); g0 (5) made at 4, read last by p6 at 6.
    assert.deepEqual([ordered.roles[7].def, ordered.roles[7].last], [3, 7]);
    assert.deepEqual([ordered.roles[5].def, ordered.roles[5].last], [4, 6]);
    // None early: the recording itself.
    const none = { ...rec, early: 0 };
    assert.equal(earlyFirst(none).rec, none);
    assert.equal(earlyFirst(none).readyAfter.size, 0);
  });

  test('a program that overwrites a role waits for the programs that read it before', () => {
    // p0 a=f(in0); p1 s=f(a) reads a; p2 writes a again as its further output (x=f(in1), a); p3 e=f(a) (early).
    const rec = recording(
      [
        [2, 0],
        [3, 2],
        [4, 1, 2],
        [5, 2],
      ],
      [3, 5],
      1,
      [0, 0, 1, 0],
    );
    const { rec: ordered, readyAfter } = earlyFirst(rec);
    // e reads the a p2 wrote; p2 must follow p1, which read the a before it: nothing can move.
    assert.deepEqual(keys(ordered), ['p0', 'p1', 'p2', 'p3']);
    assert.deepEqual([...readyAfter], [[3, [0]]]);
  });

  test('early outputs made by different programs are told in the order they are made', () => {
    const rec = recording(
      [
        [2, 0],
        [3, 1],
        [4, 2, 3],
        [5, 2],
      ],
      [4, 5, 3],
      2,
      [0, 0, 0, 0],
    );
    const { rec: ordered, readyAfter } = earlyFirst(rec);
    // Outputs 5 (made by p3 from p0's) and 3 (made by p1, which p2 reads too) are early: p3 moves up.
    assert.deepEqual(keys(ordered), ['p0', 'p3', 'p1', 'p2']);
    assert.deepEqual(
      [...readyAfter].sort((a, b) => a[0] - b[0]),
      [
        [1, [0]],
        [2, [1]],
      ],
    );
  });
});

describe('early outputs on a real WebGPU device', { skip: withoutLlvmpipe }, () => {
  test('a replay tells each early output as it is made, before the step ends, with the eager values', async () => {
    const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
    try {
      const w1 = tf.variable(tf.randomNormal([32, 24], 0, 0.2, 'float32', 1));
      const w2 = tf.variable(tf.randomNormal([24, 16], 0, 0.2, 'float32', 2));
      const xs = Array.from({ length: 4 }, (_, i) => tf.randomNormal([20, 32], 0, 1, 'float32', 10 + i));
      // Loss of a two-layer net; outputs: the loss, the flat gradient, and as early outputs each layer's gradient.
      const step = (x: tfCore.Tensor) => () =>
        tf.tidy(() => {
          const { value, grads } = tf.variableGrads(
            () => tf.sum(tf.square(tf.matMul(tf.relu(tf.matMul(x as tfCore.Tensor2D, w1)), w2))) as tfCore.Scalar,
            [w1, w2],
          );
          const g1 = tf.reshape(grads[w1.name], [-1]);
          const g2 = tf.reshape(grads[w2.name], [-1]);
          return [value, tf.concat([g1, g2]), tf.mul(g2, 2), tf.mul(g1, 2)];
        });
      const eager = recordStep(tf, [xs[0]], step(xs[0]));
      const again = recordStep(tf, [xs[1]], step(xs[1]));
      eager.recording.early = again.recording.early = 2;
      assert.equal(compareRecordings(eager.recording, again.recording), null);
      const expected = await Promise.all(step(xs[2])().map((t) => t.data()));

      // Both made before the flat gradient's concatenation, which was recorded before them; w2's before the matmuls
      // of w1's gradient (w2's comes first in the backward pass).
      const order = earlyFirst(again.recording);
      const made = [...order.readyAfter].sort((a, b) => a[0] - b[0]).map(([at]) => at);
      const concat = order.rec.programs.findIndex((p) => /concat/i.test(p.shaderKey));
      assert.ok(concat > made[1], `the concatenation at ${concat}, the early outputs at ${made}`);
      const lastMatMul = order.rec.programs.findLastIndex((p) => /matMul/i.test(p.shaderKey));
      assert.ok(made[0] < lastMatMul, `w2's gradient out at ${made[0]}, the last matmul at ${lastMatMul}`);
      // As recorded, the concatenation came before the two programs that make the early outputs (the last two).
      const recorded = again.recording.programs;
      assert.equal(
        recorded.findIndex((p) => /concat/i.test(p.shaderKey)),
        recorded.length - 3,
      );
      const capture = StepCapture.build(tf, again.recording);
      assert.equal(capture.early, 2);
      const transfers = new HostTransfers(tf, 32 * 24);
      const told: number[] = [];
      const fetches: Promise<void>[] = [];
      const out = capture.replay([xs[2]], (k, buffer, bytes) => {
        told.push(k);
        fetches[k] = transfers.fetchBuffer(buffer, 0, bytes / 4, k);
      });
      // w2's gradient is made first in the backward pass.
      assert.deepEqual(told, [0, 1]);
      const early = [new Float32Array(24 * 16), new Float32Array(32 * 24)];
      for (const k of [0, 1]) {
        await fetches[k];
        transfers.take(k, early[k]);
      }
      assert.deepEqual(Array.from(early[0]), Array.from(expected[2]));
      assert.deepEqual(Array.from(early[1]), Array.from(expected[3]));
      const replayed = await Promise.all(out.map((t) => t.data()));
      replayed.forEach((values, i) => assert.deepEqual(Array.from(values), Array.from(expected[i]), `output ${i}`));
      // Without onReady the same replay runs through.
      const plain = await Promise.all(capture.replay([xs[2]]).map((t) => t.data()));
      plain.forEach((values, i) => assert.deepEqual(Array.from(values), Array.from(expected[i]), `output ${i}`));
      transfers.dispose();
      capture.dispose();
    } finally {
      disposeBackend(tf);
    }
  });
});
