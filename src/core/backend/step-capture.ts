// Capture and replay of a static-shape step on the webgpu backend. tfjs-backend-webgpu spends tens of
// microseconds of host time per program (tape, shape checks, a uniform buffer, a bind group, encoding);
// a training step of one bucket shape issues the same programs every time, so we record one step's
// programs — pipeline, bind group roles, workgroup counts, uniforms — and replay them into one command
// encoder per step with bind groups built once. Per replay the host only writes the step's inputs into
// pinned buffers, encodes ~3 calls per program, and copies the new values of the variables back.
//
// A recording is trusted only when two consecutive eager steps recorded the same program sequence: the
// same pipelines, dispatches, uniforms, roles and uploaded constants. Anything that could differ between
// steps without being a declared input — a per-step value uploaded inside the step, a uniform that
// holds a step-dependent number, a tensor carried over from the previous step — differs between the two
// recordings and the step is refused with the reason. So is a step that reads back (its programs would
// depend on the host's decision) or writes into a tensor made before it.
//
// Every intermediate tensor gets a buffer of its own arena, reused by tensors whose lifetimes do not
// overlap (greedy, by size, as tfjs's own pool reuses buffers); variables keep one buffer each: the
// replay writes a variable's new value into the arena and copies it over the variable's buffer at the
// end of the step, so the bind groups that read the variables stay valid from one replay to the next.
import type * as tfTypes from '@tensorflow/tfjs-core';
import { BufferUsage, type GpuBuffer, type GpuDevice, type GpuEncoder, type GpuPipeline } from './gpu-types.js';
import { CopyPrograms } from './replay-copies.js';
import { type DeviceSpans, type ReplaySpans, SpanTimer } from './replay-spans.js';
import { deviceArray } from './webgpu-uploads.js';

type Tf = typeof tfTypes;

// What we use of tfjs-backend-webgpu's internals (4.22), typed as far as we need them.
type DataId = object;
interface TensorData {
  dtype: tfTypes.DataType;
  shape: number[];
  values: ArrayLike<number> | null;
  resource: GpuBuffer | null;
  refCount: number;
}
interface Uniform {
  type: string;
  data: number[];
}
interface Program {
  pipeline: GpuPipeline | Promise<GpuPipeline>;
  dispatch: [number, number, number];
  shaderKey: string;
  /** A program of several outputs (kernels.ts outputsProgram): its last inputs are outputs it writes. */
  extraOutputs?: number;
}
interface WebgpuBackend {
  device: GpuDevice;
  tensorMap: { get(id: DataId): TensorData | undefined; has(id: DataId): boolean };
  commandEncoder: GpuEncoder | null;
  activeTimers: unknown;
  uniformPendingDisposal: GpuBuffer[];
  bufferManager: {
    releaseBuffer(b: GpuBuffer, reuse?: boolean): void;
    freeBuffers: Map<string, GpuBuffer[]>;
    numFreeBuffers: number;
    numBytesAllocated: number;
  };
  recordAndSubmit(
    program: Program,
    output: tfTypes.TensorInfo,
    inputs: tfTypes.TensorInfo[],
    programDefinedUniform?: Uniform[],
  ): void;
  makeUniforms(u: Uniform[]): { offset: number; size: number; buffer: GpuBuffer };
  uploadToGPU(id: DataId): void;
  write(...args: unknown[]): DataId;
  read(id: DataId): Promise<unknown>;
  readSync(id: DataId): unknown;
  readToGPU(id: DataId): unknown;
  makeTensorInfo(shape: number[], dtype: tfTypes.DataType): tfTypes.TensorInfo;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}
interface Engine {
  state: { registeredVariables: Record<string, tfTypes.Variable> };
  makeTensorFromTensorInfo(info: tfTypes.TensorInfo, backend?: unknown): tfTypes.Tensor;
}

/**
 * The shader key of a program that only copies a contiguous piece of its one input (its last uniform
 * is the piece's start, in elements): backend/programs/slices.ts's segments. A replay turns such a piece
 * that goes to a variable into a buffer copy straight into the variable's buffer.
 */
export const COPY_SHADER_KEY = 'xtts_segment';

/** Why a step cannot be replayed; the step runs eagerly and this is what the run records. */
export class CaptureRefused extends Error {}

