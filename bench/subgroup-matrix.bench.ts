// What the device's subgroup matrices can do as Dawn and the driver compile them, apart from any
// matmul around them (issue 35: xtts's f16 program reaches 5-7% of an H200's dense f16 peak where
// cuBLAS reaches 40-45%; is the ceiling the tile's code, or the subgroup matrices themselves?).
// Each case is one WGSL program of WORKGROUPS workgroups, SG subgroups of 32 each, every subgroup
// holding RI × RJ result matrices (f32 sums of f16 products, the adapter's M × N × K shape):
//   regs     the left and right matrices loaded from workgroup memory once, then ITERS rounds of the
//            RI·RJ multiply-accumulates: the multiply rate alone
//   shared   every round loads its RI left and RJ right matrices from workgroup memory first (the K step
//            after the last one in a slab of SLAB, rows STRIDE apart, as the f16 program's inner loop
//            does), then multiplies: the rate with the loads an output tile needs
//   feed     the f16 program's outer loop without its products: every workgroup reads a 128 × SLAB
//            slab of A and a SLAB × 128 slab of B (f32, four values a load) for ITERS slabs, rounds
//            them to f16 into workgroup memory between barriers: what feeding the tiles costs alone
//   tile     feed with the products (eight subgroups of 2 × 4 matrices): the f16 program's loop as a whole
//   global   the products of a 128 × 128 tile over K 2,048 with no workgroup memory at all: every subgroup
//            loads its matrices straight from f16 operands in a storage buffer (A row-major [128][2048],
//            B [2048][128]), no feed and no barriers; what a program reading f16 copies of its operands
//            could reach
// Device time from timestamps at the pass's edges, median of --reps passes after 300 ms of untimed
// ones; TFLOP/s counts 2·M·N·K a multiply-accumulate (feed: GB/s of f32 read). The sums are stored
// (each result matrix through workgroup memory, one value a lane) so that nothing is optimised away.
//   node --import tsx bench/subgroup-matrix.bench.ts [--reps 7] [--device 0|NAME] [--bounds-checks]
//        [--cases all|regs,shared,feed,tile,global]
//   GPU host: source .gpu-runtime/setup.sh && node bundle/subgroup-matrix-bench.cjs ...
import { disposeBackend, initBackend } from '../src/core/backend/index.js';
import { BufferUsage } from '../src/core/backend/gpu-types.js';
import { takeGpuError } from '../src/core/backend/webgpu.js';
import { F16_MATMUL_ENABLES } from '../src/core/backend/programs/matmul-f16.js';
import { type Any, passMs } from './gpu-pass.js';
import { median, report } from './lib.js';

const { STORAGE, COPY_DST, COPY_SRC } = BufferUsage;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

interface Shape {
  M: number;
  N: number;
  K: number;
}

interface Case {
  kind: 'regs' | 'shared' | 'feed' | 'tile' | 'global';
  sg: number;
  ri: number;
  rj: number;
  /** shared, feed, tile: K per slab; the rows' stride in workgroup memory (elements; shared). */
  slab: number;
  stride: number;
  leftMajor: 'row_major' | 'col_major';
  iters: number;
  label: string;
}

const range = (n: number) => [...Array(n).keys()];
const WORKGROUPS = 2112; // 16 a multiprocessor of an H100 or H200 (132)

/** The WGSL that sums every result matrix into `total` through the staging area (one value a lane). */
function drain(c: Case, s: Shape): string {
  return range(c.ri)
    .flatMap((i) => range(c.rj).map((j) => [i, j]))
    .map(
      ([i, j]) => `subgroupMatrixStore<row_major>(&Cs, sg * ${s.M * s.N}u, acc${i}_${j}, ${s.N}u);
  workgroupBarrier();
  total += Cs[sg * ${s.M * s.N}u + lane];`,
    )
    .join('\n  ');
}

function accumulators(c: Case, s: Shape): string {
  return range(c.ri)
    .flatMap((i) => range(c.rj).map((j) => `var acc${i}_${j} = subgroup_matrix_result<f32, ${s.N}, ${s.M}>();`))
    .join('\n  ');
}

function products(c: Case): string {
  return range(c.ri)
    .flatMap((i) =>
      range(c.rj).map((j) => `acc${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}_${j});`),
    )
    .join('\n    ');
}

/**
 * The left and right matrices of one K step `kk` (a WGSL expression) from the slabs: left i at rows
 * i·M of this subgroup's rows, right j at columns j·N of its columns (eight subgroups: 4 × 2 of a 128 tile).
 */
