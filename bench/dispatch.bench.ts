// The device's own cost per dispatch: how long a compute pass of N small dispatches takes on the
// device (timestamps at the pass's edges), per dispatch, when each dispatch reads what the one before
// it wrote (a replayed step's programs: Dawn puts a barrier between them) and when they only read
// (Dawn puts none between reads: the launches alone). A replayed tiny step is ~350 such
// dispatches, most of them small, so this floor times the programs is the least time its passes can
// take, and the difference between the two rows is what the barriers cost on the device.
//   node --import tsx bench/dispatch.bench.ts [--dispatches 2000] [--reps 7] [--device NAME]
//   GPU host: source .gpu-runtime/setup.sh && node bundle/dispatch-bench.cjs
// Each row: the median over reps of the pass's device time / dispatches, for one workgroup of 64
// invocations (nearly no work) and for 512 workgroups of 256 (a small kernel that covers the GPU).
// A device without timestamp queries is reported and skipped.
//
// NVML's busy share of such a stream (--busy-seconds S, default 4; 0 skips it): for kernels of a few
// lengths (a loop of ITERS multiply-adds in each of 512 workgroups of 256), the bench keeps the queue
// full of passes of dependent dispatches for S seconds while NVML is sampled 10 times a second, and
// prints the mean utilisation over the stream (its first half second left out) beside the device's time
// per dispatch. It says what busy share a step made only of dependent dispatches of a given length can
// read at best (on the H100, 94–100%: NVML does not count the barriers between them as idle).
import { disposeBackend, initBackend } from '../src/core/backend/index.js';
import { BufferUsage } from '../src/core/backend/gpu-types.js';
import { GpuSampler } from '../src/core/telemetry/index.js';
import { type Any, passMs } from './gpu-pass.js';
import { median, report } from './lib.js';

const { STORAGE, COPY_DST, COPY_SRC } = BufferUsage;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const SHADER = `
@group(0) @binding(0) var<storage, read> src : array<f32>;
@group(0) @binding(1) var<storage, read_write> dst : array<f32>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g : vec3<u32>) {
  let i = g.x;
  if (i < arrayLength(&dst)) { dst[i] = src[i % arrayLength(&src)] * 1.0001 + 1.0; }
}`;

// Reads only (its one write is to workgroup memory): nothing for a later dispatch to wait for.
const READER = `
@group(0) @binding(0) var<storage, read> src : array<f32>;
var<workgroup> seen : array<f32, WG>;
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) g : vec3<u32>, @builtin(local_invocation_index) l : u32) {
  seen[l] = src[g.x % arrayLength(&src)];
}`;

// A kernel of about ITERS dependent multiply-adds an invocation: its length grows with ITERS.
const LOOPED = `
@group(0) @binding(0) var<storage, read> src : array<f32>;
@group(0) @binding(1) var<storage, read_write> dst : array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g : vec3<u32>) {
  let i = g.x;
  var v = src[i % arrayLength(&src)];
  for (var k = 0u; k < ITERSu; k++) { v = v * 1.0001 + 1.0; }
  if (i < arrayLength(&dst)) { dst[i] = v; }
}`;

/**
 * Dependent dispatches of `pipeline` (its binding 0 read, 1 written): two buffers of `bytes`, each
 * dispatch reading what the one before it wrote.
 */
function pingPong(
  device: Any,
  pipeline: Any,
  bytes: number,
): { encode: (pass: Any, dispatches: number, workgroups: number) => void; destroy: () => void } {
  const make = () => device.createBuffer({ size: bytes, usage: STORAGE | COPY_DST | COPY_SRC });
  const [a, b] = [make(), make()];
  const group = (x: Any, y: Any) =>
    device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: x } },
        { binding: 1, resource: { buffer: y } },
      ],
    });
  const chain = [group(a, b), group(b, a)];
  return {
    encode: (pass, dispatches, workgroups) => {
      pass.setPipeline(pipeline);
      for (let i = 0; i < dispatches; i++) {
        pass.setBindGroup(0, chain[i & 1]);
        pass.dispatchWorkgroups(workgroups);
      }
    },
    destroy: () => {
      a.destroy();
      b.destroy();
    },
  };
}