type RoleKind = 'input' | 'variable' | 'external' | 'upload' | 'internal';
interface Role {
  kind: RoleKind;
  dataId: DataId;
  bytes: number;
  /** input: its index; variable: its index in the variable list. */
  index: number;
  /** upload: the values, as they go to the device. */
  values?: Int32Array | Float32Array;
  /** internal: first and last program that touch it. */
  def: number;
  last: number;
  /** Programs that read it. */
  reads: number;
}
interface RecordedProgram {
  pipeline: GpuPipeline;
  dispatch: [number, number, number];
  uniforms: Uniform[];
  /** Roles bound: [output, ...inputs] (a program's further outputs last among its inputs). */
  roles: number[];
  shaderKey: string;
  /** A copy program (COPY_SHADER_KEY): where in its input the output starts, in bytes. */
  copyOffsetBytes?: number;
}

/** One eager step, recorded: what `StepCapture.build` turns into a replay. */
export interface Recording {
  programs: RecordedProgram[];
  roles: Role[];
  /**
   * Roles of the step's outputs, in the order the step returned them; `stored`: the dtype their
   * buffer holds, which may not be the tensor's (tfjs casts bool to float32 without a program: the
   * float32 tensor shares the bool's int32 buffer).
   */
  outputs: { role: number; shape: number[]; dtype: tfTypes.DataType; stored: tfTypes.DataType }[];
  /** (internal role that holds the new value, variable index) for every variable the step assigned. */
  assigned: { role: number; variable: number }[];
  variables: tfTypes.Variable[];
  /** The first reason this step could not be replayed, if any. */
  refused: string | null;
}

const { STORAGE, COPY_SRC, COPY_DST } = BufferUsage;

function bytesOf(d: TensorData): number {
  return 4 * d.shape.reduce((a, b) => a * b, 1);
}

/**
 * Runs `step` eagerly on the webgpu backend and records its programs. `inputs` are the tensors the
 * caller supplies anew every step (uploaded first, so that no kernel runs on them on the CPU); `step`
 * returns the tensors the caller keeps.
 */
