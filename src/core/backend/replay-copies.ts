// The copies a replayed step ends with (the updated weights and optimizer moments into the variables'
// buffers) as compute programs. As copyBufferToBuffer commands each needed its own barriers on Vulkan
// (the variable's buffer from a shader read to a copy destination, and back in the next step): on an
// H100 the ~230 copies of a normal-preset step took 7.5 ms of device time (a replay 148 ms with them,
// 140 without), where the eager step's copies, compute programs of tfjs's, cost about nothing. Here
// one dispatch copies up to `perProgram` pieces, each into its own buffer, at the end of the step's
// compute pass: the dispatches write distinct buffers and only read their source, so they need no
// barrier between them. Values are copied as 32-bit words, bit for bit. Up to 15 pieces a program
// (MAX_PIECES) instead of 7 took 8 programs off a tiny step.
import { BufferUsage, type GpuBuffer, type GpuDevice, type GpuPass, type GpuPipeline } from './gpu-types.js';

/** A copy of `bytes` from `from` at `offsetBytes` to the start of `to`. */
export interface BufferCopy {
  from: GpuBuffer;
  offsetBytes: number;
  to: GpuBuffer;
  bytes: number;
}

const WORKGROUP = 256;
/** Words each invocation copies at least, before the dispatch takes more workgroups (at most MAX_GROUPS). */
const PER_INVOCATION = 8;
const MAX_GROUPS = 1024;
/**
 * Pieces a program copies at most: one storage buffer each beside the source's, within the device's
 * storage buffers per stage (xtts asks for the adapter's: 16 on an H100 and on llvmpipe, so 15; 8,
 * WebGPU's least, would give 7).
 */
const MAX_PIECES = 15;
const UNIFORM_USAGE = BufferUsage.UNIFORM | BufferUsage.COPY_DST;

/** WGSL of a program that copies `pieces` pieces of `src`, piece k (workgroup y) into d{k}. */
function shader(pieces: number): string {
  const ks = [...Array(pieces).keys()];
  return `
@group(0) @binding(0) var<storage, read> src : array<u32>;
${ks.map((k) => `@group(0) @binding(${k + 1}) var<storage, read_write> d${k} : array<u32>;`).join('\n')}
// Per piece: its first word in src, its words.
@group(0) @binding(${pieces + 1}) var<uniform> pieces : array<vec4<u32>, ${pieces}>;
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) id : vec3<u32>, @builtin(num_workgroups) groups : vec3<u32>) {
  let piece = pieces[id.y];
  let stride = groups.x * ${WORKGROUP}u;
  switch (id.y) {
${ks
  .map(
    (k) =>
      `    case ${k}u: {\n      for (var i = id.x; i < piece.y; i += stride) { d${k}[i] = src[piece.x + i]; }\n    }`,
  )
  .join('\n')}
    default: {}
  }
}`;
}

/**
 * The copies, in programs of at most `perProgram` pieces from one source (whole 32-bit words, as WebGPU's own copies).
 */
export class CopyPrograms {
  private readonly pipelines = new Map<number, GpuPipeline>();
  private readonly uniforms: GpuBuffer[] = [];
  private programs: { pipeline: GpuPipeline; bindGroup: unknown; groups: number; pieces: number }[] = [];
  readonly perProgram: number;

  constructor(
    private readonly device: GpuDevice,
    copies: readonly BufferCopy[],
  ) {
    this.perProgram = Math.max(1, Math.min(MAX_PIECES, device.limits.maxStorageBuffersPerShaderStage - 1));
    this.build(copies);
  }

  /** Programs dispatched per replay. */
  get count(): number {
    return this.programs.length;
  }

  /** Builds the programs again (a variable's buffer changed). */
  build(copies: readonly BufferCopy[]): void {
    this.dispose();
    const bySource = new Map<GpuBuffer, BufferCopy[]>();
    for (const c of copies) {
      if (c.offsetBytes % 4 !== 0 || c.bytes % 4 !== 0)
        throw new Error(`a copy of ${c.bytes} bytes at byte ${c.offsetBytes}: whole 32-bit words only`);
      if (c.bytes === 0) continue;
      const list = bySource.get(c.from);
      if (list) list.push(c);
      else bySource.set(c.from, [c]);
    }
    for (const [from, list] of bySource) {
      for (let start = 0; start < list.length; start += this.perProgram) {
        const chunk = list.slice(start, start + this.perProgram);
        const pipeline = this.pipeline(chunk.length);
        const table = new Uint32Array(4 * chunk.length);
        chunk.forEach((c, k) => table.set([c.offsetBytes / 4, c.bytes / 4], 4 * k));
        const uniform = this.device.createBuffer({ size: table.byteLength, usage: UNIFORM_USAGE });
        this.device.queue.writeBuffer(uniform, 0, table);
        this.uniforms.push(uniform);
        const bindGroup = this.device.createBindGroup({
          layout: pipeline.getBindGroupLayout(0),
          entries: [
            { binding: 0, resource: { buffer: from } },
            ...chunk.map((c, k) => ({ binding: k + 1, resource: { buffer: c.to } })),
            { binding: chunk.length + 1, resource: { buffer: uniform } },
          ],
        });
        const words = Math.max(...chunk.map((c) => c.bytes / 4));
        this.programs.push({
          pipeline,
          bindGroup,
          pieces: chunk.length,
          groups: Math.min(MAX_GROUPS, Math.max(1, Math.ceil(words / (WORKGROUP * PER_INVOCATION)))),
        });
      }
    }
  }

  private pipeline(pieces: number): GpuPipeline {
    let p = this.pipelines.get(pieces);
    if (!p) {
      p = this.device.createComputePipeline({
        layout: 'auto',
        compute: { module: this.device.createShaderModule({ code: shader(pieces) }), entryPoint: 'main' },
      });
      this.pipelines.set(pieces, p);
    }
    return p;
  }

  /** Dispatches the programs into `pass` (after the work that makes their sources). */
  encode(pass: GpuPass): void {
    for (const p of this.programs) {
      pass.setPipeline(p.pipeline);
      pass.setBindGroup(0, p.bindGroup);
      pass.dispatchWorkgroups(p.groups, p.pieces, 1);
    }
  }

  dispose(): void {
    for (const u of this.uniforms) u.destroy();
    this.uniforms.length = 0;
    this.programs = [];
  }
}
