// The matmuls of a training step, one program at a time, on the WebGPU device: device time per matmul
// (GPU timestamp queries), TFLOP/s, and the error against a float64 product on the host, for each
// program xtts can run them with:
//   tfjs     tfjs-backend-webgpu's own programs (MatMulPackedProgram for these sizes), float32
//   tiled    xtts's tiled float32 program (device.matmul: tiled)
//   f16      xtts's tensor-core program (training.precision: mixed_fp16): f16 operands through Dawn's
//            subgroup matrices, f32 accumulation; needs shader-f16 and chromium-experimental-subgroup-matrix
// The shapes are the largest matmuls of a normal-preset step at batch 32 over one bucket of 80 tokens ×
// 376 frames (recorded from the model's BatchMatMul and _FusedMatMul calls): the decoder's and text
// encoder's projections and their two gradients, the postnet's composed convolution (5 taps × 512
// channels), and the attention's batched products.
//
// node --import tsx bench/matmul.bench.ts [--variants tfjs,tiled,f16] [--reps 20] [--device 0|NAME] [--shapes
// M×N×K[:tA][:tB][:bBATCH],...]
// [--bounds-checks]   (with Dawn's bounds clamps in every shader: device.bounds_checks on; without them by
//                     default, as training runs)
// [--tunings NAME=KEY:VALUE+KEY:VALUE;...]  builds of the f16 program to time beside it, each a variant
//                                           "f16@NAME" (F16Tuning's keys: vector, prefetch, direct as
//                                           0/1, buffers 1/2, slab 32/64, subgroups 4/8, maxParts; the
//                                           rest as the default build)
//   node bundle/matmul-bench.cjs ...                      (from the self-contained bundle: npm run bundle)
//   ... --dense ROWS×IN×OUT,...             a dense layer's backward (dx, dW and db) instead: as one
//                                           float32 program (backend/programs/dense.ts) against the two
//                                           matmuls and the column sum apart, per variant (a layer above
//                                           denseGradsMaxFlops runs apart either way: see its programs),
//                                           and with f16 its two matmuls in one tensor-core dispatch
//                                           (f16_pair, which must give f16_apart's bits)
//   ... --attention B×H×TQ×TK×DH,...        an attention's forward and backward instead (attendPacked: the
//                                           scores, softmax and context, then the gradients of its packed
//                                           projections; TQ = TK a self-attention over one projection,
//                                           else a cross-attention), its strided products in the wide
//                                           float32 program (f32) and on the tensor cores (f16: mixed_fp16's
//                                           `attention` switch), each output's largest difference from
//                                           f32's relative to f32's largest value
//
// A variant the device cannot run is reported with the reason and skipped.
import type * as TfTypes from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, timeOnDevice } from '../src/core/backend/index.js';
import { takeGpuError } from '../src/core/backend/webgpu.js';

import { attendPacked } from '../src/core/backend/programs/attention.js';
import { denseBackward } from '../src/core/backend/programs/dense-layer.js';
import '../src/core/model/gradients.js';
import { mulberry32 } from '../src/core/data/buckets.js';
import { median, report } from './lib.js';
import {
  DEFAULT_F16_TUNING,
  type F16Tuning,
  parseF16Tuning,
  selectGpuPrograms,
  switchGpuPrograms,
  type MatMulProgram,
} from '../src/core/backend/index.js';

type Tf = typeof TfTypes;

interface Shape {
  m: number;
  n: number;
  k: number;
  transposeA: boolean;
  transposeB: boolean;
  batch: number;
  label: string;
}

const NORMAL: Shape[] = [
  ['12032×2048×512', 'decoder FFN in'],
  ['12032×512×2048', 'decoder FFN out'],
  ['12032×512×2048:tB', 'FFN in, input gradient'],
  ['512×2048×12032:tA', 'FFN in, weight gradient'],
  ['12032×1536×512', 'decoder QKV'],
  ['12160×2560×512', 'postnet taps'],
  ['12160×512×2560:tB', 'postnet taps, input gradient'],
  ['512×2560×12160:tA', 'postnet taps, weight gradient'],
  ['188×64×188:b256', 'attention context'],
  ['188×188×64:tB:b256', 'attention scores'],
].map(([s, label]) => parseShape(s, label));