async function main(): Promise<void> {
  const n = Number(arg('dispatches') ?? 2000);
  const reps = Number(arg('reps') ?? 7);
  const { tf, choice } = await initBackend('webgpu', { device: arg('device') ?? null, unsafeApis: true });
  const device = (tf.backend() as unknown as { device: Any }).device;
  const name = choice.adapter?.name ?? 'webgpu';
  const timestamps = device.features.has('timestamp-query');
  const busySeconds = Number(arg('busy-seconds') ?? 4);
  const busy = () =>
    busySeconds > 0
      ? busyRows(device, busySeconds, name, timestamps)
      : Promise.resolve({ available: false, reason: 'skipped (--busy-seconds 0)' });
  if (!timestamps) {
    console.log(`${name}: no timestamp-query feature; no time per dispatch`);
    report('dispatch', { device: name, available: false, busy: await busy() });
    disposeBackend(tf);
    return;
  }
  const rows: Record<string, unknown>[] = [];
  for (const [label, workgroups, size] of [
    ['1 workgroup of 64', 1, 64],
    ['512 workgroups of 256', 512, 256],
  ] as const) {
    const pipeline = device.createComputePipeline({
      layout: 'auto',
      compute: { module: device.createShaderModule({ code: SHADER.replace('WG', String(size)) }), entryPoint: 'main' },
    });
    const bytes = workgroups * size * 4;
    // Dependent: ping-pong between two buffers, each dispatch reading the last one's output.
    const chain = pingPong(device, pipeline, bytes);
    // Reads only: one shared input, one bind group.
    const shared = device.createBuffer({ size: bytes, usage: STORAGE | COPY_DST | COPY_SRC });
    device.queue.writeBuffer(shared, 0, new Float32Array(bytes / 4).fill(1));
    const reader = device.createComputePipeline({
      layout: 'auto',
      compute: {
        module: device.createShaderModule({ code: READER.replaceAll('WG', String(size)) }),
        entryPoint: 'main',
      },
    });
    const readGroup = device.createBindGroup({
      layout: reader.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: shared } }],
    });
    const dependent: number[] = [];
    const readOnly: number[] = [];
    for (let r = 0; r <= reps; r++) {
      const d = await passMs(device, (pass) => chain.encode(pass, n, workgroups));
      const f = await passMs(device, (pass) => {
        pass.setPipeline(reader);
        pass.setBindGroup(0, readGroup);
        for (let i = 0; i < n; i++) pass.dispatchWorkgroups(workgroups);
      });
      if (r === 0) continue; // warm-up: the pipeline's first runs
      dependent.push((d * 1000) / n);
      readOnly.push((f * 1000) / n);
    }
    chain.destroy();
    shared.destroy();
    const row = {
      kernel: label,
      dispatches: n,
      dependentUs: Number(median(dependent).toFixed(3)),
      readOnlyUs: Number(median(readOnly).toFixed(3)),
    };
    rows.push(row);
    console.log(
      `${name} | ${label} | ${n} dispatches a pass | dependent ${row.dependentUs} µs a ` +
        `dispatch | reads only ${row.readOnlyUs} µs a dispatch (median of ${reps})`,
    );
  }
  report('dispatch', { device: name, available: true, rows, busy: await busy() });
  disposeBackend(tf);
}

/**
 * NVML's mean busy share while the queue holds nothing but passes of dependent dispatches of one
 * kernel, for kernels of a few lengths; each row also gives the device's time per dispatch.
 */
async function busyRows(
  device: Any,
  seconds: number,
  name: string,
  timestamps: boolean,
): Promise<Record<string, unknown>> {
  const sampler = await GpuSampler.start({ rateHz: 10, gpm: false });
  if (!sampler.status.available) {
    console.log(`${name}: no NVML busy share (${sampler.status.reason})`);
    await sampler.stop();
    return { available: false, reason: sampler.status.reason };
  }
  const perPass = 500;
  const rows: Record<string, unknown>[] = [];
  try {
    for (const iters of [0, 512, 2048, 8192, 32768]) {
      const pipeline = device.createComputePipeline({
        layout: 'auto',
        compute: {
          module: device.createShaderModule({ code: LOOPED.replace('ITERS', String(iters)) }),
          entryPoint: 'main',
        },
      });
      const chain = pingPong(device, pipeline, 512 * 256 * 4);
      const encode = (pass: Any) => chain.encode(pass, perPass, 512);
      const timed: number[] = [];
      for (let r = 0; timestamps && r < 4; r++) timed.push(((await passMs(device, encode)) * 1000) / perPass);
      const dispatchUs = timed.length ? median(timed.slice(1)) : null;
      // The stream: two submissions in flight at most, so the queue never runs dry.
      const start = performance.now() - sampler.originMs;
      const inFlight: Promise<unknown>[] = [];
      let passes = 0;
      while (performance.now() - sampler.originMs - start < seconds * 1000) {
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        encode(pass);
        pass.end();
        device.queue.submit([encoder.finish()]);
        passes++;
        inFlight.push(device.queue.onSubmittedWorkDone());
        if (inFlight.length >= 2) await inFlight.shift();
      }
      const end = performance.now() - sampler.originMs;
      await Promise.all(inFlight);
      const util = sampler
        .samples({ fromMs: start + 500, toMs: end })
        .map((x) => x.utilizationPct)
        .filter((x): x is number => x !== null);
      const mean = util.length ? util.reduce((x, y) => x + y, 0) / util.length : null;
      chain.destroy();
      const row = {
        iters,
        dispatchUs: dispatchUs === null ? null : Number(dispatchUs.toFixed(2)),
        passes,
        samples: util.length,
        busyPct: mean === null ? null : Number(mean.toFixed(1)),
      };
      rows.push(row);
      console.log(
        `${name} | dependent dispatches of ${row.dispatchUs ?? 'n/a'} µs each (${iters} ` +
          `multiply-adds an invocation) | NVML ` +
          `busy ${mean === null ? 'n/a' : `${row.busyPct}%`} over ${util.length} samples`,
      );
    }
  } finally {
    await sampler.stop();
  }
  return { available: true, seconds, rows };
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