export function recordStep(
  tf: Tf,
  inputs: readonly tfTypes.Tensor[],
  step: () => tfTypes.Tensor[],
): { outputs: tfTypes.Tensor[]; recording: Recording } {
  const backend = tf.backend() as unknown as WebgpuBackend;
  const engine = tf.engine() as unknown as Engine;
  for (const t of inputs) backend.uploadToGPU(t.dataId);
  const variables = Object.values(engine.state.registeredVariables);
  const startIds = variables.map((v) => v.dataId);
  const before = new Map<DataId, number>(startIds.map((id, i) => [id, i]));
  /** Tensors made during the step. */
  const born = new Set<DataId>();
  const inputIndex = new Map<DataId, number>(inputs.map((t, i) => [t.dataId, i]));
  const rec: Recording = {
    programs: [],
    roles: [],
    outputs: [],
    assigned: [],
    variables,
    refused: backend.activeTimers ? 'a timed step (its programs run in passes of their own)' : null,
  };
  const roleOf = new Map<DataId, number>();
  const uploads = new Map<DataId, Int32Array | Float32Array>();
  const refuse = (why: string) => {
    rec.refused ??= why;
  };
  const role = (id: DataId, writing: number | null): number => {
    const known = roleOf.get(id);
    if (known !== undefined) {
      const r = rec.roles[known];
      if (writing !== null && r.kind !== 'internal')
        refuse(`program ${writing} writes into a tensor it did not make (${r.kind})`);
      r.last = rec.programs.length;
      if (writing === null) r.reads++;
      return known;
    }
    const d = backend.tensorMap.get(id)!;
    let kind: RoleKind;
    let index = -1;
    if (writing !== null && (!born.has(id) || uploads.has(id)))
      refuse(`program ${writing} writes into a tensor it did not make`);
    if (writing !== null) kind = 'internal';
    else if (inputIndex.has(id)) [kind, index] = ['input', inputIndex.get(id)!];
    else if (before.has(id)) [kind, index] = ['variable', before.get(id)!];
    else if (uploads.has(id)) kind = 'upload';
    else kind = 'external';
    const n =
      rec.roles.push({
        kind,
        dataId: id,
        bytes: bytesOf(d),
        index,
        values: uploads.get(id),
        def: rec.programs.length,
        last: rec.programs.length,
        reads: writing === null ? 1 : 0,
      }) - 1;
    roleOf.set(id, n);
    return n;
  };

  let uniforms: Uniform[] = [];
  const originals = {
    write: backend.write,
    recordAndSubmit: backend.recordAndSubmit,
    makeUniforms: backend.makeUniforms,
    uploadToGPU: backend.uploadToGPU,
    read: backend.read,
    readSync: backend.readSync,
    readToGPU: backend.readToGPU,
  };
  backend.write = function (...args: unknown[]) {
    const id = originals.write.apply(this, args);
    born.add(id);
    return id;
  };
  backend.makeUniforms = function (u: Uniform[]) {
    uniforms = u.map((x) => ({ type: x.type, data: [...x.data] }));
    return originals.makeUniforms.call(this, u);
  };
  backend.recordAndSubmit = function (
    program: Program,
    output: tfTypes.TensorInfo,
    ins: tfTypes.TensorInfo[],
    defined?: Uniform[],
  ) {
    originals.recordAndSubmit.call(this, program, output, ins, defined);
    if (program.pipeline instanceof Promise) refuse('a pipeline compiled in parallel');
    const further = program.extraOutputs ?? 0;
    const inRoles = ins.map((t, k) => role(t.dataId, k >= ins.length - further ? rec.programs.length : null));
    const outRole = role(output.dataId, rec.programs.length);
    const copy =
      program.shaderKey.startsWith(`${COPY_SHADER_KEY}_`) && ins.length === 1
        ? { copyOffsetBytes: 4 * uniforms[uniforms.length - 1].data[0] }
        : {};
    rec.programs.push({
      pipeline: program.pipeline as GpuPipeline,
      dispatch: [...program.dispatch],
      uniforms,
      roles: [outRole, ...inRoles],
      shaderKey: program.shaderKey,
      ...copy,
    });
  };
  backend.uploadToGPU = function (id: DataId) {
    const d = backend.tensorMap.get(id);
    if (d && d.resource == null && d.values != null && !inputIndex.has(id))
      uploads.set(id, deviceArray(d.dtype, d.values).slice());
    return originals.uploadToGPU.call(this, id);
  };
  const reading = (what: string) =>
    function (this: WebgpuBackend, id: DataId) {
      refuse(`the step reads a tensor back (${what}): its programs may depend on the value`);
      return (originals[what as 'read'] as (id: DataId) => unknown).call(this, id);
    };
  backend.read = reading('read') as WebgpuBackend['read'];
  backend.readSync = reading('readSync');
  backend.readToGPU = reading('readToGPU');
  let outputs: tfTypes.Tensor[];
  try {
    outputs = onDeviceOnly(tf, step);
  } finally {
    Object.assign(backend, originals);
  }
  const end = rec.programs.length;
  for (const t of outputs) {
    const r = roleOf.get(t.dataId);
    if (r === undefined || rec.roles[r].kind !== 'internal')
      refuse(`an output of the step (shape [${t.shape}]) is not made by its programs`);
    else rec.roles[r].last = end;
    rec.outputs.push({
      role: r ?? -1,
      shape: [...t.shape],
      dtype: t.dtype,
      stored: backend.tensorMap.get(t.dataId)?.dtype ?? t.dtype,
    });
  }
  if (Object.keys(engine.state.registeredVariables).length !== variables.length)
    refuse('the step made or dropped variables');
  variables.forEach((v, i) => {
    if (v.dataId === startIds[i]) return;
    const r = roleOf.get(v.dataId);
    if (r === undefined || rec.roles[r].kind !== 'internal')
      refuse(`variable ${v.name} was given a value the step's programs did not make`);
    else {
      rec.roles[r].last = end;
      rec.assigned.push({ role: r, variable: i });
    }
  });
  return { outputs, recording: rec };
}

/**
 * fn with every kernel as a GPU program on webgpu: with CPU forwarding on, tfjs-backend-webgpu
 * computes small ops on host-made tensors on the CPU, so a step's programs would depend on which of
 * its tensors happen to be on the host (their results would be uploads, not programs), and eager and
 * captured steps would differ. Other backends run fn as it is.
 */
export function onDeviceOnly<T>(tf: Tf, fn: () => T): T {
  if (tf.getBackend() !== 'webgpu') return fn();
  const flagBefore = tf.env().getBool('WEBGPU_CPU_FORWARD');
  tf.env().set('WEBGPU_CPU_FORWARD', false);
  try {
    return fn();
  } finally {
    tf.env().set('WEBGPU_CPU_FORWARD', flagBefore);
  }
}

