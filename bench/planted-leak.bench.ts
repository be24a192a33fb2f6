// A leak planted in a real run (a callback that keeps three tensors a step) and the same run without it, each
// profiled as profile-bottleneck --run reads it: issue 36's planted-leak scenario on a GPU host, where the CLI
// offers no way to plant one (bench/gpu-profile.sh runs it beside the CLI's scenarios).
//   node --import tsx bench/planted-leak.bench.ts [--config configs/quickstart.yaml] [--dataset DIR]
//     [--backend webgpu] [--steps 40] [--warmup 10] [--set KEY=VALUE …] [--out DIR (default: a temporary folder)]
//   GPU host: source .gpu-runtime/setup.sh && node bundle/planted-leak-bench.cjs … (beside bundle/xtts.cjs, whose
//   worker threads it starts)
// Prints each run's memory-leak verdict (grade, evidence) and a BENCH_JSON line; DIR keeps both runs.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { loadConfigOrThrow } from '../src/core/config/index.js';
import { profileRecordedRun } from '../src/core/profile/index.js';
import { train } from '../src/core/training/index.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

// Bundled, the data and alignment workers are xtts.cjs's (this file has no worker entry of its own).
const bundleDir = (globalThis as { __XTTS_BUNDLE_DIR__?: string }).__XTTS_BUNDLE_DIR__;
if (bundleDir && existsSync(join(bundleDir, 'xtts.cjs')))
  (globalThis as { __XTTS_WORKER_ENTRY__?: string }).__XTTS_WORKER_ENTRY__ = join(bundleDir, 'xtts.cjs');

const config = arg('config') ?? 'configs/quickstart.yaml';
const out = arg('out') ?? mkdtempSync(join(tmpdir(), 'xtts-planted-leak-'));
// --set KEY=VALUE, as many as given (the CLI's overrides).
const sets = process.argv.flatMap((a, i) => (a === '--set' && process.argv[i + 1] ? [process.argv[i + 1]] : []));
const steps = Number(arg('steps') ?? 40);
const warmup = Number(arg('warmup') ?? 10);
const backend = (arg('backend') ?? 'webgpu') as 'webgpu';

async function main(): Promise<void> {
  const figures: Record<string, { grade: string; evidence: string; device: string | null; medianStepMs: number }> = {};
  for (const planted of [true, false]) {
    const name = planted ? 'leak' : 'clean';
    const runDir = join(out, name);
    const kept: tf.Tensor[] = [];
    await train({
      loaded: loadConfigOrThrow(config, { set: sets }),
      datasetDir: arg('dataset'),
      backend,
      maxSteps: warmup + steps,
      outputDir: runDir,
      stepsOnly: true,
      deviceTimedSteps: 0,
      onStep: planted
        ? () => kept.push(tf.keep(tf.zeros([3])), tf.keep(tf.ones([2])), tf.keep(tf.scalar(1)))
        : undefined,
    });
    tf.dispose(kept);
    const r = profileRecordedRun(runDir, { warmup });
    const v = r.verdicts.find((x) => x.id === 'memory-leak');
    figures[name] = {
      grade: v?.grade ?? 'none',
      evidence: v?.evidence ?? 'no tensor counts recorded',
      device: r.device,
      medianStepMs: r.breakdown.wallMs.p50,
    };
    console.log(
      `${name} (${r.backend}${r.device ? `, ${r.device}` : ''}): memory-leak ${figures[name].grade}: ` +
        figures[name].evidence,
    );
  }
  const right = figures.leak.grade === 'high' && figures.clean.grade === 'ok';
  console.log(
    `planted leak graded ${right ? 'right' : 'WRONG'}: leak ${figures.leak.grade}, clean ${figures.clean.grade}`,
  );
  console.log(`BENCH_JSON ${JSON.stringify({ bench: 'planted-leak', steps, warmup, ...figures, right })}`);
}

// No top-level await: the bundle is CommonJS.
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
