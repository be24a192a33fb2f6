// Capture and replay of a static-shape step (backend/step-capture.ts) on the tests' real WebGPU device
// (Dawn on Mesa's llvmpipe through OpenGL ES): a replay computes what the eager step computes, bit for
// bit; what could make a replay wrong is refused with its reason. And the dropout offsets drawn before
// a step (what makes a training step's programs the same every time) give the masks drawn inline.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as tfCore from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { disposeBackend, initBackend } from '../../src/core/backend/index.js';
import { withoutLlvmpipe } from '../helpers/software-webgpu.js';
import { CaptureRefused, compareRecordings, recordStep, StepCapture } from '../../src/core/backend/step-capture.js';
import '../../src/core/model/gradients.js';
import { DropoutPool } from '../../src/core/model/nn.js';

type Tf = typeof tfCore;

/** One SGD step of ‖x·w‖² on w, the learning rate an input: returns [loss]. */
function sgd(tf: Tf, w: tfCore.Variable, x: tfCore.Tensor, lr: tfCore.Tensor) {
  return () =>
    tf.tidy(() => {
      const { value, grads } = tf.variableGrads(
        () => tf.sum(tf.square(tf.matMul(x as tfCore.Tensor2D, w as unknown as tfCore.Tensor2D))) as tfCore.Scalar,
        [w],
      );
      w.assign(tf.sub(w, tf.mul(grads[w.name], lr)));
      // A float32 cast of a bool shares the bool's int32 buffer: the replay must hand back 1, not 1e-45.
      return [value, tf.cast(tf.isFinite(value), 'float32')];
    });
}