/** Why two recordings of one step differ (null: the same). */
export function compareRecordings(a: Recording, b: Recording): string | null {
  if (a.programs.length !== b.programs.length)
    return `the step dispatched ${a.programs.length} programs, then ${b.programs.length}`;
  const name = (rec: Recording, r: number) => {
    const x = rec.roles[r];
    return x.kind === 'external' ? x.dataId : `${x.kind}:${x.kind === 'input' || x.kind === 'variable' ? x.index : r}`;
  };
  for (let i = 0; i < a.programs.length; i++) {
    const [p, q] = [a.programs[i], b.programs[i]];
    const where = `program ${i} (${q.shaderKey.slice(0, 60)})`;
    if (p.pipeline !== q.pipeline) return `${where}: another pipeline`;
    if (p.dispatch.join() !== q.dispatch.join()) return `${where}: workgroups [${p.dispatch}] then [${q.dispatch}]`;
    if (JSON.stringify(p.uniforms) !== JSON.stringify(q.uniforms))
      return `${where}: its uniforms changed (a per-step value passed as a uniform)`;
    for (let k = 0; k < p.roles.length; k++) {
      if (name(a, p.roles[k]) !== name(b, q.roles[k]))
        return (
          `${where}: binding ${k} is ${a.roles[p.roles[k]].kind}, ` +
          `then ${b.roles[q.roles[k]].kind} (a tensor carried from the step before?)`
        );
      const [u, v] = [a.roles[p.roles[k]], b.roles[q.roles[k]]];
      if (
        u.kind === 'upload' &&
        (u.values!.length !== v.values!.length || u.values!.some((x, j) => !Object.is(x, v.values![j])))
      )
        return `${where}: an upload made inside the step changed (a per-step value that is not an input)`;
    }
  }
  if (a.outputs.map((o) => name(a, o.role)).join() !== b.outputs.map((o) => name(b, o.role)).join())
    return 'the step returned other tensors';
  if (
    a.assigned.map((x) => `${name(a, x.role)}>${x.variable}`).join() !==
    b.assigned.map((x) => `${name(b, x.role)}>${x.variable}`).join()
  )
    return 'the step assigned other variables';
  return null;
}

/** A recorded step, ready to replay. */
export class StepCapture {
  private bindGroups: (unknown | null)[] = [];
  /** Each program's uniforms (null: an elided copy). */
  private uniforms: ({ offset: number; size: number; buffer: GpuBuffer } | null)[] = [];
  private readonly buffers: GpuBuffer[] = [];
  private readonly uniformBuffers: GpuBuffer[] = [];
  /** Roles of the step's inputs (written into their pinned buffers every replay). */
  private readonly inputRoles: number[] = [];
  /** Buffer of each role. */
  private readonly bound: GpuBuffer[];
  /** Roles bound to tensors made outside the step, with the buffer each had when built. */
  private readonly held: { role: number; dataId: DataId; buffer: GpuBuffer; variable: number }[] = [];
  /** Times the variables' buffers were bound again (rebindVariables). */
  rebinds = 0;
  /** The variables' new values over their buffers, at the end of every replay (each copy names its variable). */
  private readonly copyBacks: {
    variable: number;
    from: GpuBuffer;
    offsetBytes: number;
    to: GpuBuffer;
    bytes: number;
  }[];
  /** copyBacks as compute programs at the end of the step's pass. */
  private readonly copies: CopyPrograms;
  /** The programs a replay dispatches (all but the elided copies), in order. */
  private readonly active: number[];
  private assignedIds: DataId[];
  /** Bytes of the arena and pinned buffers this capture holds. */
  readonly bytes: number;
  /** GPU programs a replay dispatches. */
  readonly programs: number;
  replays = 0;
  /** Host time of each replay's encoding (inputs written, programs and copies encoded), ms; submit excluded. */
  readonly encodeMs: number[] = [];
  /**
   * Host time of each replay's submits (encoder.finish and queue.submit of its command buffers), ms:
   * Dawn translates the commands into the driver's there (on Vulkan: barriers, descriptor sets and
   * dispatches, per program), on this thread, so it is host time per program as much as encoding is.
   */
  readonly submitMs: number[] = [];
  /** Where the replays' device time goes (timestamps at their passes' edges), when the owner times them. */
  spans: ReplaySpans | null = null;

