// Capture and replay of a static-shape step on the webgpu backend. tfjs-backend-webgpu spends tens of
// microseconds of host time per program (tape, shape checks, a uniform buffer, a bind group, encoding);
// a training step of one bucket shape issues the same programs every time, so we record one step's
// programs — pipeline, bind group roles, workgroup counts, uniforms — and replay them into one command
// encoder per step with bind groups built once. Per replay the host only writes the step's inputs into
// pinned buffers, encodes ~3 calls per program, and copies the new values of the variables back.
//
// Every intermediate tensor gets a buffer of its own arena, reused by tensors whose lifetimes do not
// overlap (greedy, by size, as tfjs's own pool reuses buffers); variables keep one buffer each: the
// replay writes a variable's new value into the arena and copies it over the variable's buffer at the
// end of the step, so the bind groups that read the variables stay valid from one replay to the next.
//
// The recording and its checks are step-recording.ts's; a shape's way from eager calls to replays
// (and CallReplayer, the replay of a function of device tensors) is shape-captures.ts's. Outputs a caller
// wants early (a replica's gradient buckets) are made as soon as they can be (replay-order.ts), and the
// replay submits what it has encoded after each and tells the caller (onReady).
import type * as tfTypes from '@tensorflow/tfjs-core';
import { BufferUsage, type GpuBuffer, type GpuPipeline } from './gpu-types.js';
import { CopyPrograms } from './replay-copies.js';
import { earlyFirst } from './replay-order.js';
import type { ReplaySpans } from './replay-spans.js';
import { bytesOf, type Recording } from './step-recording.js';
import { type DataId, type Engine, submitEncoded, type WebgpuBackend } from './webgpu-internals.js';
import { deviceArray } from './webgpu-uploads.js';

// The recording's API, which the tests take from here with the replay's.
export { compareRecordings, recordStep } from './step-recording.js';

type Tf = typeof tfTypes;

/** Why a step cannot be replayed; the step runs eagerly and this is what the run records. */
export class CaptureRefused extends Error {}

const { STORAGE, COPY_SRC, COPY_DST } = BufferUsage;

/** Told during a replay that early output `k` (0 = the first) is made, in `buffer`'s first `bytes`. */
export type OnReady = (k: number, buffer: GpuBuffer, bytes: number) => void;

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
  /** Outputs handed out as soon as they are made (Recording.early): the last `early` of the step's outputs. */
  readonly early: number;
  /** Position in `active` → the early outputs made by that program. */
  private readonly readyAfter = new Map<number, number[]>();

  private constructor(
    private readonly tf: Tf,
    private readonly rec: Recording,
    readyAfter: Map<number, number[]>,
  ) {
    this.early = rec.early;
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
    this.active.forEach((i, n) => {
      const ready = readyAfter.get(i);
      if (ready) this.readyAfter.set(n, ready);
    });
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
    const order = earlyFirst(rec);
    return new StepCapture(tf, order.rec, order.readyAfter);
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
  replay(inputs: readonly tfTypes.Tensor[], onReady?: OnReady): tfTypes.Tensor[] {
    const run = this.encodeReplay(inputs, Number.POSITIVE_INFINITY, onReady);
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

  /**
   * The replay's encoding; after every `partPrograms` programs it submits what it has and yields. With `onReady`, what
   * is encoded is also submitted after each program that makes an early output, and onReady is told (its copies out
   * of the buffer then follow the programs that made it on the device's queue).
   */
  private *encodeReplay(
    inputs: readonly tfTypes.Tensor[],
    partPrograms: number,
    onReady?: OnReady,
  ): Generator<void, tfTypes.Tensor[]> {
    const tf = this.tf;
    const backend = tf.backend() as unknown as WebgpuBackend;
    const device = backend.device;
    const why = this.stale();
    if (why) throw new CaptureRefused(why);
    this.rebindVariables();
    // Work tfjs has encoded but not submitted goes first (it may make an input).
    submitEncoded(backend);
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
    const submitPart = () => {
      pass.end();
      const ended = performance.now();
      encodeMs += ended - started;
      device.queue.submit([encoder.finish()]);
      submitMs += performance.now() - ended;
    };
    const nextPart = () => {
      started = performance.now();
      encoder = device.createCommandEncoder();
      pass = encoder.beginComputePass(spans?.pass(passes++));
      pipeline = null;
    };
    for (let n = 0; n < this.active.length; n++) {
      if (n > 0 && n % partPrograms === 0) {
        submitPart();
        yield;
        nextPart();
      }
      const i = this.active[n];
      const p = programs[i];
      if (p.pipeline !== pipeline) {
        pass.setPipeline(p.pipeline);
        pipeline = p.pipeline;
      }
      pass.setBindGroup(0, this.bindGroups[i]);
      pass.dispatchWorkgroups(p.dispatch[0], p.dispatch[1], p.dispatch[2]);
      const ready = onReady && this.readyAfter.get(n);
      if (ready) {
        submitPart();
        const outputs = this.rec.outputs.length - this.early;
        for (const k of ready) {
          const role = this.rec.outputs[outputs + k].role;
          onReady(k, this.bound[role], this.rec.roles[role].bytes);
        }
        nextPart();
      }
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