function parseShape(s: string, label = s): Shape {
  const [dims, ...flags] = s.split(':');
  const [m, n, k] = dims.split(/[×x]/).map(Number);
  if (![m, n, k].every((v) => Number.isInteger(v) && v > 0))
    throw new Error(`--shapes: "${s}" is not M×N×K[:tA][:tB][:bBATCH]`);
  const batch = Number(flags.find((f) => f.startsWith('b'))?.slice(1) ?? 1);
  return { m, n, k, transposeA: flags.includes('tA'), transposeB: flags.includes('tB'), batch, label };
}

/** --tunings: builds of the f16 program by name, each its keys over the default's (parseF16Tuning). */
function parseTunings(spec: string | undefined): Map<string, F16Tuning> {
  const tunings = new Map<string, F16Tuning>();
  for (const entry of spec?.split(';').filter(Boolean) ?? []) {
    const [name, keys] = entry.split('=');
    tunings.set(name, parseF16Tuning(keys ?? '', `--tunings ${name}`));
  }
  return tunings;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Deterministic values in [-1, 1) (the project's mulberry32): the same operands every run. */
function values(n: number, seed: number): Float32Array {
  const rand = mulberry32(seed);
  return Float32Array.from({ length: n }, () => 2 * rand() - 1);
}

/**
 * The largest error over 512 sampled outputs, each relative to Σ_k |a_ik·b_kj| (the size of the sum's
 * terms: an f16 operand's rounding error is relative to them, not to a sum that cancels).
 */
function sampledError(s: Shape, a: Float32Array, b: Float32Array, out: Float32Array): number {
  let worst = 0;
  for (let t = 0; t < 512; t++) {
    const bi = t % s.batch;
    const i = (t * 7919) % s.m;
    const j = (t * 104729) % s.n;
    let sum = 0;
    let mag = 0;
    for (let kk = 0; kk < s.k; kk++) {
      const av = s.transposeA ? a[bi * s.k * s.m + kk * s.m + i] : a[bi * s.m * s.k + i * s.k + kk];
      const bv = s.transposeB ? b[bi * s.n * s.k + j * s.k + kk] : b[bi * s.k * s.n + kk * s.n + j];
      sum += av * bv;
      mag += Math.abs(av * bv);
    }
    worst = Math.max(worst, Math.abs(out[bi * s.m * s.n + i * s.n + j] - sum) / Math.max(mag, 1e-30));
  }
  return worst;
}

/** The largest sampled errors of dx, dW and db against float64 sums, each relative to Σ|terms|. */
function denseErrors(
  rows: number,
  inD: number,
  outD: number,
  dz: Float32Array,
  x: Float32Array,
  w: Float32Array,
  got: Float32Array[],
): number[] {
  const worst = [0, 0, 0];
  const note = (which: number, value: number, sum: number, mag: number) => {
    worst[which] = Math.max(worst[which], Math.abs(value - sum) / Math.max(mag, 1e-30));
  };
  for (let t = 0; t < 256; t++) {
    const [r, i, j] = [(t * 7919) % rows, (t * 104729) % inD, (t * 1299709) % outD];
    let [sum, mag] = [0, 0];
    for (let k = 0; k < outD; k++) {
      sum += dz[r * outD + k] * w[i * outD + k];
      mag += Math.abs(dz[r * outD + k] * w[i * outD + k]);
    }
    note(0, got[0][r * inD + i], sum, mag);
    [sum, mag] = [0, 0];
    let [bias, biasMag] = [0, 0];
    for (let q = 0; q < rows; q++) {
      sum += x[q * inD + i] * dz[q * outD + j];
      mag += Math.abs(x[q * inD + i] * dz[q * outD + j]);
      bias += dz[q * outD + j];
      biasMag += Math.abs(dz[q * outD + j]);
    }
    note(1, got[1][i * outD + j], sum, mag);
    note(2, got[2][j], bias, biasMag);
  }
  return worst;
}

/** Wall time each variant runs before it is timed, and the rounds of `reps` calls timed. */
const WARM_MS = 400;
const ROUNDS = 5;

/**
 * One program variant on the device: `once` run and read back, the device's error recorded in `row`
 * under `key` (null then), else its outputs and the median device time (and programs) per call over
 * ROUNDS rounds of `reps` calls, after WARM_MS of them untimed.
 */
async function timed(
  tf: Tf,
  key: string,
  row: Record<string, unknown>,
  reps: number,
  once: () => TfTypes.Tensor[],
): Promise<{ got: Float32Array[]; ms: number; programs: number } | null> {
  const first = once();
  const got = (await Promise.all(first.map((t) => t.data()))) as Float32Array[];
  tf.dispose(first);
  const gpuError = takeGpuError();
  if (gpuError) {
    console.log(`${key} on ${row.shape}: the device reported: ${gpuError}`);
    row[`${key}_failed`] = gpuError.slice(0, 2000);
    return null;
  }
  // The GPU's clocks drop while it waits (a new program compiling, the host checking the last one): without
  // this the same program read 0.54 and 1.59 ms on an H200 in one call. WARM_MS of work before the timed rounds.
  const warmUntil = performance.now() + WARM_MS;
  while (performance.now() < warmUntil)
    await timeOnDevice(tf, () => {
      for (let i = 0; i < reps; i++) tf.dispose(once());
    });
  const times: number[] = [];
  let programs = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t = await timeOnDevice(tf, () => {
      for (let i = 0; i < reps; i++) tf.dispose(once());
    });
    if (t.available) {
      times.push(t.kernelMs / reps);
      programs = t.programs.reduce((a, p) => a + p.count, 0) / reps;
    }
  }
  return { got, ms: times.length ? median(times) : Number.NaN, programs };
}

/**
 * --dense: a dense layer's backward (dz = dy, dx, dW, db) as one float32 program (backend/programs/dense.ts)
 * against the programs apart, float32 (tfjs) and with mixed_fp16's tensor-core matmuls (f16).
 */
async function dense(
  tf: Tf,
  variants: MatMulProgram[],
  reps: number,
  shapes: number[][],
): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const [n, inD, outD] of shapes) {
    const dzv = values(n * outD, 1);
    const xv = values(n * inD, 2);
    const wv = values(inD * outD, 3);
    const [dz, x, w] = [tf.tensor2d(dzv, [n, outD]), tf.tensor2d(xv, [n, inD]), tf.tensor2d(wv, [inD, outD])];
    const row: Record<string, unknown> = { shape: `${n}×${inD}×${outD}`, gflop: (4 * n * inD * outD) / 1e9 };
    const keys = ['one', ...variants.map((v) => `${v}_apart`), ...(variants.includes('f16') ? ['f16_pair'] : [])];
    const outputs: Record<string, Float32Array[]> = {};
    for (const key of keys) {
      selectGpuPrograms(tf, { matmul: key === 'one' ? 'tfjs' : (key.split('_')[0] as MatMulProgram) });
      switchGpuPrograms(tf, 'dense-grads', key === 'one'), switchGpuPrograms(tf, 'paired-dense', key === 'f16_pair');
      const t = await timed(tf, key, row, reps, () => denseBackward(dz, x, w, { kind: 'plain' }));
      if (!t) continue;
      outputs[key] = t.got;
      row[`${key}_ms`] = Number(t.ms.toFixed(4));
      row[`${key}_programs`] = t.programs;
      row[`${key}_error`] = denseErrors(n, inD, outD, dzv, xv, wv, t.got).map((e) => Number(e.toExponential(2)));
    }
    switchGpuPrograms(tf, 'dense-grads', true), switchGpuPrograms(tf, 'paired-dense', true);
    tf.dispose([dz, x, w]);
    // The paired dispatch computes each tile as the f16 program does alone: the same bits.
    if (outputs.f16_pair && outputs.f16_apart)
      row.f16_pair_same_bits = outputs.f16_pair.every(
        (o, i) => o.length === outputs.f16_apart[i].length && o.every((v, j) => Object.is(v, outputs.f16_apart[i][j])),
      );
    rows.push(row);
    console.log(
      [
        row.shape,
        ...keys.map(
          (k) => `${k} ${row[`${k}_ms`]} ms (${row[`${k}_programs`]} programs) err dx/dW/db ${row[`${k}_error`]}`,
        ),
        ...('f16_pair_same_bits' in row ? [`f16 pair = apart bit for bit: ${row.f16_pair_same_bits}`] : []),
      ].join(' | '),
    );
  }
  return rows;
}