  private constructor(
    private readonly tf: Tf,
    private readonly rec: Recording,
  ) {
    const backend = tf.backend() as unknown as WebgpuBackend;
    const device = backend.device;

    const usage = STORAGE | COPY_SRC | COPY_DST;
    const make = (bytes: number) => {
      const b = device.createBuffer({ size: Math.max(4, bytes), usage });
      this.buffers.push(b);
      return b;
    };
    this.bound = new Array(rec.roles.length);
    // A piece of a flat tensor that only goes to a variable is copied there from the flat tensor at
    // the end; its program is not replayed (the optimizer's split: ~one program per parameter).
    const producer = new Map<number, number>();
    rec.programs.forEach((p, i) => {
      if (!producer.has(p.roles[0])) producer.set(p.roles[0], i);
    });
    const skipped = new Set<number>();
    const direct = new Map<number, { from: number; offsetBytes: number }>();
    for (const a of rec.assigned) {
      const i = producer.get(a.role);
      const p = i === undefined ? undefined : rec.programs[i];
      if (!p || p.copyOffsetBytes === undefined || rec.roles[a.role].reads > 0) continue;
      skipped.add(i!);
      direct.set(a.role, { from: p.roles[1], offsetBytes: p.copyOffsetBytes });
      rec.roles[p.roles[1]].last = rec.programs.length;
    }
    this.active = rec.programs.map((_, i) => i).filter((i) => !skipped.has(i));
    // Intermediates: a buffer is free again after the last program that reads it (strictly before the
    // next definition, so no program reads and writes one buffer).
    const internal = rec.roles.map((r, i) => ({ r, i })).filter((x) => x.r.kind === 'internal' && !direct.has(x.i));
    internal.sort((x, y) => x.r.def - y.r.def);
    const free = new Map<number, GpuBuffer[]>();
    const busy: { last: number; bytes: number; buffer: GpuBuffer }[] = [];
    for (const { r, i } of internal) {
      for (let k = busy.length - 1; k >= 0; k--) {
        if (busy[k].last < r.def) {
          const list = free.get(busy[k].bytes) ?? [];
          list.push(busy[k].buffer);
          free.set(busy[k].bytes, list);
          busy.splice(k, 1);
        }
      }
      const buffer = free.get(r.bytes)?.pop() ?? make(r.bytes);
      busy.push({ last: r.last, bytes: r.bytes, buffer });
      this.bound[i] = buffer;
    }
    rec.roles.forEach((r, i) => {
      if (r.kind === 'input') {
        this.bound[i] = make(r.bytes);
        this.inputRoles.push(i);
      } else if (r.kind === 'upload') {
        this.bound[i] = make(r.bytes);
        device.queue.writeBuffer(this.bound[i], 0, r.values!);
      } else if (r.kind === 'variable' || r.kind === 'external') {
        const dataId = r.kind === 'variable' ? rec.variables[r.index].dataId : r.dataId;
        const buffer = backend.tensorMap.get(dataId)?.resource;
        if (!buffer) throw new CaptureRefused(`a ${r.kind} the step reads is gone`);
        this.bound[i] = buffer;
        this.held.push({ role: i, dataId, buffer, variable: r.kind === 'variable' ? r.index : -1 });
      }
    });
    for (const a of rec.assigned) {
      if (this.held.some((h) => h.variable === a.variable)) continue;
      const dataId = rec.variables[a.variable].dataId;
      const buffer = backend.tensorMap.get(dataId)?.resource;
      if (!buffer) throw new CaptureRefused(`variable ${rec.variables[a.variable].name} has no buffer`);
      this.held.push({ role: -1, dataId, buffer, variable: a.variable });
    }
    this.assignedIds = rec.assigned.map((a) => rec.variables[a.variable].dataId);
    this.copyBacks = rec.assigned.map((a) => {
      const to = this.held.find((h) => h.variable === a.variable)!.buffer;
      const d = direct.get(a.role);
      const from = d
        ? { from: this.bound[d.from], offsetBytes: d.offsetBytes }
        : { from: this.bound[a.role], offsetBytes: 0 };
      return { variable: a.variable, ...from, to, bytes: rec.roles[a.role].bytes };
    });
    this.copies = new CopyPrograms(device, this.copyBacks);
    this.bytes = this.buffers.reduce((a, b) => a + b.size, 0);
    this.programs = this.active.length + this.copies.count;
    this.uniforms = rec.programs.map((p, i) => {
      if (skipped.has(i)) return null;
      const u = backend.makeUniforms(p.uniforms.map((x) => ({ type: x.type, data: [...x.data] })));
      // Ours to keep: out of the list tfjs releases at its next submit.
      const pending = backend.uniformPendingDisposal;
      pending.splice(pending.lastIndexOf(u.buffer), 1);
      this.uniformBuffers.push(u.buffer);
      return u;
    });
    this.bindGroups = rec.programs.map((_, i) => this.bindGroup(i));
  }

  private bindGroup(i: number): unknown | null {
    const u = this.uniforms[i];
    if (!u) return null;
    const p = this.rec.programs[i];
    const device = (this.tf.backend() as unknown as WebgpuBackend).device;
    return device.createBindGroup({
      layout: p.pipeline.getBindGroupLayout(0),
      entries: [
        ...p.roles.map((r, k) => ({ binding: k, resource: { buffer: this.bound[r] } })),
        { binding: p.roles.length, resource: u },
      ],
    });
  }