describe('step capture on a real WebGPU device', { skip: withoutLlvmpipe }, () => {
  test(
    'two recorded steps agree; replays give the eager losses and weights bit for ' +
      'bit; weights assigned outside are bound again, disposed ones refuse the replay',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const w = tf.variable(tf.randomNormal([48, 48], 0, 0.1, 'float32', 1));
        const start = await w.data();
        const xs = Array.from({ length: 6 }, (_, i) => tf.randomNormal([40, 48], 0, 1, 'float32', 10 + i));
        const lrs = xs.map((_, i) => tf.tensor1d([1e-3 / (i + 1)]));
        const eager: number[] = [];
        for (const [i, x] of xs.entries()) eager.push((await sgd(tf, w, x, lrs[i])()[0].data())[0]);
        const eagerWeights = await w.data();
        w.assign(tf.tensor2d(start as Float32Array, [48, 48]));

        const replayed: number[] = [];
        const first = recordStep(tf, [xs[0], lrs[0]], sgd(tf, w, xs[0], lrs[0]));
        const second = recordStep(tf, [xs[1], lrs[1]], sgd(tf, w, xs[1], lrs[1]));
        assert.equal(first.recording.refused, null);
        assert.equal(compareRecordings(first.recording, second.recording), null);
        for (const r of [first, second]) replayed.push((await r.outputs[0].data())[0]);
        const capture = StepCapture.build(tf, second.recording);
        // Its programs, and one that copies the new weights over w's buffer.
        assert.equal(capture.programs, second.recording.programs.length + 1);
        for (let i = 2; i < xs.length; i++) {
          const [loss, finite] = capture.replay([xs[i], lrs[i]]);
          assert.equal(finite.dtype, 'float32');
          assert.deepEqual(Array.from(await finite.data()), [1]);
          replayed.push((await loss.data())[0]);
          // A read keeps a host copy of w in tfjs; the next replay changes w in place, so it must drop it.
          await w.data();
        }
        assert.equal(capture.replays, 4);
        assert.deepEqual(replayed, eager);
        assert.deepEqual(await w.data(), eagerWeights);

        // Weights assigned outside the step (loaded, or an eager step): the replay binds their new buffer.
        w.assign(tf.tensor2d(start as Float32Array, [48, 48]));
        assert.equal(capture.stale(), null);
        assert.equal((await capture.replay([xs[0], lrs[0]])[0].data())[0], eager[0]);
        assert.equal(capture.rebinds, 1);
        w.dispose();
        assert.match(capture.stale() ?? '', /variable .* was disposed/);
        assert.throws(() => capture.replay([xs[0], lrs[0]]), CaptureRefused);
        capture.dispose();
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    'variables whose buffers an eager step handed from one to the other: the replay ' +
      'copies each new value into its own variable',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const backend = tf.backend() as unknown as { tensorMap: Map<object, { resource?: object }> };
        const bufferOf = (v: tfCore.Variable) => backend.tensorMap.get(v.dataId)?.resource;
        const a = tf.variable(tf.randomNormal([48, 48], 0, 0.1, 'float32', 1));
        const b = tf.variable(tf.randomNormal([48, 48], 0, 0.1, 'float32', 2));
        const x = tf.randomNormal([40, 48], 0, 1, 'float32', 3);
        const lr = tf.tensor1d([1e-3]);
        const step = () =>
          tf.tidy(() => {
            const { value, grads } = tf.variableGrads(
              () =>
                tf.add(
                  tf.sum(tf.square(tf.matMul(x as tfCore.Tensor2D, a as unknown as tfCore.Tensor2D))),
                  tf.sum(tf.square(tf.matMul(x as tfCore.Tensor2D, b as unknown as tfCore.Tensor2D))),
                ) as tfCore.Scalar,
              [a, b],
            );
            a.assign(tf.sub(a, tf.mul(grads[a.name], lr)));
            b.assign(tf.sub(b, tf.mul(grads[b.name], lr)));
            return [value];
          });
        const first = recordStep(tf, [x, lr], step);
        const second = recordStep(tf, [x, lr], step);
        assert.equal(compareRecordings(first.recording, second.recording), null);
        const capture = StepCapture.build(tf, second.recording);
        // Eager steps elsewhere (another bucket's, or an eager optimizer update): b gets a new tensor,
        // and a then one that takes b's old buffer from tfjs's pool.
        const oldB = bufferOf(b);
        b.assign(tf.add(b, 0));
        // A read submits tfjs's pending work, after which b's old buffer is free.
        await b.data();
        a.assign(tf.add(a, 0));
        assert.equal(bufferOf(a), oldB, "the pool did not hand b's old buffer to a: this test sets up nothing");
        const [av, bv] = [await a.data(), await b.data()];
        await capture.replay([x, lr])[0].data();
        assert.equal(capture.rebinds, 1);
        const [ra, rb] = [await a.data(), await b.data()];
        // The same update eagerly, from the same values.
        a.assign(tf.tensor2d(av as Float32Array, [48, 48]));
        b.assign(tf.tensor2d(bv as Float32Array, [48, 48]));
        step();
        assert.deepEqual(ra, await a.data());
        assert.deepEqual(rb, await b.data());
        capture.dispose();
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    "a program of two outputs (a layer norm's dx, and the row moments its gain " +
      'gradient reads) is recorded as making both; replays give the eager losses and ' +
      'gain bit for bit',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const { LayerNorm } = await import('../../src/core/model/nn.js');
        const { ParamStore } = await import('../../src/core/model/params.js');
        const ln = new LayerNorm(new ParamStore(2), 'ln', 40);
        const start = await ln.g.data();
        const xs = Array.from({ length: 5 }, (_, i) => tf.randomNormal([30, 40], 0, 1, 'float32', 30 + i));
        const dy = tf.randomNormal([30, 40], 0, 1, 'float32', 9);
        const step = (x: tfCore.Tensor) => () =>
          tf.tidy(() => {
            const { value, grads } = tf.variableGrads(() => {
              const { normed, residual } = ln.applyWithResidual(x as tfCore.Tensor2D);
              return tf.sum(tf.mul(tf.add(tf.square(normed), residual), dy)) as tfCore.Scalar;
            }, [ln.g]);
            ln.g.assign(tf.sub(ln.g, tf.mul(grads[ln.g.name], 1e-2)));
            return [value];
          });
        const eager: number[] = [];
        for (const x of xs) eager.push((await step(x)()[0].data())[0]);
        const eagerGain = await ln.g.data();
        ln.g.assign(tf.tensor1d(start as Float32Array));
        const first = recordStep(tf, [xs[0]], step(xs[0]));
        const second = recordStep(tf, [xs[1]], step(xs[1]));
        assert.equal(compareRecordings(first.recording, second.recording), null);
        const rec = second.recording;
        const grad = rec.programs.findIndex((p) => p.shaderKey.startsWith('xtts_layernorm_grad'));
        const moments = rec.programs[grad].roles[rec.programs[grad].roles.length - 1];
        assert.equal(rec.roles[moments].kind, 'internal');
        assert.equal(rec.roles[moments].def, grad, 'the moments are made by the dx program');
        assert.ok(rec.programs[grad + 1].roles.includes(moments), 'and read by the gain gradient right after');
        const replayed = [(await first.outputs[0].data())[0], (await second.outputs[0].data())[0]];
        const capture = StepCapture.build(tf, rec);
        for (let i = 2; i < xs.length; i++) replayed.push((await capture.replay([xs[i]])[0].data())[0]);
        assert.deepEqual(replayed, eager);
        assert.deepEqual(await ln.g.data(), eagerGain);
        assert.notDeepEqual(eagerGain, start);
        capture.dispose();
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    'a replay submitted in parts, the event loop let run between them, gives the ' +
      "whole replay's losses and weights bit for bit",
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const w = tf.variable(tf.randomNormal([48, 48], 0, 0.1, 'float32', 1));
        const start = await w.data();
        const xs = Array.from({ length: 5 }, (_, i) => tf.randomNormal([40, 48], 0, 1, 'float32', 20 + i));
        const lrs = xs.map((_, i) => tf.tensor1d([1e-3 / (i + 1)]));
        const first = recordStep(tf, [xs[0], lrs[0]], sgd(tf, w, xs[0], lrs[0]));
        const second = recordStep(tf, [xs[1], lrs[1]], sgd(tf, w, xs[1], lrs[1]));
        assert.equal(compareRecordings(first.recording, second.recording), null);
        const capture = StepCapture.build(tf, second.recording);
        assert.ok(capture.programs >= 3, `${capture.programs} programs`);
        const afterRecording = await w.data();
        const whole: number[] = [];
        for (let i = 2; i < xs.length; i++) whole.push((await capture.replay([xs[i], lrs[i]])[0].data())[0]);
        const wholeWeights = await w.data();
        w.assign(tf.tensor2d(afterRecording as Float32Array, [48, 48]));
        const parts: number[] = [];
        for (let i = 2; i < xs.length; i++) {
          let ranBetween = false;
          setImmediate(() => (ranBetween = true));
          const replay = capture.replayInParts([xs[i], lrs[i]], 3);
          assert.equal(ranBetween, false);
          const [loss] = await replay;
          // The event loop ran while the parts were submitted.
          assert.equal(ranBetween, true);
          parts.push((await loss.data())[0]);
        }
        assert.deepEqual(parts, whole);
        assert.deepEqual(await w.data(), wholeWeights);
        assert.notDeepEqual(wholeWeights, start);
        capture.dispose();
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    'dropout on webgpu: a residual add is one program with its mask, drawn offsets ' +
      "give the inline masks bit for bit, values and gradients; relu's gradient in one " +
      "program is tfjs's, and with its column sums still one",
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const { KernelCounter } = await import('../../src/core/backend/index.js');
        const { relu } = await import('../../src/core/model/nn.js');
        const base = tf.randomNormal([30, 50], 0, 1, 'float32', 1);
        const y = tf.randomNormal([30, 50], 0, 1, 'float32', 2);
        const up = tf.randomNormal([30, 50], 0, 1, 'float32', 3);
        const run = (pool: DropoutPool) =>
          tf.valueAndGrads((b: tfCore.Tensor, x: tfCore.Tensor) =>
            tf.sum(tf.mul(pool.residual(b, pool.apply(x, 0.3), 0.1), up)),
          )([base, y]);
        const inline = new DropoutPool(7);
        const { result: want, calls } = inline.recordPlan(() => run(inline));
        const drawn = new DropoutPool(7);
        const offsets = tf.tensor1d(drawn.drawOffsets(calls), 'int32');
        const got = drawn.useOffsets(calls, offsets, () => run(drawn));
        for (const [i, [a, b]] of [[got.value, want.value], ...got.grads.map((g, j) => [g, want.grads[j]])].entries())
          assert.deepEqual(await a.data(), await b.data(), `output ${i}`);
        // The composition on the same masks: base + x·mask within float32 rounding.
        const again = new DropoutPool(7);
        const composed = again.useOffsets(calls, offsets, () => tf.add(base, again.apply(again.apply(y, 0.3), 0.1)));
        const fused = drawn.useOffsets(calls, offsets, () => drawn.residual(base, drawn.apply(y, 0.3), 0.1));
        const [a, b] = [await fused.data(), await composed.data()];
        assert.ok(a.every((v, i) => Math.abs(v - b[i]) <= 1e-6 * (1 + Math.abs(b[i]))));
        const counter = new KernelCounter().install(tf);
        drawn.useOffsets(calls, offsets, () => drawn.residual(base, drawn.apply(y, 0.3), 0.1));
        assert.equal(counter.takeAll().dispatches, 2, 'a dropout, then a dropout and the add');
        // relu: its gradient one program, tfjs's values (NaN passed on where the input is NaN).
        const x = tf.tensor1d([
          -2,
          -0,
          0,
          1e-30,
          3,
          Number.NaN,
          -Number.NaN,
          5,
          ...Array.from({ length: 1200 }, (_, i) => Math.sin(i) * 3),
        ]);
        const dy = tf.randomNormal([x.size], 0, 1, 'float32', 4);
        counter.takeAll();
        const ours = tf.grad((t: tfCore.Tensor) => tf.mul(relu(t), dy))(x);
        const ourPrograms = counter.takeAll().dispatches;
        const tfjs = tf.grad((t: tfCore.Tensor) => tf.mul(tf.relu(t), dy))(x);
        const tfjsPrograms = counter.takeAll().dispatches;
        counter.uninstall();
        assert.deepEqual(await ours.data(), await tfjs.data());
        assert.equal(tfjsPrograms - ourPrograms, 1, `${ourPrograms} programs against tfjs's ${tfjsPrograms}`);
        // A dense layer's: the gradient and its column sums (the bias gradient) in one program, the
        // same bits as the gradient program and the strided sum apart.
        const { reluGradAndColumnSums, reluGrad } = await import('../../src/core/backend/programs/relu.js');
        const x2 = tf.reshape(tf.slice(x, 0, 1200), [40, 30]) as tfCore.Tensor2D;
        const dy2 = tf.randomNormal([40, 30], 0, 1, 'float32', 5) as tfCore.Tensor2D;
        const counter2 = new KernelCounter().install(tf);
        const [dz, db] = reluGradAndColumnSums(dy2, x2);
        assert.equal(counter2.takeAll().dispatches, 1);
        counter2.uninstall();
        const apart = reluGrad(dy2, x2);
        assert.deepEqual(await dz.data(), await apart.data());
        assert.deepEqual(await db.data(), await tf.sum(apart, 0).data());
        assert.deepEqual(dz.shape, [40, 30]);
        assert.deepEqual(db.shape, [30]);
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    "a residual branch that ends in a linear layer: the dropout's gradient and the " +
      'bias gradient in one program, the values and gradients of the dropout and the ' +
      'layer apart bit for bit',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const { KernelCounter } = await import('../../src/core/backend/index.js');
        const { Linear } = await import('../../src/core/model/nn.js');
        const { ParamStore } = await import('../../src/core/model/params.js');
        const linear = new Linear(new ParamStore(4), 'proj', 24, 40);
        linear.b.assign(tf.randomNormal([40], 0, 1, 'float32', 8));
        const base = tf.randomNormal([30, 40], 0, 1, 'float32', 1) as tfCore.Tensor2D;
        const h = tf.randomNormal([30, 24], 0, 1, 'float32', 2) as tfCore.Tensor2D;
        const up = tf.randomNormal([30, 40], 0, 1, 'float32', 3);
        const run = (fused: boolean) => {
          const pool = new DropoutPool(7);
          const counter = new KernelCounter().install(tf);
          const { value, grads } = tf.variableGrads(() => {
            const y = fused ? pool.residualLinear(base, linear, h, 0.2) : pool.residual(base, linear.apply(h), 0.2);
            return tf.sum(tf.mul(y, up)) as tfCore.Scalar;
          }, [linear.w, linear.b]);
          const programs = counter.takeAll().dispatches;
          counter.uninstall();
          return { value, w: grads[linear.w.name], b: grads[linear.b.name], programs };
        };
        const [apart, fused] = [run(false), run(true)];
        assert.deepEqual(await fused.value.data(), await apart.value.data());
        assert.deepEqual(await fused.w.data(), await apart.w.data());
        assert.deepEqual(await fused.b.data(), await apart.b.data());
        assert.equal(fused.programs, apart.programs - 1);
        // The branch's input and the residual's get the same gradients too.
        const inputs = (fused: boolean) => {
          const pool = new DropoutPool(7);
          return tf.grads((hh: tfCore.Tensor, bb: tfCore.Tensor) =>
            tf.sum(
              tf.mul(
                fused
                  ? pool.residualLinear(bb as tfCore.Tensor2D, linear, hh as tfCore.Tensor2D, 0.2)
                  : pool.residual(bb, linear.apply(hh as tfCore.Tensor2D), 0.2),
                up,
              ),
            ),
          )([h, base]);
        };
        const [a, b] = [inputs(false), inputs(true)];
        for (let i = 0; i < 2; i++) assert.deepEqual(await b[i].data(), await a[i].data());
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    'the copies a replay ends with, as compute programs of up to 15 pieces from one ' +
      "source (the device's storage buffers a stage, less the source's): every word in " +
      'place; a copy of part of a word is refused',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const { CopyPrograms } = await import('../../src/core/backend/replay-copies.js');
        const device = (tf.backend() as any).device;
        const [STORAGE, COPY_SRC, COPY_DST, MAP_READ] = [0x80, 0x04, 0x08, 0x01];
        const make = (words: Uint32Array) => {
          const b = device.createBuffer({ size: Math.max(4, words.byteLength), usage: STORAGE | COPY_SRC | COPY_DST });
          device.queue.writeBuffer(b, 0, words);
          return b;
        };
        const flat = Uint32Array.from({ length: 70_000 }, (_, i) => (i * 2654435761) >>> 0);
        const other = Uint32Array.from({ length: 300 }, (_, i) => 7 * i + 1);
        const [source, second] = [make(flat), make(other)];
        // 17 pieces of the flat source (sizes from one word to 20,000), one of another source, one of none.
        const sizes = Array.from({ length: 17 }, (_, k) => [1, 3, 255, 256, 257, 20_000][k % 6] + k);
        let at = 0;
        const copies = sizes.map((words) => {
          const c = { from: source, offsetBytes: 4 * at, to: make(new Uint32Array(words)), bytes: 4 * words };
          at += words;
          return c;
        });
        copies.push({ from: second, offsetBytes: 4 * 5, to: make(new Uint32Array(290)), bytes: 4 * 290 });
        copies.push({ from: second, offsetBytes: 8, to: make(new Uint32Array(2)), bytes: 0 });
        const programs = new CopyPrograms(device, copies);
        assert.equal(programs.perProgram, Math.min(15, device.limits.maxStorageBuffersPerShaderStage - 1));
        assert.ok(
          programs.perProgram > 7,
          `llvmpipe's ${device.limits.maxStorageBuffersPerShaderStage} storage buffers a ` +
            `stage: more than 7 pieces a program`,
        );
        assert.equal(programs.count, Math.ceil(17 / programs.perProgram) + 1);
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        programs.encode(pass);
        pass.end();
        device.queue.submit([encoder.finish()]);
        const read = async (b: { size: number }) => {
          const staging = device.createBuffer({ size: b.size, usage: MAP_READ | COPY_DST });
          const e = device.createCommandEncoder();
          e.copyBufferToBuffer(b, 0, staging, 0, b.size);
          device.queue.submit([e.finish()]);
          await staging.mapAsync(1);
          const words = new Uint32Array(staging.getMappedRange().slice(0));
          staging.unmap();
          return words;
        };
        at = 0;
        for (const [k, words] of sizes.entries()) {
          assert.deepEqual(await read(copies[k].to), flat.subarray(at, at + words), `piece ${k}`);
          at += words;
        }
        assert.deepEqual(await read(copies[17].to), other.subarray(5, 295));
        assert.deepEqual(Array.from(await read(copies[18].to)), [0, 0]);
        programs.dispose();
        assert.throws(
          () => new CopyPrograms(device, [{ from: second, offsetBytes: 8, to: copies[18].to, bytes: 6 }]),
          /whole 32-bit words only/,
        );
      } finally {
        disposeBackend(tf);
      }
    },
  );

  test(
    'refused with the reason: a read-back inside the step, a per-step value uploaded ' +
      'inside it, a per-step uniform',
    async () => {
      const { tf } = await initBackend('webgpu', { dawnBackend: 'opengles', device: 'llvmpipe' });
      try {
        const x = tf.randomNormal([64, 64], 0, 1, 'float32', 3);
        let pending: Promise<unknown> | undefined;
        const reads = recordStep(tf, [x], () => {
          const y = tf.relu(x);
          pending = y.data();
          return [tf.sum(y)];
        });
        await pending;
        assert.match(reads.recording.refused ?? '', /reads a tensor back/);
        // A learning rate made inside the step instead of passed in.
        const upload = (lr: number) => recordStep(tf, [x], () => [tf.mul(x, tf.scalar(lr))]).recording;
        assert.match(compareRecordings(upload(1e-3), upload(2e-3)) ?? '', /an upload made inside the step changed/);
        assert.equal(compareRecordings(upload(1e-3), upload(1e-3)), null);
        // A slice whose start moves each step (what dropout did before its offsets became an input).
        const slice = (start: number) =>
          recordStep(tf, [x], () => [tf.slice(tf.reshape(x, [-1]), [start], [100])]).recording;
        assert.match(compareRecordings(slice(0), slice(7)) ?? '', /its uniforms changed/);
        // An output the step did not compute.
        const passthrough = recordStep(tf, [x], () => [x]).recording;
        assert.match(passthrough.refused ?? '', /not made by its programs/);
        assert.throws(() => StepCapture.build(tf, passthrough), CaptureRefused);
      } finally {
        disposeBackend(tf);
      }
    },
  );
});