function fragmentLoads(c: Case, s: Shape, kk: string, strideA: number, strideB: number): string {
  // regs: four subgroups' rows of 4 × 2 parts would pass the slab's 128 rows (they are loaded once).
  const row = (i: number) => (c.kind === 'regs' ? `((aRow + ${i * s.M}u) % 128u)` : `(aRow + ${i * s.M}u)`);
  const left = `subgroup_matrix_left<f16, ${s.K}, ${s.M}>, ${c.leftMajor}`;
  const right = `subgroup_matrix_right<f16, ${s.N}, ${s.K}>, row_major`;
  // Row-major A: [rows][strideA]; column-major A (Aᵀ): [K][strideA]. B: [K][strideB].
  const aAt = (i: number) =>
    c.leftMajor === 'row_major' ? `${row(i)} * ${strideA}u + ${kk}` : `${kk} * ${strideA}u + ${row(i)}`;
  return [
    ...range(c.ri).map((i) => `let l${i} = subgroupMatrixLoad<${left}>(&As, ${aAt(i)}, ${strideA}u);`),
    ...range(c.rj).map(
      (j) => `let r${j} = subgroupMatrixLoad<${right}>(&Bs, ${kk} * ${strideB}u + bCol + ${j * s.N}u, ${strideB}u);`,
    ),
  ].join('\n    ');
}

/** Workgroup arrays and their strides for a case: a 128-row A slab and a 128-column B slab of c.slab. */
function slabs(c: Case): { strideA: number; strideB: number; aSize: number; bSize: number } {
  const strideA = c.leftMajor === 'row_major' ? c.stride : 128 + (c.stride - c.slab);
  const strideB = 128 + (c.stride - c.slab);
  return { strideA, strideB, aSize: (c.leftMajor === 'row_major' ? 128 : c.slab) * strideA, bSize: c.slab * strideB };
}

function shader(c: Case, s: Shape): string {
  const { strideA, strideB, aSize, bSize } = slabs(c);
  const threads = c.sg * 32;
  // Eight subgroups: 4 × 2 parts of 32 × 64 in a 128 × 128 tile; four: 2 × 2 of 64 × 64.
  const [sr, sc] = c.sg === 8 ? [4, 2] : [2, 2];
  const head = `${F16_MATMUL_ENABLES}
@group(0) @binding(0) var<storage, read> src : array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst : array<f32>;
var<workgroup> As : array<f16, ${aSize}>;
var<workgroup> Bs : array<f16, ${bSize}>;
var<workgroup> Cs : array<f32, ${c.sg * s.M * s.N}>;
@compute @workgroup_size(${threads})
fn main(@builtin(local_invocation_index) t : u32, @builtin(workgroup_id) wg : vec3<u32>) {
  let sg = t / 32u;
  let lane = t % 32u;
  let aRow = (sg / ${sc}u) * ${128 / sr}u;
  let bCol = (sg % ${sc}u) * ${128 / sc}u;
  var total = 0.0;
  ${accumulators(c, s)}`;
  const fill = `for (var i = t; i < ${aSize}u; i += ${threads}u) { As[i] = f16(src[i % arrayLength(&src)].x * 0.01); }
  for (var i = t; i < ${bSize}u; i += ${threads}u) { Bs[i] = f16(src[(i + 7u) % arrayLength(&src)].y * 0.01); }
  workgroupBarrier();`;
  const tail = `${drain(c, s)}
  dst[wg.x * ${threads}u + t] = total;
}`;
  if (c.kind === 'regs')
    return `${head}
  ${fill}
  ${fragmentLoads(c, s, '0u', strideA, strideB)}
  for (var it = 0u; it < ${c.iters}u; it++) {
    ${products(c)}
  }
  ${tail}`;
  if (c.kind === 'global') {
    // K steps of c.iters over a K of c.iters · K; B after A in the f16 buffer.
    const kLen = c.iters * s.K;
    const left = `subgroup_matrix_left<f16, ${s.K}, ${s.M}>, row_major`;
    const right = `subgroup_matrix_right<f16, ${s.N}, ${s.K}>, row_major`;
    const loads = [
      ...range(c.ri).map(
        (i) => `let l${i} = subgroupMatrixLoad<${left}>(&h, (aRow + ${i * s.M}u) * ${kLen}u + k, ${kLen}u);`,
      ),
      ...range(c.rj).map(
        (j) => `let r${j} = subgroupMatrixLoad<${right}>(&h, ${128 * kLen}u + k * 128u + bCol + ${j * s.N}u, 128u);`,
      ),
    ].join('\n    ');
    const binding = '@group(0) @binding(2) var<storage, read> h : array<f16>;';
    return `${head.replace('var<workgroup> As', `${binding}\nvar<workgroup> As`)}
  for (var k = 0u; k < ${kLen}u; k += ${s.K}u) {
    ${loads}
    ${products(c)}
  }
  ${tail}`;
  }
  if (c.kind === 'shared')
    return `${head}
  ${fill}
  for (var it = 0u; it < ${c.iters}u; it++) {
    let kk = (it % ${c.slab / s.K}u) * ${s.K}u;
    ${fragmentLoads(c, s, 'kk', strideA, strideB)}
    ${products(c)}
  }
  ${tail}`;
  // feed and tile: slabs of a [128 rows, K] A and a [K, 128 columns] B read as vec4 from src (A at 0, B after).
  const units = (128 * c.slab) / (4 * threads);
  const kLen = c.iters * c.slab;
  const bBase = (128 * kLen) / 4;
  const loads = range(units)
    .map((e) => {
      const f = `(t + ${e * threads}u)`;
      // A along K (row-major [128][kLen]); B along its columns ([kLen][128]).
      return `let ar${e} = src[(${f} / ${c.slab / 4}u) * ${kLen / 4}u + k0 / 4u + ${f} % ${c.slab / 4}u];
      let br${e} = src[${bBase}u + (k0 + ${f} / 32u) * 32u + ${f} % 32u];`;
    })
    .join('\n      ');
  const stores = range(units)
    .map((e) => {
      const f = `(t + ${e * threads}u)`;
      const aAt = `(${f} / ${c.slab / 4}u) * ${strideA}u + (${f} % ${c.slab / 4}u) * 4u`;
      const bAt = `(${f} / 32u) * ${strideB}u + (${f} % 32u) * 4u`;
      return range(4)
        .map((v) => `As[${aAt} + ${v}u] = f16(ar${e}[${v}]); Bs[${bAt} + ${v}u] = f16(br${e}[${v}]);`)
        .join('\n      ');
    })
    .join('\n      ');
  const inner =
    c.kind === 'tile'
      ? range(c.slab / s.K)
          .map((step) => `{\n    ${fragmentLoads(c, s, `${step * s.K}u`, strideA, strideB)}\n    ${products(c)}\n    }`)
          .join('\n    ')
      : `total += f32(As[t]) + f32(Bs[t]);`;
  return `${head}
  for (var slab = 0u; slab < ${c.iters}u; slab++) {
    let k0 = slab * ${c.slab}u;
    {
      ${loads}
      ${stores}
    }
    workgroupBarrier();
    ${inner}
    workgroupBarrier();
  }
  ${tail}`;
}