  /**
   * Binds the variables' current buffers where an eager step (another phase's recording, a timed
   * probe, loaded weights) gave a variable a new tensor: its programs' bind groups are built again.
   */
  private rebindVariables(): void {
    const backend = this.tf.backend() as unknown as WebgpuBackend;
    const changed = new Set<number>();
    let copiesChanged = false;
    for (const h of this.held) {
      if (h.variable < 0) continue;
      const dataId = this.rec.variables[h.variable].dataId;
      if (dataId === h.dataId && backend.tensorMap.get(dataId)?.resource === h.buffer) continue;
      // A value assigned from the host is uploaded now (before tfjs's pending work is submitted).
      backend.uploadToGPU(dataId);
      const buffer = backend.tensorMap.get(dataId)!.resource!;
      // By variable, not by buffer: an eager step may have handed one variable's old buffer to another
      // (tfjs's pool reuses a released buffer), and a copy matched by buffer would then follow the
      // wrong variable, two copies writing one buffer.
      for (const c of this.copyBacks) {
        if (c.variable !== h.variable) continue;
        c.to = buffer;
        copiesChanged = true;
      }
      h.dataId = dataId;
      h.buffer = buffer;
      if (h.role >= 0) {
        this.bound[h.role] = buffer;
        changed.add(h.role);
      }
    }
    if (copiesChanged) this.copies.build(this.copyBacks);
    if (changed.size === 0 && !copiesChanged) return;
    this.rec.programs.forEach((p, i) => {
      if (p.roles.some((r) => changed.has(r))) this.bindGroups[i] = this.bindGroup(i);
    });
    this.assignedIds = this.rec.assigned.map((a) => this.rec.variables[a.variable].dataId);
    this.rebinds++;
  }

  /** Builds the replay of a recording that compareRecordings found stable. */
  static build(tf: Tf, rec: Recording): StepCapture {
    if (rec.refused) throw new CaptureRefused(rec.refused);
    return new StepCapture(tf, rec);
  }

  /**
   * Why the replay cannot run on the tensors it was built on, or null: a tensor made outside the step
   * (not a variable: those are bound again) was disposed, or a variable lost its buffer.
   */
  stale(): string | null {
    const backend = this.tf.backend() as unknown as WebgpuBackend;
    for (const h of this.held) {
      if (h.variable >= 0) {
        const v = this.rec.variables[h.variable];
        if (v.isDisposed || !backend.tensorMap.has(v.dataId)) return `variable ${v.name} was disposed`;
      } else if (backend.tensorMap.get(h.dataId)?.resource !== h.buffer) return 'a tensor the step reads was disposed';
    }
    return null;
  }

  /**
   * One step: the inputs (same shapes and order as when recorded) into their pinned buffers, every
   * program, the variables' new values over their buffers; returns the step's outputs as new tensors.
   */
  replay(inputs: readonly tfTypes.Tensor[]): tfTypes.Tensor[] {
    const run = this.encodeReplay(inputs, Number.POSITIVE_INFINITY);
    for (;;) {
      const r = run.next();
      if (r.done) return r.value;
    }
  }

