// A full float32 sum on the webgpu backend: tfjs's reduce (one workgroup for the whole tensor) against
// the spread sum xtts installs (backend/webgpu-sum.ts: up to 1,024 workgroups of partials, then one),
// side by side in one process on one device, at the sizes a training step sums: a batch's masked mel
// loss (16 × 376 × 80 ≈ 0.5 M values) and the squared gradient of the tiny, small and normal presets
// (1.7 M, 10.8 M, 62 M parameters). Each figure is the median wall time of sum + read-back of the
// value, after one warm-up (pipelines compiled); the device-side gap is what the read-back waits for.
//   node --import tsx bench/reduce.bench.ts [--dawn-backend vulkan|opengles] [--device NAME] [--repeat 7]
import { disposeBackend, initBackend } from '../src/core/backend/index.js';
import { setSpreadSum } from '../src/core/backend/webgpu-sum.js';
import { median, report } from './lib.js';

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
  for (const [label, n] of [['mel loss 0.5 M', 481_280], ['tiny grad 1.7 M', 1_648_113], ['small grad 10.8 M', 10_785_009], ['normal grad 62 M', 62_002_417]] as const) {
    if (4 * n > bindable) {
      console.log(`${label.padEnd(18)} skipped: ${((4 * n) / 2 ** 20).toFixed(0)} MiB is more than this device binds (maxStorageBufferBindingSize ${(bindable / 2 ** 20).toFixed(0)} MiB)`);
      continue;
    }
    const x = tf.randomUniform([n], -1, 1, 'float32', 7);
    const row: Record<string, number> = {};
    for (const path of ['tfjs', 'spread'] as const) {
      setSpreadSum(tf, path === 'spread');
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
    console.log(`${label.padEnd(18)} tfjs ${row.tfjs.toFixed(2)} ms, spread ${row.spread.toFixed(2)} ms: ${(row.tfjs / row.spread).toFixed(1)}×`);
  }
  setSpreadSum(tf, true);
  report('reduce', { device, repeat, ...figures });
} finally {
  disposeBackend(tf);
}
