// The recording half of step capture (step-capture.ts): one eager step's programs as
// tfjs-backend-webgpu issues them — pipeline, bind group roles, workgroup counts, uniforms — and
// whether two recordings of a step agree.
//
// A recording is trusted only when two consecutive eager steps recorded the same program sequence: the
// same pipelines, dispatches, uniforms, roles and uploaded constants. Anything that could differ between
// steps without being a declared input — a per-step value uploaded inside the step, a uniform that
// holds a step-dependent number, a tensor carried over from the previous step — differs between the two
// recordings and the step is refused with the reason. So is a step that reads back (its programs would
// depend on the host's decision) or writes into a tensor made before it.
import type * as tfTypes from '@tensorflow/tfjs-core';
import type { GpuPipeline } from './gpu-types.js';
import type { DataId, Engine, Program, TensorData, Uniform, WebgpuBackend } from './webgpu-internals.js';
import { deviceArray } from './webgpu-uploads.js';

type Tf = typeof tfTypes;

/**
 * The shader key of a program that only copies a contiguous piece of its one input (its last uniform
 * is the piece's start, in elements): backend/programs/slices.ts's segments. A replay turns such a piece
 * that goes to a variable into a buffer copy straight into the variable's buffer.
 */
export const COPY_SHADER_KEY = 'xtts_segment';

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
  /** How many of its last roles are further outputs (written, not read). */
  further: number;
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
  /**
   * The last `early` outputs are wanted as soon as they are made: a replay runs the programs they depend on as early
   * as it can and tells its caller when each is done (StepCapture.replay's onReady). Set by the caller; 0 by default.
   */
  early: number;
}

/** Bytes of a tensor's buffer (4 per value: float32, int32 and bool alike). */
export function bytesOf(d: TensorData): number {
  return 4 * d.shape.reduce((a, b) => a * b, 1);
}

/**
 * One step's recording while it runs (recordStep): every tensor a program binds gets a role, the first
 * time it is bound, from what it is to the step (an input, a variable, a constant uploaded inside the
 * step, a tensor made outside it, or one of the step's own programs' outputs).
 */
class StepRecorder {
  readonly rec: Recording;
  private readonly roleOf = new Map<DataId, number>();
  /** Tensors made during the step. */
  private readonly born = new Set<DataId>();
  /** Values uploaded inside the step (the constants it makes), by tensor. */
  private readonly uploads = new Map<DataId, Int32Array | Float32Array>();
  private readonly inputIndex: Map<DataId, number>;
  /** The variables' tensors before the step: their index in the variable list. */
  private readonly before: Map<DataId, number>;
  private readonly startIds: DataId[];
  /** The uniforms tfjs made last: those of the program it is encoding. */
  private uniforms: Uniform[] = [];

  constructor(
    private readonly backend: WebgpuBackend,
    inputs: readonly tfTypes.Tensor[],
    variables: tfTypes.Variable[],
  ) {
    this.startIds = variables.map((v) => v.dataId);
    this.before = new Map<DataId, number>(this.startIds.map((id, i) => [id, i]));
    this.inputIndex = new Map<DataId, number>(inputs.map((t, i) => [t.dataId, i]));
    this.rec = {
      programs: [],
      roles: [],
      outputs: [],
      assigned: [],
      variables,
      refused: backend.activeTimers ? 'a timed step (its programs run in passes of their own)' : null,
      early: 0,
    };
  }

  /** Keeps the first reason the step cannot be replayed. */
  refuse(why: string): void {
    this.rec.refused ??= why;
  }

  /** The role of tensor `id` where a program reads it (`writing` null) or program `writing` writes it. */
  private role(id: DataId, writing: number | null): number {
    const rec = this.rec;
    const known = this.roleOf.get(id);
    if (known !== undefined) {
      const r = rec.roles[known];
      if (writing !== null && r.kind !== 'internal')
        this.refuse(`program ${writing} writes into a tensor it did not make (${r.kind})`);
      r.last = rec.programs.length;
      if (writing === null) r.reads++;
      return known;
    }
    const d = this.backend.tensorMap.get(id)!;
    let kind: RoleKind;
    let index = -1;
    if (writing !== null && (!this.born.has(id) || this.uploads.has(id)))
      this.refuse(`program ${writing} writes into a tensor it did not make`);
    if (writing !== null) kind = 'internal';
    else if (this.inputIndex.has(id)) [kind, index] = ['input', this.inputIndex.get(id)!];
    else if (this.before.has(id)) [kind, index] = ['variable', this.before.get(id)!];
    else if (this.uploads.has(id)) kind = 'upload';
    else kind = 'external';
    const n =
      rec.roles.push({
        kind,
        dataId: id,
        bytes: bytesOf(d),
        index,
        values: this.uploads.get(id),
        def: rec.programs.length,
        last: rec.programs.length,
        reads: writing === null ? 1 : 0,
      }) - 1;
    this.roleOf.set(id, n);
    return n;
  }