/** Largest |got − want| over the largest |want|: a whole output's error relative to its size. */
function relativeDifference(got: Float32Array, want: Float32Array): number {
  let [diff, size] = [0, 0];
  for (let i = 0; i < want.length; i++) {
    diff = Math.max(diff, Math.abs(got[i] - want[i]));
    size = Math.max(size, Math.abs(want[i]));
  }
  return diff / Math.max(size, 1e-30);
}

/**
 * --attention: attendPacked's forward and backward (the context, and the gradients of its projections for an upstream
 * gradient of random values), with the strided products in the wide float32 program and on the tensor cores.
 */
async function attention(tf: Tf, reps: number, shapes: number[][]): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const [batch, heads, tq, tk, dh] of shapes) {
    const width = heads * dh;
    const self = tq === tk;
    // Projections of random values in [-1, 1): q, k and v of one [B·T, 3·width] (self), or q [B·Tq, width] and k, v
    // of one [B·Tk, 2·width] (cross); the bias a key mask of zeros; dy the context's gradient.
    const inputs = self
      ? [tf.tensor2d(values(batch * tq * 3 * width, 1), [batch * tq, 3 * width])]
      : [
          tf.tensor2d(values(batch * tq * width, 1), [batch * tq, width]),
          tf.tensor2d(values(batch * tk * 2 * width, 2), [batch * tk, 2 * width]),
        ];
    const bias = tf.zeros([batch, 1, 1, tk]);
    const dy = tf.tensor2d(values(batch * tq * width, 3), [batch * tq, width]);
    // q is the first input's first part; k and v the same input's next parts (self) or the second input's (cross).
    const kvx = self ? 0 : 1;
    const once = () =>
      tf.tidy(() => {
        const f = (...xs: TfTypes.Tensor[]) => {
          const at = (x: number, column: number, steps: number) => ({ x: xs[x] as TfTypes.Tensor2D, column, steps });
          const kv = self ? width : 0;
          const context = attendPacked(at(0, 0, tq), at(kvx, kv, tk), at(kvx, kv + width, tk), batch, heads, dh, bias);
          return tf.sum(tf.mul(context, dy));
        };
        return tf.grads(f)(inputs);
      });
    const flop = 2 * 2 * batch * heads * tq * tk * dh * 3;
    const row: Record<string, unknown> = { shape: `${batch}×${heads}×${tq}×${tk}×${dh}`, gflop: flop / 1e9 };
    const outputs: Record<string, Float32Array[]> = {};
    for (const key of ['f32', 'f16']) {
      selectGpuPrograms(tf, { matmul: 'f16', f16Tuning: { ...DEFAULT_F16_TUNING, attention: key === 'f16' } });
      const t = await timed(tf, key, row, reps, once);
      if (!t) continue;
      outputs[key] = t.got;
      row[`${key}_ms`] = Number(t.ms.toFixed(4));
      row[`${key}_tflops`] = Number((flop / (t.ms * 1e-3) / 1e12).toFixed(2));
      row[`${key}_programs`] = t.programs;
    }
    if (outputs.f16 && outputs.f32)
      row.f16_difference = outputs.f16.map((o, i) => Number(relativeDifference(o, outputs.f32[i]).toExponential(2)));
    tf.dispose([...inputs, bias, dy]);
    rows.push(row);
    console.log(
      [
        row.shape,
        `${(flop / 1e9).toFixed(2)} GFLOP (products only)`,
        ...['f32', 'f16'].map(
          (k) => `${k} ${row[`${k}_ms`]} ms ${row[`${k}_tflops`]} TFLOP/s (${row[`${k}_programs`]} programs)`,
        ),
        `f16 − f32 / max |f32|, each gradient: ${row.f16_difference}`,
      ].join(' | '),
    );
  }
  return rows;
}