  /**
   * replay, submitted in `parts` command buffers with the event loop let run between them: the device
   * starts on the first part while the rest is encoded, and what waits on the event loop meanwhile (a
   * readback that resolved: the next batch's alignment scores, which then go to the search's worker
   * threads) does not wait for the whole step's encoding.
   */
  async replayInParts(inputs: readonly tfTypes.Tensor[], parts: number): Promise<tfTypes.Tensor[]> {
    const run = this.encodeReplay(inputs, Math.max(1, Math.ceil(this.active.length / Math.max(1, parts))));
    for (;;) {
      const r = run.next();
      if (r.done) return r.value;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** The replay's encoding; after every `partPrograms` programs it submits what it has and yields. */
  private *encodeReplay(inputs: readonly tfTypes.Tensor[], partPrograms: number): Generator<void, tfTypes.Tensor[]> {
    const tf = this.tf;
    const backend = tf.backend() as unknown as WebgpuBackend;
    const device = backend.device;
    const why = this.stale();
    if (why) throw new CaptureRefused(why);
    this.rebindVariables();
    // Work tfjs has encoded but not submitted goes first (it may make an input).
    if (backend.commandEncoder) {
      backend.endComputePassEncoder();
      backend.submitQueue();
    }
    let started = performance.now();
    let encodeMs = 0;
    let submitMs = 0;
    let encoder = device.createCommandEncoder();
    for (const i of this.inputRoles) {
      const r = this.rec.roles[i];
      const t = inputs[r.index];
      const d = backend.tensorMap.get(t.dataId)!;
      if (bytesOf(d) !== r.bytes)
        throw new CaptureRefused(`input ${r.index} has shape [${t.shape}], not the recorded one`);
      if (d.resource) encoder.copyBufferToBuffer(d.resource, 0, this.bound[i], 0, r.bytes);
      else device.queue.writeBuffer(this.bound[i], 0, deviceArray(d.dtype, d.values!));
    }
    const spans = this.spans;
    let passes = 0;
    let pass = encoder.beginComputePass(spans?.pass(passes++));
    let pipeline: GpuPipeline | null = null;
    const programs = this.rec.programs;
    for (let n = 0; n < this.active.length; n++) {
      if (n > 0 && n % partPrograms === 0) {
        pass.end();
        const ended = performance.now();
        encodeMs += ended - started;
        device.queue.submit([encoder.finish()]);
        submitMs += performance.now() - ended;
        yield;
        started = performance.now();
        encoder = device.createCommandEncoder();
        pass = encoder.beginComputePass(spans?.pass(passes++));
        pipeline = null;
      }
      const i = this.active[n];
      const p = programs[i];
      if (p.pipeline !== pipeline) {
        pass.setPipeline(p.pipeline);
        pipeline = p.pipeline;
      }
      pass.setBindGroup(0, this.bindGroups[i]);
      pass.dispatchWorkgroups(p.dispatch[0], p.dispatch[1], p.dispatch[2]);
    }
    this.copies.encode(pass);
    pass.end();
    spans?.close(encoder, passes);
    const infos = this.rec.outputs.map((o) => {
      const info = backend.makeTensorInfo(o.shape, o.stored);
      backend.uploadToGPU(info.dataId);
      encoder.copyBufferToBuffer(
        this.bound[o.role],
        0,
        backend.tensorMap.get(info.dataId)!.resource!,
        0,
        this.rec.roles[o.role].bytes,
      );
      return { ...info, dtype: o.dtype };
    });
    const ended = performance.now();
    device.queue.submit([encoder.finish()]);
    if (this.encodeMs.length < 10_000) {
      this.encodeMs.push(encodeMs + ended - started);
      this.submitMs.push(submitMs + performance.now() - ended);
    }
    spans?.afterSubmit();
    // tfjs keeps a host copy of a tensor once read (checkpoints read the weights): the replay changed
    // the variables in place, under dataIds that did not change, so those copies are now stale.
    for (const v of this.assignedIds) {
      const d = backend.tensorMap.get(v);
      if (d) d.values = null;
    }
    this.replays++;
    const engine = tf.engine() as unknown as Engine;
    return infos.map((info) => engine.makeTensorFromTensorInfo(info, backend));
  }

  dispose(): void {
    const backend = this.tf.backend() as unknown as WebgpuBackend;
    this.copies.dispose();
    for (const b of this.buffers) b.destroy();
    for (const b of this.uniformBuffers) backend.bufferManager.releaseBuffer(b);
    this.buffers.length = 0;
    this.uniformBuffers.length = 0;
  }
}

/**
 * Destroys the buffers tfjs's pool holds free (what the eager steps used and gave back): once a step
 * replays from its own arena they would stay allocated beside it. Returns the bytes released.
 */
export function releasePooledBuffers(tf: Tf): number {
  const manager = (tf.backend() as unknown as WebgpuBackend).bufferManager;
  let bytes = 0;
  for (const list of manager.freeBuffers.values()) {
    for (const b of list) {
      bytes += b.size;
      b.destroy();
    }
    manager.numFreeBuffers -= list.length;
    list.length = 0;
  }
  manager.numBytesAllocated -= bytes;
  return bytes;
}

/**
 * Where one shape's capture stands: run once unrecorded (plan: what it makes once and keeps, such as
 * cached constants, is made there), recorded, recorded again to compare, then replayed (or refused).
 */
export interface CaptureState {
  phase: 'plan' | 'record' | 'verify' | 'replay' | 'refused';
  last?: Recording;
  capture?: StepCapture;
  reason?: string;
  /** Times this shape was recorded again because a replay found its tensors changed. */
  recaptures: number;
  /** Free buffers of tfjs's pool destroyed once the replay was built (bytes). */
  pooledBytesReleased?: number;
}

/**
 * Moves a shape's capture on after one of its eager calls was recorded: the first recording is kept;
 * the second is compared with it and, when they agree, built into a replay; anything else refuses the
 * shape with the reason. Returns true when the shape was captured or refused (worth telling).
 */
export function advanceCapture(tf: Tf, s: CaptureState, recording: Recording): boolean {
  const refuse = (reason: string) => {
    s.phase = 'refused';
    s.reason = reason;
    s.last = undefined;
    return true;
  };
  if (recording.refused) return refuse(recording.refused);
  if (s.phase === 'record') {
    s.last = recording;
    s.phase = 'verify';
    return false;
  }
  const differs = compareRecordings(s.last!, recording);
  s.last = undefined;
  if (differs) return refuse(`two calls of this shape dispatched different work: ${differs}`);
  try {
    // The eager calls' pooled buffers go first: the arena does not come on top of them.
    s.pooledBytesReleased = releasePooledBuffers(tf);
    s.capture = StepCapture.build(tf, recording);
    s.phase = 'replay';
  } catch (e) {
    if (!(e instanceof CaptureRefused)) throw e;
    return refuse(e.message);
  }
  return true;
}

/**
 * If a replayed shape's tensors changed (stale), drops its replay so that it is recorded again; the
 * reason stays on the state. Returns whether it did.
 */
export function dropStaleCapture(s: CaptureState): boolean {
  const stale = s.capture!.stale();
  if (stale === null) return false;
  s.capture!.dispose();
  s.capture = undefined;
  s.recaptures++;
  s.phase = 'record';
  s.reason = `recorded again: ${stale}`;
  return true;
}

/** A shape's capture as a run records it. */
export interface ShapeCaptureSummary {
  shape: string;
  state: CaptureState['phase'];
  programs: number | null;
  arenaBytes: number | null;
  replays: number;
  recaptures: number;
  reason: string | null;
}

/** The summary of each shape's capture. */
export function summarizeShapes(shapes: ReadonlyMap<string, CaptureState>): ShapeCaptureSummary[] {
  return [...shapes].map(([shape, s]) => ({
    shape,
    state: s.phase,
    programs: s.capture?.programs ?? null,
    arenaBytes: s.capture?.bytes ?? null,
    replays: s.capture?.replays ?? 0,
    recaptures: s.recaptures,
    reason: s.reason ?? null,
  }));
}

/** Bytes the shapes' replays hold on the device (their arenas and pinned buffers). */
export function arenaBytesOf(shapes: ReadonlyMap<string, CaptureState>): number {
  let n = 0;
  for (const s of shapes.values()) n += s.capture?.bytes ?? 0;
  return n;
}

/** One replayed function's shapes, as a run records them. */
export interface CallCaptureSummary {
  replayedCalls: number;
  eagerCalls: number;
  shapes: ShapeCaptureSummary[];
  /** The replays' device time (backend/replay-spans.ts); absent in runs recorded before xtts measured it. */
  deviceSpans?: DeviceSpans;
}

/**
 * Capture and replay of a function of device tensors with no per-call state of its own (a forward
 * pass that updates nothing: no dropout draws, no assignments): per shape key, its first call runs
 * eagerly, the next two are recorded, and once they agree every further call is a replay.
 */
export class CallReplayer {
  private readonly shapes = new Map<string, CaptureState>();
  private replayed = 0;
  private eager = 0;
  /** The replays' timestamps at their passes' edges. */
  private readonly spans = new SpanTimer();
  /** Told when a shape is captured, refused or recorded again. */
  onChange?: (shape: string, state: CaptureState) => void;

  constructor(private readonly tf: Tf) {}

  /** fn's outputs for these inputs (the tensors that change from call to call, in a fixed order). */
  run(key: string, inputs: readonly tfTypes.Tensor[], fn: () => tfTypes.Tensor[]): tfTypes.Tensor[] {
    let s = this.shapes.get(key);
    if (!s) {
      s = { phase: 'plan', recaptures: 0 };
      this.shapes.set(key, s);
    }
    if (s.phase === 'replay') {
      if (!dropStaleCapture(s)) {
        this.replayed++;
        this.spans.attach(s.capture!, (this.tf.backend() as unknown as WebgpuBackend).device);
        return s.capture!.replay(inputs);
      }
      this.onChange?.(key, s);
    }
    this.eager++;
    if (s.phase === 'refused') return fn();
    if (s.phase === 'plan') {
      s.phase = 'record';
      // As the recordings will run it: the constants it uploads are uploaded here, once.
      return onDeviceOnly(this.tf, fn);
    }
    const { outputs, recording } = recordStep(this.tf, inputs, fn);
    if (advanceCapture(this.tf, s, recording)) this.onChange?.(key, s);
    return outputs;
  }

  /** Bytes the replays' buffers hold on the device. */
  get arenaBytes(): number {
    return arenaBytesOf(this.shapes);
  }

  async summary(): Promise<CallCaptureSummary> {
    return {
      replayedCalls: this.replayed,
      eagerCalls: this.eager,
      shapes: summarizeShapes(this.shapes),
      deviceSpans: await this.spans.summary(),
    };
  }

  dispose(): void {
    this.spans.dispose();
    for (const s of this.shapes.values()) s.capture?.dispose();
    this.shapes.clear();
  }
}