  /** A program tfjs has just encoded: its pipeline, workgroups, uniforms and the roles it binds. */
  private recordProgram(program: Program, output: tfTypes.TensorInfo, ins: tfTypes.TensorInfo[]): void {
    const rec = this.rec;
    if (program.pipeline instanceof Promise) this.refuse('a pipeline compiled in parallel');
    const further = program.extraOutputs ?? 0;
    const inRoles = ins.map((t, k) => this.role(t.dataId, k >= ins.length - further ? rec.programs.length : null));
    const outRole = this.role(output.dataId, rec.programs.length);
    const uniforms = this.uniforms;
    const copy =
      program.shaderKey.startsWith(`${COPY_SHADER_KEY}_`) && ins.length === 1
        ? { copyOffsetBytes: 4 * uniforms[uniforms.length - 1].data[0] }
        : {};
    rec.programs.push({
      pipeline: program.pipeline as GpuPipeline,
      dispatch: [...program.dispatch],
      uniforms,
      roles: [outRole, ...inRoles],
      further,
      shaderKey: program.shaderKey,
      ...copy,
    });
  }

  /**
   * Runs `step` with the backend's entry points wrapped: the tensors it makes, the uniforms and
   * programs it encodes and the constants it uploads are recorded on their way through; a readback
   * refuses the step.
   */
  run(tf: Tf, step: () => tfTypes.Tensor[]): tfTypes.Tensor[] {
    const backend = this.backend;
    const recorder = this;
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
      recorder.born.add(id);
      return id;
    };
    backend.makeUniforms = function (u: Uniform[]) {
      recorder.uniforms = u.map((x) => ({ type: x.type, data: [...x.data] }));
      return originals.makeUniforms.call(this, u);
    };
    backend.recordAndSubmit = function (
      program: Program,
      output: tfTypes.TensorInfo,
      ins: tfTypes.TensorInfo[],
      defined?: Uniform[],
    ) {
      originals.recordAndSubmit.call(this, program, output, ins, defined);
      recorder.recordProgram(program, output, ins);
    };
    backend.uploadToGPU = function (id: DataId) {
      const d = backend.tensorMap.get(id);
      if (d && d.resource == null && d.values != null && !recorder.inputIndex.has(id))
        recorder.uploads.set(id, deviceArray(d.dtype, d.values).slice());
      return originals.uploadToGPU.call(this, id);
    };
    const reading = (what: string) =>
      function (this: WebgpuBackend, id: DataId) {
        recorder.refuse(`the step reads a tensor back (${what}): its programs may depend on the value`);
        return (originals[what as 'read'] as (id: DataId) => unknown).call(this, id);
      };
    backend.read = reading('read') as WebgpuBackend['read'];
    backend.readSync = reading('readSync');
    backend.readToGPU = reading('readToGPU');
    try {
      return onDeviceOnly(tf, step);
    } finally {
      Object.assign(backend, originals);
    }
  }

  /**
   * The step's outputs and the variables it assigned: each must be the output of one of its programs,
   * and lives to the end of the step.
   */
  finish(outputs: tfTypes.Tensor[], engine: Engine): void {
    const { rec, roleOf } = this;
    const end = rec.programs.length;
    for (const t of outputs) {
      const r = roleOf.get(t.dataId);
      if (r === undefined || rec.roles[r].kind !== 'internal')
        this.refuse(`an output of the step (shape [${t.shape}]) is not made by its programs`);
      else rec.roles[r].last = end;
      rec.outputs.push({
        role: r ?? -1,
        shape: [...t.shape],
        dtype: t.dtype,
        stored: this.backend.tensorMap.get(t.dataId)?.dtype ?? t.dtype,
      });
    }
    if (Object.keys(engine.state.registeredVariables).length !== rec.variables.length)
      this.refuse('the step made or dropped variables');
    rec.variables.forEach((v, i) => {
      if (v.dataId === this.startIds[i]) return;
      const r = roleOf.get(v.dataId);
      if (r === undefined || rec.roles[r].kind !== 'internal')
        this.refuse(`variable ${v.name} was given a value the step's programs did not make`);
      else {
        rec.roles[r].last = end;
        rec.assigned.push({ role: r, variable: i });
      }
    });
  }
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
  const recorder = new StepRecorder(backend, inputs, Object.values(engine.state.registeredVariables));
  const outputs = recorder.run(tf, step);
  recorder.finish(outputs, engine);
  return { outputs, recording: recorder.rec };
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
  if (a.early !== b.early) return `the step wanted ${a.early} outputs early, then ${b.early}`;
  if (
    a.assigned.map((x) => `${name(a, x.role)}>${x.variable}`).join() !==
    b.assigned.map((x) => `${name(b, x.role)}>${x.variable}`).join()
  )
    return 'the step assigned other variables';
  return null;
}
