// Sums on the webgpu backend, tfjs's kernels against the ones xtts installs (backend/programs/sum.ts),
// side by side in one process on one device.
// 1. Full float32 sums: tfjs's reduce (one workgroup for the whole tensor) against the spread sum (up
//    to 1,024 workgroups of partials, then one), at the sizes a training step sums: a batch's masked
//    mel loss (16 × 376 × 80 ≈ 0.5 M values) and the squared gradient of the tiny, small and normal
//    presets (1.7 M, 10.8 M, 62 M parameters). Each figure is the median wall time of sum + read-back
//    of the value, after one warm-up (pipelines compiled); the device-side gap is what the read-back
//    waits for.
// 2. Column sums (a bias gradient: Σ over the rows of [rows, out]) at the tiny and normal presets'
//    shapes: tfjs's transpose + reduce (two programs) against the strided sum (one). Each figure is the
//    median device time of one sum (tf.time's kernel time: WebGPU timestamp queries), and the programs
//    each path dispatched; where the device has no timestamp queries, the median wall time of 20 sums
//    and a read-back, per sum.
//   node --import tsx bench/reduce.bench.ts [--dawn-backend vulkan|opengles] [--device NAME] [--repeat 7]
//   GPU host: source .gpu-runtime/setup.sh && node bundle/reduce-bench.cjs
import { disposeBackend, initBackend } from '../src/core/backend/index.js';
import { KernelCounter } from '../src/core/backend/kernels.js';

import { median, report } from './lib.js';
import { switchGpuPrograms } from '../src/core/backend/index.js';

async function main(): Promise<void> {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const repeat = Number(arg('repeat') ?? 7);
  const { tf, choice } = await initBackend('webgpu', { dawnBackend: arg('dawn-backend'), device: arg('device') });
  const device = choice.adapter?.name ?? choice.backend;
  const figures: Record<string, number> = {};
  console.log(`${device}: full float32 sum + read-back, median of ${repeat} (ms)`);
  try {
    const bindable = choice.adapter?.limits.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY;
    for (const [label, n] of [
      ['mel loss 0.5 M', 481_280],
      ['tiny grad 1.7 M', 1_648_113],
      ['small grad 10.8 M', 10_785_009],
      ['normal grad 62 M', 62_002_417],
    ] as const) {
      if (4 * n > bindable) {
        console.log(
          `${label.padEnd(18)} skipped: ${((4 * n) / 2 ** 20).toFixed(0)} MiB is more than ` +
            `this device binds ` +
            `(maxStorageBufferBindingSize ${(bindable / 2 ** 20).toFixed(0)} MiB)`,
        );
        continue;
      }
      const x = tf.randomUniform([n], -1, 1, 'float32', 7);
      const row: Record<string, number> = {};
      for (const path of ['tfjs', 'spread'] as const) {
        switchGpuPrograms(tf, 'device-sums', path === 'spread');
        const times: number[] = [];
        for (let k = 0; k <= repeat; k++) {
          const t0 = performance.now();
          const s = tf.sum(x);
          await s.data();
          s.dispose();
          if (k > 0) times.push(performance.now() - t0);
        }
        row[path] = median(times);
        figures[`${path}Ms_${n}`] = Math.round(row[path] * 100) / 100;
      }
      x.dispose();
      console.log(
        `${label.padEnd(18)} tfjs ${row.tfjs.toFixed(2)} ms, ` +
          `spread ${row.spread.toFixed(2)} ms: ${(row.tfjs / row.spread).toFixed(1)}×`,
      );
    }
    console.log(`${device}: column sums (bias gradients), tfjs's transpose + reduce against the strided sum`);
    for (const [label, rows, cols] of [
      ['tiny, 128 wide', 3008, 128],
      ['tiny, 512 wide', 3008, 512],
      ['normal, 512 wide', 12032, 512],
      ['normal, 2048 wide', 12032, 2048],
    ] as const) {
      const x = tf.randomUniform([rows, cols], -1, 1, 'float32', 9);
      const row: Record<string, { ms: number; programs: number; error: number }> = {};
      // Each path's largest error against the host's float64 sums, over the column's Σ|x| (the size of its terms).
      const host = (await x.data()) as Float32Array;
      const exact = new Float64Array(cols);
      const scale = new Float64Array(cols);
      for (let r = 0; r < rows; r++) {
        for (let c = 0; c < cols; c++) {
          exact[c] += host[r * cols + c];
          scale[c] += Math.abs(host[r * cols + c]);
        }
      }
      const timed = (tf.backend() as unknown as { supportTimestampQuery?: boolean }).supportTimestampQuery === true;
      for (const path of ['tfjs', 'strided'] as const) {
        switchGpuPrograms(tf, 'device-sums', path === 'strided');
        const counter = new KernelCounter().install(tf);
        const first = tf.sum(x, 0);
        const programs = counter.takeAll().dispatches;
        counter.uninstall();
        const values = (await first.data()) as Float32Array;
        first.dispose();
        let error = 0;
        for (let c = 0; c < cols; c++) error = Math.max(error, Math.abs(values[c] - exact[c]) / scale[c]);
        const times: number[] = [];
        if (timed) {
          for (let k = 0; k < repeat; k++) times.push((await tf.time(() => tf.sum(x, 0).dispose())).kernelMs as number);
        } else {
          for (let k = 0; k < repeat; k++) {
            const t0 = performance.now();
            const sums = Array.from({ length: 20 }, () => tf.sum(x, 0));
            await sums[19].data();
            tf.dispose(sums);
            times.push((performance.now() - t0) / 20);
          }
        }
        row[path] = { ms: median(times), programs, error };
        figures[`${path}ColumnMs_${rows}x${cols}`] = Math.round(row[path].ms * 1000) / 1000;
        figures[`${path}ColumnPrograms_${rows}x${cols}`] = programs;
      }
      x.dispose();
      const how = timed ? 'device time' : 'wall per sum';
      console.log(
        `${label.padEnd(18)} [${rows}, ${cols}]: tfjs ${row.tfjs.ms.toFixed(3)} ms ` +
          `(${row.tfjs.programs} programs), strided ${row.strided.ms.toFixed(3)} ms ` +
          `(${row.strided.programs}), ${how}; error over Σ|x| ` +
          `tfjs ${row.tfjs.error.toExponential(1)}, ` +
          `strided ${row.strided.error.toExponential(1)}`,
      );
    }
    switchGpuPrograms(tf, 'device-sums', true);
    report('reduce', { device, repeat, ...figures });
  } finally {
    disposeBackend(tf);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
