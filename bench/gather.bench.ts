// The optimizer's flat gradient on the webgpu backend: tf.concat of every variable's gradient (what
// AdamW.flatten did: ConcatProgram, at most 15 inputs a program, its results concatenated again) against
// gather (backend/programs/slices.ts: each value copied once), side by side in one process on one device,
// at the tiny, small and normal presets' variables (random gradients of their shapes). Per preset and
// path: the programs dispatched, the median device time of one flat gradient (tf.time's kernel time:
// WebGPU timestamp queries) or, where the device has none, the median wall time of 5 and a read-back, per
// gradient; and whether both paths gave the same bits.
//   node --import tsx bench/gather.bench.ts [--dawn-backend vulkan|opengles] [--device NAME] [--repeat 7]
//     [--presets tiny,small,normal]
//   GPU host: source .gpu-runtime/setup.sh && node bundle/gather-bench.cjs
import type * as tfCore from '@tensorflow/tfjs-core';
import { disposeBackend, initBackend, KernelCounter } from '../src/core/backend/index.js';
import { XttsModel } from '../src/core/model/model.js';
import { AdamW } from '../src/core/training/optim/adamw.js';
import { PRESETS, SIZES, trainingConfig } from '../test/unit/model-fixtures.js';
import { median, report } from './lib.js';

type Preset = keyof typeof PRESETS;

async function main(): Promise<void> {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const repeat = Number(arg('repeat') ?? 7);
  const presets = (arg('presets') ?? 'tiny,small,normal').split(',') as Preset[];
  for (const p of presets) if (!(p in PRESETS)) throw new Error(`--presets: no preset ${p} (${Object.keys(PRESETS)})`);
  const { tf, choice } = await initBackend('webgpu', { dawnBackend: arg('dawn-backend'), device: arg('device') });
  const device = choice.adapter?.name ?? choice.backend;
  const timed = (tf.backend() as unknown as { supportTimestampQuery?: boolean }).supportTimestampQuery === true;
  const how = timed ? `device time, median of ${repeat}` : `wall per gradient (5 and a read-back), median of ${repeat}`;
  console.log(`${device}: the flat gradient, tf.concat against gather (${how})`);
  const figures: Record<string, number | boolean> = {};
  try {
    for (const preset of presets) {
      const model = new XttsModel(PRESETS[preset], SIZES, { seed: 1 });
      const opt = new AdamW(model.trainableVariables(), trainingConfig());
      const grads: tfCore.NamedTensorMap = Object.fromEntries(
        opt.variables.map((v, i) => [v.name, tf.randomUniform(v.shape, -1, 1, 'float32', i)]),
      );
      const paths = {
        concat: () => tf.tidy(() => tf.concat(opt.variables.map((v) => tf.reshape(grads[v.name], [-1])))),
        gather: () => opt.flatten(grads),
      };
      const row: Record<string, { ms: number; programs: number; values: Float32Array }> = {};
      for (const [path, run] of Object.entries(paths)) {
        const counter = new KernelCounter().install(tf);
        const first = run();
        const programs = counter.takeAll().dispatches;
        counter.uninstall();
        const values = (await first.data()) as Float32Array;
        first.dispose();
        const times: number[] = [];
        for (let k = 0; k < repeat; k++) {
          if (timed) times.push((await tf.time(() => run().dispose())).kernelMs as number);
          else {
            const t0 = performance.now();
            const outs = Array.from({ length: 5 }, run);
            await outs[4].data();
            tf.dispose(outs);
            times.push((performance.now() - t0) / 5);
          }
        }
        row[path] = { ms: median(times), programs, values };
      }
      const [a, b] = [row.concat.values, row.gather.values];
      let same = a.length === b.length;
      for (let i = 0; same && i < a.length; i++) same = Object.is(a[i], b[i]);
      const values = opt.parameterCount;
      // Bytes each path must move at least: every value read once and written once.
      const gbps = (ms: number) => ((8 * values) / (ms * 1e-3) / 1e9).toPrecision(3);
      console.log(
        `${preset.padEnd(7)} ${opt.variables.length} tensors, ${(values / 1e6).toFixed(1)} M values: ` +
          `concat ${row.concat.ms.toFixed(3)} ms (${row.concat.programs} programs), ` +
          `gather ${row.gather.ms.toFixed(3)} ms (${row.gather.programs}, ${gbps(row.gather.ms)} GB/s of ` +
          `one read and one write a value): ${(row.concat.ms / row.gather.ms).toFixed(2)}×; ` +
          `${same ? 'the same bits' : 'VALUES DIFFER'}`,
      );
      Object.assign(figures, {
        [`concatMs_${preset}`]: Math.round(row.concat.ms * 1000) / 1000,
        [`gatherMs_${preset}`]: Math.round(row.gather.ms * 1000) / 1000,
        [`concatPrograms_${preset}`]: row.concat.programs,
        [`gatherPrograms_${preset}`]: row.gather.programs,
        [`sameBits_${preset}`]: same,
      });
      tf.dispose(Object.values(grads));
      opt.dispose();
      model.dispose();
      if (!same) process.exitCode = 1;
    }
    report('gather', { device, timed, repeat, ...figures });
  } finally {
    disposeBackend(tf);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