test(
  'dropout offsets drawn before a step give the masks drawn inline, and the ' + 'generator ends where it would',
  async () => {
    await tfCore.setBackend('cpu');
    const x = tfCore.ones([6, 50]);
    const run = (pool: DropoutPool) => [pool.apply(x, 0.1), pool.apply(tfCore.ones([3, 7]), 0.5), pool.apply(x, 0.1)];
    const inline = new DropoutPool(7);
    const { result: want, calls } = inline.recordPlan(() => run(inline));
    assert.deepEqual(
      calls.map((c) => [c.rate, c.size]),
      [
        [0.1, 300],
        [0.5, 21],
        [0.1, 300],
      ],
    );
    const drawn = new DropoutPool(7);
    const offsets = tfCore.tensor1d(drawn.drawOffsets(calls), 'int32');
    const got = drawn.useOffsets(calls, offsets, () => run(drawn));
    for (let i = 0; i < want.length; i++) assert.deepEqual(await got[i].data(), await want[i].data(), `call ${i}`);
    assert.equal(drawn.rngState, inline.rngState);
    // A step that no longer matches its plan is refused, not silently given other masks.
    assert.throws(
      () => drawn.useOffsets(calls, offsets, () => drawn.apply(tfCore.ones([5]), 0.1)),
      /dropout call 0 \(rate 0\.1, 5 values\) is not the planned one/,
    );
  },
);