async function main(): Promise<void> {
  const variants = (arg('variants') ?? 'tfjs,tiled,f16').split(',') as MatMulProgram[];
  const tunings = parseTunings(arg('tunings'));
  const reps = Number(arg('reps') ?? 20);
  const shapes =
    arg('shapes')
      ?.split(',')
      .map((s) => parseShape(s)) ?? NORMAL;
  const device = arg('device');
  const options = {
    device: device === undefined ? null : /^\d+$/.test(device) ? Number(device) : device,
    unsafeApis: true,
    robustness: process.argv.includes('--bounds-checks'),
  };
  const { tf, choice } = await initBackend('webgpu', {
    ...options,
    precision: variants.includes('f16') ? 'mixed_fp16' : 'fp32',
  }).catch(async (e: Error) => {
    if (!variants.includes('f16')) throw e;
    console.log(`f16: ${e.message}; timing the float32 programs only`);
    variants.splice(variants.indexOf('f16'), 1);
    return initBackend('webgpu', options);
  });
  const a = choice.adapter;
  console.log(
    `device: ${a?.name} (${a?.description}); ` +
      `shader-f16 ${a?.shaderF16 ? 'yes' : 'no'}; subgroup ` +
      `widths ${a?.subgroupSizes ? `${a.subgroupSizes.min}–${a.subgroupSizes.max}` : 'not stated'}; ` +
      (`subgroup matrices: ` +
        (a?.subgroupMatrixConfigs
          .map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}×${c.N}×${c.K}`)
          .join(', ') || 'none')),
  );
  const attentionShapes = arg('attention');
  if (attentionShapes) {
    const shapesOf = attentionShapes.split(',').map((s) => s.split(/[×x]/).map(Number));
    if (!shapesOf.every((d) => d.length === 5 && d.every((v) => Number.isInteger(v) && v > 0)))
      throw new Error(`--attention: "${attentionShapes}" is not B×H×TQ×TK×DH,...`);
    if (!variants.includes('f16')) throw new Error('--attention: needs the f16 variant (a device with tensor cores)');
    const rows = await attention(tf, reps, shapesOf);
    selectGpuPrograms(tf, { matmul: 'tfjs', f16Tuning: DEFAULT_F16_TUNING });
    report('attention', { device: choice.adapter?.name, reps, rows });
    disposeBackend(tf);
    return;
  }
  const denseShapes = arg('dense');
  if (denseShapes) {
    const shapesOf = denseShapes.split(',').map((s) => s.split(/[×x]/).map(Number));
    if (!shapesOf.every((d) => d.length === 3 && d.every((v) => Number.isInteger(v) && v > 0)))
      throw new Error(`--dense: "${denseShapes}" is not ROWS×IN×OUT,...`);
    const rows = await dense(
      tf,
      variants.filter((v) => v !== 'tiled'),
      reps,
      shapesOf,
    );
    selectGpuPrograms(tf, { matmul: 'tfjs' });
    report('dense-backward', { device: choice.adapter?.name, variants, reps, rows });
    disposeBackend(tf);
    return;
  }
  // f16 in each --tunings build beside f16 in the default one.
  const timedVariants: string[] = variants.flatMap((v) =>
    v === 'f16' ? ['f16', ...[...tunings.keys()].map((name) => `f16@${name}`)] : [v],
  );
  const rows: Record<string, unknown>[] = [];
  for (const s of shapes) {
    const aShape = [...(s.batch > 1 ? [s.batch] : []), ...(s.transposeA ? [s.k, s.m] : [s.m, s.k])];
    const bShape = [...(s.batch > 1 ? [s.batch] : []), ...(s.transposeB ? [s.n, s.k] : [s.k, s.n])];
    const av = values(
      aShape.reduce((x, y) => x * y, 1),
      1,
    );
    const bv = values(
      bShape.reduce((x, y) => x * y, 1),
      2,
    );
    const a = tf.tensor(av, aShape);
    const b = tf.tensor(bv, bShape);
    const flop = 2 * s.batch * s.m * s.n * s.k;
    const row: Record<string, unknown> = {
      shape:
        `${s.m}×${s.n}×${s.k}${s.transposeA ? ' Aᵀ' : ''}${s.transposeB ? ' Bᵀ' : ''}` +
        (s.batch > 1 ? ` ×${s.batch}` : ''),
      label: s.label,
      gflop: flop / 1e9,
    };
    for (const v of timedVariants) {
      const [program, build] = v.split('@');
      selectGpuPrograms(tf, {
        matmul: program as MatMulProgram,
        f16Tuning: build ? (tunings.get(build) as F16Tuning) : DEFAULT_F16_TUNING,
      });
      const t = await timed(tf, v, row, reps, () => [tf.matMul(a, b, s.transposeA, s.transposeB)]);
      if (!t) continue;
      row[`${v}_ms`] = Number(t.ms.toFixed(4));
      row[`${v}_tflops`] = Number((flop / (t.ms * 1e-3) / 1e12).toFixed(2));
      row[`${v}_error`] = Number(sampledError(s, av, bv, t.got[0]).toExponential(2));
    }
    tf.dispose([a, b]);
    rows.push(row);
    console.log(
      [
        row.shape,
        row.label,
        `${(flop / 1e9).toFixed(1)} GFLOP`,
        ...timedVariants.map((v) =>
          `${v}_failed` in row
            ? `${v} failed (above)`
            : `${v} ${row[`${v}_ms`]} ms ${row[`${v}_tflops`]} TFLOP/s err ${row[`${v}_error`]}`,
        ),
      ].join(' | '),
    );
  }
  selectGpuPrograms(tf, { matmul: 'tfjs', f16Tuning: DEFAULT_F16_TUNING });
  report('matmul', {
    device: choice.adapter?.name,
    variants: timedVariants,
    tunings: Object.fromEntries(tunings),
    reps,
    rows,
  });
  disposeBackend(tf);
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