function cases(s: Shape, wanted: Set<string>): Case[] {
  const out: Case[] = [];
  const add = (c: Omit<Case, 'label' | 'iters'> & { iters?: number }) => {
    if (!wanted.has(c.kind) && !wanted.has('all')) return;
    // About 2^40 FLOPs a dispatch for the products: ~1 ms at the f16 peak.
    const iters = c.iters ?? Math.max(8, Math.round(2 ** 40 / (WORKGROUPS * c.sg * c.ri * c.rj * 2 * s.M * s.N * s.K)));
    const layout =
      c.kind === 'regs' || c.kind === 'global'
        ? ''
        : ` slab ${c.slab} stride ${c.stride}${c.leftMajor === 'col_major' ? ' Aᵀ' : ''}`;
    out.push({ ...c, iters, label: `${c.kind} ${c.sg} subgroups × ${c.ri}×${c.rj}${layout}` });
  };
  const base = { sg: 8, slab: 32, stride: 40, leftMajor: 'row_major' as const };
  for (const [ri, rj] of [
    [1, 1],
    [2, 2],
    [2, 4],
    [4, 4],
  ])
    add({ ...base, kind: 'regs', ri, rj });
  add({ ...base, kind: 'regs', sg: 4, ri: 4, rj: 4 });
  for (const [slab, stride] of [
    [32, 40],
    [32, 32],
    [32, 48],
    [64, 72],
    [64, 64],
  ])
    add({ ...base, kind: 'shared', ri: 2, rj: 4, slab, stride });
  add({ ...base, kind: 'shared', ri: 2, rj: 4, leftMajor: 'col_major' });
  add({ ...base, kind: 'shared', sg: 4, ri: 4, rj: 4 });
  // feed/tile: 2,048 of K a workgroup (64 slabs of 32), as a normal step's FFN out.
  for (const kind of ['feed', 'tile'] as const)
    for (const [slab, stride] of [
      [32, 40],
      [64, 72],
    ])
      add({ ...base, kind, ri: 2, rj: 4, slab, stride, iters: 2048 / slab });
  add({ ...base, kind: 'global', ri: 2, rj: 4, iters: 2048 / s.K });
  add({ ...base, kind: 'global', sg: 4, ri: 4, rj: 4, iters: 2048 / s.K });
  return out;
}

/** The device time of one dispatch of `pipeline` over WORKGROUPS workgroups: a pass of `dispatches` of them. */
async function dispatchMs(device: Any, pipeline: Any, group: Any, dispatches: number): Promise<number> {
  const ms = await passMs(device, (pass) => {
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    for (let i = 0; i < dispatches; i++) pass.dispatchWorkgroups(WORKGROUPS);
  });
  return ms / dispatches;
}

