// Step capture against eager steps, side by side in one call: `xtts train` twice on the same data,
// config and device — device.step_capture off, then auto (each bucket's step recorded twice, then
// replayed) — and per run the median step, the host's time issuing a step (forward/backward and
// optimizer spans), GPU programs per step and host time per program, from the trainer's --json result
// (its measured steps skip the first ones, so the replayed run's figures are replays). Plain Node.js
// with no packages: it runs from a checkout (src/cli/run.js) and on a GPU host through the bundle.
// Usage: node bench/step-capture.mjs OUT [steps (40)] [config (configs/tiny.yaml)] [-- extra train args]
// here (Dawn on llvmpipe):  EGL_PLATFORM=surfaceless DAWNNODE_BACKEND=opengles node bench/step-capture.mjs /tmp/cap 12
// configs/quickstart.yaml -- --set device.model_device=llvmpipe
// GPU host:                 source .gpu-runtime/setup.sh && XTTS_BIN=bundle/xtts.cjs node bench/step-capture.mjs $OUT
// 60 bundle/configs/tiny.yaml
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const [out, stepsArg, configArg] = dash < 0 ? argv : argv.slice(0, dash);
const extra = dash < 0 ? [] : argv.slice(dash + 1);
if (!out) {
  console.error('usage: node bench/step-capture.mjs OUT [steps] [config] [-- extra train args]');
  process.exit(2);
}
const steps = Number(stepsArg ?? 40);
const config = configArg ?? 'configs/tiny.yaml';
const bin = process.env.XTTS_BIN ?? 'src/cli/run.js';
mkdirSync(out, { recursive: true });
const quiet = [
  '--set',
  'batching.buckets=1',
  '--set',
  'training.validate_every=1000000',
  '--set',
  'training.eval_every=1000000',
  '--set',
  'training.checkpoint_every=1000000',
  '--set',
  'training.log_every=10',
  '--set',
  'training.eval_sentences=[]',
];

function train(mode) {
  const dir = join(out, `run-${mode}`);
  const args = [
    bin,
    'train',
    '--config',
    config,
    '--backend',
    'webgpu',
    '--max-steps',
    String(steps),
    '--output',
    dir,
    '--json',
    ...quiet,
    '--set',
    `device.step_capture=${mode}`,
    ...extra,
  ];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  writeFileSync(join(out, `train-${mode}.log`), r.stderr ?? '');
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    throw new Error(`${mode}: xtts train exited ${r.status} without a JSON result: ${(r.stderr ?? '').slice(-1500)}`);
  }
  if (json.status !== 'success') throw new Error(`${mode}: ${JSON.stringify(json.error)}`);
  const res = json.result;
  const t = res.timing;
  return {
    device: res.backend.adapter ? res.backend.adapter.name || res.backend.adapter.description : res.backend.backend,
    stepMs: t.stepMsMedian,
    hostMs: t.hostDispatchMsMedian,
    programs: t.programsPerStep,
    kernels: t.kernelsPerStep,
    replayedShare: t.replayedShare,
    capture: res.stepCapture,
    hostGc: res.hostGc ?? null,
    uploads: res.batchUploads ?? null,
    parameters: res.parameters,
    losses: res.lossCurve.map((p) => p.loss),
  };
}

const eager = train('off');
const replay = train('auto');
const perProgram = (r) => (r.programs ? `${((r.hostMs * 1000) / r.programs).toFixed(1)} µs` : 'n/a');
console.log(`${eager.device}: ${config}, ${steps} steps, one bucket`);
console.log(
  `eager:    median step ${eager.stepMs.toFixed(1)} ms; host issuing a ` +
    `step ${eager.hostMs.toFixed(1)} ms; ${eager.programs} GPU programs/step ` +
    `(${eager.kernels} kernels), ${perProgram(eager)} host time per program`,
);
console.log(
  `replayed: median step ${replay.stepMs.toFixed(1)} ms; host issuing a ` +
    `step ${replay.hostMs.toFixed(1)} ms; ${replay.programs} GPU ` +
    `programs/step, ${perProgram(replay)} host time per program ` +
    `(${(replay.replayedShare * 100).toFixed(0)}% of the measured steps replayed)`,
);
const gcLine = (r) =>
  r.hostGc
    ? `${(r.hostGc.share * 100).toFixed(1)}% of the run (${r.hostGc.full.count} full ` +
      `collections, longest ${r.hostGc.full.longestMs.toFixed(1)} ms)`
    : 'n/a';
console.log(`the trainer's thread collecting garbage: eager ${gcLine(eager)}; replayed ${gcLine(replay)}`);
const uploadLine = (r) => (r.uploads ? `${r.uploads.staged} staged, ${r.uploads.missed} through writeBuffer` : 'n/a');
console.log(`batch uploads: eager ${uploadLine(eager)}; replayed ${uploadLine(replay)}`);
console.log(
  `replayed/eager: step time ${(replay.stepMs / eager.stepMs).toFixed(2)}×, host ` +
    `time ${(replay.hostMs / eager.hostMs).toFixed(3)}×`,
);
const same = eager.losses.length === replay.losses.length && eager.losses.every((x, i) => x === replay.losses[i]);
const shapes = (replay.capture?.shapes ?? [])
  .map(
    (x) =>
      `bucket ${x.shape}: ${x.state}${x.reason ? ` (${x.reason})` : ''}, ${x.replays} ` +
      (`replays` +
        (x.encodeUsPerProgram !== null
          ? `, encoding ${x.encodeUsPerProgram.toFixed(2)} µs per program (median replay; ` + `submit excluded)`
          : '') +
        (x.submitUsPerProgram != null ? `, submitting ${x.submitUsPerProgram.toFixed(2)} µs per program` : '')),
  )
  .join('; ');
const encodeUs = replay.capture?.shapes?.[0]?.encodeUsPerProgram ?? null;
const submitUs = replay.capture?.shapes?.[0]?.submitUsPerProgram ?? null;
console.log(`logged losses ${same ? 'identical' : 'DIFFER'} (${eager.losses.length} read back); ${shapes}`);
console.log(
  `BENCH_JSON ` +
    JSON.stringify({
      bench: 'step-capture',
      device: eager.device,
      config,
      steps,
      eagerStepMs: eager.stepMs,
      replayStepMs: replay.stepMs,
      eagerHostMs: eager.hostMs,
      replayHostMs: replay.hostMs,
      eagerPrograms: eager.programs,
      replayPrograms: replay.programs,
      eagerKernels: eager.kernels,
      replayEncodeUsPerProgram: encodeUs,
      replaySubmitUsPerProgram: submitUs,
      replayHostGc: replay.hostGc,
      replayBatchUploads: replay.uploads,
      replayedShare: replay.replayedShare,
      shape: replay.capture?.shapes?.[0]?.shape ?? null,
      parameters: replay.parameters,
      sameLosses: same,
    }),
);