async function main(): Promise<void> {
  const reps = Number(arg('reps') ?? 7);
  const device = arg('device');
  // Without Dawn's bounds checks unless asked, as training runs (device.bounds_checks).
  const robustness = process.argv.includes('--bounds-checks');
  const { tf, choice } = await initBackend('webgpu', {
    device: device === undefined ? null : /^\d+$/.test(device) ? Number(device) : device,
    unsafeApis: true,
    robustness,
    precision: 'mixed_fp16',
  });
  const a = choice.adapter;
  const gpu = (tf.backend() as unknown as { device: Any }).device;
  const configs = a?.subgroupMatrixConfigs ?? [];
  console.log(
    `device: ${a?.name} (${a?.description}); robustness ${robustness ? 'on' : 'off'}; subgroup matrices: ` +
      configs.map((c) => `${c.componentType}→${c.resultComponentType} ${c.M}×${c.N}×${c.K}`).join(', '),
  );
  const timestamps = gpu.features.has('timestamp-query');
  const wanted = new Set((arg('cases') ?? 'all').split(','));
  const shapes = configs.filter((c) => c.componentType === 'f16' && c.resultComponentType === 'f32');
  const src = gpu.createBuffer({ size: 2 ** 24, usage: STORAGE | COPY_DST });
  const values = new Float32Array(2 ** 22);
  for (let i = 0; i < values.length; i++) values[i] = ((i * 2654435761) % 1000) / 1000 - 0.5;
  gpu.queue.writeBuffer(src, 0, values);
  const dst = gpu.createBuffer({ size: WORKGROUPS * 256 * 4, usage: STORAGE | COPY_SRC });
  // global: f16 operands, A [128][2048] then B [2048][128]: small normal numbers (2^-8 to 2^-7), their bits.
  const halves = new Uint16Array(2 * 128 * 2048);
  for (let i = 0; i < halves.length; i++) halves[i] = 0x1c00 + ((i * 37) % 1024);
  const h = gpu.createBuffer({ size: halves.byteLength, usage: STORAGE | COPY_DST });
  gpu.queue.writeBuffer(h, 0, halves);
  const rows: Record<string, unknown>[] = [];
  for (const s of shapes) {
    for (const c of cases(s, wanted)) {
      // A subgroup's rows (32 or 64) and columns (64) in whole matrices, and K steps that fill a slab.
      if ((c.sg === 8 ? 32 : 64) % s.M !== 0 || 64 % s.N !== 0 || c.slab % s.K !== 0) continue;
      const row: Record<string, unknown> = { shape: `${s.M}×${s.N}×${s.K}`, case: c.label, iters: c.iters };
      gpu.pushErrorScope('validation');
      const code = shader(c, s);
      const pipeline = gpu.createComputePipeline({
        layout: 'auto',
        compute: { module: gpu.createShaderModule({ code }), entryPoint: 'main' },
      });
      const group = gpu.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: c.kind === 'global' ? 2 : 0, resource: { buffer: c.kind === 'global' ? h : src } },
          { binding: 1, resource: { buffer: dst } },
        ],
      });
      const error = (await gpu.popErrorScope())?.message ?? takeGpuError();
      if (error || !timestamps) {
        row.error = error ?? 'no timestamp-query feature';
        console.log(`${row.shape} | ${c.label} | failed: ${String(row.error).split('\n')[0]}`);
        rows.push(row);
        continue;
      }
      const t0 = performance.now();
      while (performance.now() - t0 < 300) await dispatchMs(gpu, pipeline, group, 3);
      const times: number[] = [];
      for (let r = 0; r < reps; r++) times.push(await dispatchMs(gpu, pipeline, group, 3));
      const ms = median(times);
      const mmas = WORKGROUPS * c.sg * c.ri * c.rj * c.iters * (c.kind === 'tile' ? c.slab / s.K : 1);
      if (c.kind === 'feed') row.gbPerS = Number(((WORKGROUPS * c.iters * 2 * 128 * c.slab * 4) / ms / 1e6).toFixed(1));
      else row.tflops = Number(((mmas * 2 * s.M * s.N * s.K) / ms / 1e9).toFixed(1));
      row.ms = Number(ms.toFixed(4));
      rows.push(row);
      console.log(
        `${row.shape} | ${c.label} | ${row.ms} ms | ` +
          (c.kind === 'feed' ? `${row.gbPerS} GB/s of f32 read` : `${row.tflops} TFLOP/s`),
      );
    }
  }
  report('subgroup-matrix', { device: a?.name, robustness, workgroups: WORKGROUPS, reps, rows });
  for (const b of [src, dst, h]) b.destroy();
  disposeBackend(tf);
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
