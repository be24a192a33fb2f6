// Dropout from a device-resident pool of keep-multipliers ({0, 1/(1-rate)}), so a dropout site is
// one slice and one multiply (on webgpu with offsets drawn beforehand, one program: maskAt): no
// random numbers made on the host per step (tf.dropout draws them
// in JavaScript and uploads them, ~10 ms per million elements) and no extra kernels to make them
// on the device. Each call takes a window at a random offset (host PRNG, no sync); a pool holds at
// least twice the site size, so windows of consecutive steps differ. Pools are made per (rate,
// power-of-two size class) from the seed alone, so masks depend only on the seed and the PRNG state
// (`rngState`), which a checkpoint saves for a bit-identical resume.
import * as tf from '@tensorflow/tfjs-core';
import { gpuKernelActive } from '../backend/index.js';
import { hashString, mixSeed, Rng } from './init.js';
import type { Linear } from './nn.js';
import { maskAdd, maskAt, maskAtAvailable, WINDOW_KERNEL } from '../backend/programs/index.js';

/** One dropout of a step: its rate, the values it masks, and where the whole batch's mask sits. */
export interface DropoutCall {
  rate: number;
  size: number;
  whole: number;
  rowOffset: number;
}

/** pool[offsets[k] .. offsets[k] + size): a slice whose start is read on the device. */
export function windowAt(pool: tf.Tensor1D, offsets: tf.Tensor1D, k: number, size: number): tf.Tensor1D {
  if (gpuKernelActive(tf, WINDOW_KERNEL))
    return tf.engine().runKernel(WINDOW_KERNEL, { pool, offsets }, { k, size }) as tf.Tensor1D;
  // Other backends: the start on the host (they read it back at no cost).
  const start = (offsets.dataSync() as Int32Array)[k];
  return tf.slice(pool, [start], [size]);
}

export class DropoutPool {
  private readonly rng: Rng;
  private readonly pools = new Map<string, tf.Tensor1D>();

  constructor(private readonly seed: number) {
    this.rng = new Rng(mixSeed(seed, hashString('dropout')));
  }

  get rngState(): number {
    return this.rng.state;
  }
  set rngState(state: number) {
    this.rng.state = state >>> 0;
  }

  /**
   * Data-parallel training: this replica holds rows [start, start + size) of a batch of `total`.
   * Every dropout input is batch-major (its leading dimension is B or B·steps), so a replica takes
   * exactly its rows of the mask one device would draw for the whole batch, and N replicas train
   * with the masks of one. null: the whole batch is here.
   */
  shard: { start: number; size: number; total: number } | null = null;

  /**
   * Generation: one generator per row of the batch (perRow), so that each utterance's masks, and so its audio,
   * depend on its own seed alone, not on the batch it is decoded in or its place there.
   */
  private rows: Rng[] | null = null;

  /** Draw every later dropout's mask row by row, row b's windows from a generator seeded by `seeds[b]`. */
  perRow(seeds: readonly number[]): void {
    this.rows = seeds.map((s) => new Rng(mixSeed(this.seed, s)));
  }

  /** Set while a step is planned (recordPlan): every apply's rate and size, in order. */
  private plan: DropoutCall[] | null = null;
  /** Set while a step runs on offsets drawn beforehand (useOffsets). */
  private drawn: { calls: readonly DropoutCall[]; offsets: tf.Tensor1D; next: number } | null = null;

  apply<T extends tf.Tensor>(x: T, rate: number): T {
    if (rate <= 0) return x;
    return this.masked(x, rate, null);
  }

  /**
   * base + dropout(x, rate): a residual connection. On webgpu the mask's window, the multiply and
   * the add are one program (maskAdd), instead of a dropout program and an add.
   */
  residual<T extends tf.Tensor>(base: T, x: T, rate: number): T {
    if (rate <= 0) return tf.add(base, x);
    return this.masked(x, rate, base);
  }

  /**
   * base + dropout(linear(h), rate): a residual branch that ends in a linear layer (an attention's
   * output projection, an MLP's last layer). On webgpu its backward makes the dropout's gradient and
   * the layer's bias gradient (their column sums) in one program: 3 programs instead of 4, the same
   * values bit for bit.
   */
  residualLinear(base: tf.Tensor2D, linear: Linear, h: tf.Tensor2D, rate: number): tf.Tensor2D {
    if (rate <= 0 || !maskAtAvailable()) return this.residual(base, linear.apply(h), rate);
    const { pool, at, offset } = this.site(h.shape[0] * linear.outDim, rate);
    // As masked(): an offset drawn here goes to the device as a one-value tensor.
    const { offsets, k } = at ?? { offsets: tf.tensor1d([offset], 'int32'), k: 0 };
    return linear.applyDroppedResidual(h, base, pool, offsets, k);
  }

  /**
   * The pool and window of one dropout of `size` values: its offset drawn before the step (`at`: where
   * it waits on the device), else drawn now (`offset`) and added to the plan being recorded, if any.
   */
  private site(
    size: number,
    rate: number,
  ): { pool: tf.Tensor1D; at: { offsets: tf.Tensor1D; k: number } | null; offset: number } {
    const shard = this.shard;
    let whole = size;
    let rowOffset = 0;
    if (shard && shard.size !== shard.total) {
      const perRow = size / shard.size;
      if (!Number.isInteger(perRow))
        throw new Error(`dropout on a tensor of ${size} values that is not batch-major over ${shard.size} rows`);
      whole = perRow * shard.total;
      rowOffset = perRow * shard.start;
    }
    const pool = this.poolFor(rate, whole);
    let at: { offsets: tf.Tensor1D; k: number } | null = null;
    let offset = 0;
    const drawn = this.drawn;
    if (drawn) {
      // The offset was drawn before the step (drawOffsets) and waits on the device: the step's
      // programs are then the same every time, whatever the offsets (step capture relies on it).
      const call = drawn.calls[drawn.next];
      if (!call || call.rate !== rate || call.whole !== whole || call.rowOffset !== rowOffset || call.size !== size) {
        throw new Error(
          `dropout call ${drawn.next} (rate ${rate}, ${size} values) is not the planned ` +
            `one: the step changed since it was planned`,
        );
      }
      at = { offsets: drawn.offsets, k: drawn.next++ };
    } else {
      this.plan?.push({ rate, whole, rowOffset, size });
      offset = Math.floor(this.rng.next() * (pool.size - whole + 1)) + rowOffset;
    }
    return { pool, at, offset };
  }

  /** x · mask (plus `base` when not null). */
  private masked<T extends tf.Tensor>(x: T, rate: number, base: T | null): T {
    if (this.rows) return this.maskedByRow(x, rate, base);
    const size = x.size;
    const { pool, at, offset } = this.site(size, rate);
    if (maskAtAvailable() && (at !== null || base !== null)) {
      // webgpu: the window and the multiply (and the residual's add) in one program, forward and
      // backward. A residual's offset drawn here goes to the device as a one-value tensor, so that
      // eager steps add as replayed ones do (a separate multiply and add may round otherwise than the
      // one program), and train bit for bit as they do. A plain dropout drawn here (synthesis' prenet)
      // multiplies by a slice of the pool below: the same products as maskAt's, without an upload.
      const { offsets, k } = at ?? { offsets: tf.tensor1d([offset], 'int32'), k: 0 };
      if (base === null) {
        const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
          (args[1] as tf.GradSaveFunc)([offsets]);
          return {
            value: maskAt(args[0] as tf.Tensor, pool, offsets, k),
            gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => maskAt(dy, pool, saved[0] as tf.Tensor1D, k),
          };
        });
        return op(x) as T;
      }
      const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
        (args[2] as tf.GradSaveFunc)([offsets]);
        return {
          value: maskAdd(args[0] as tf.Tensor, args[1] as tf.Tensor, pool, offsets, k),
          gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [dy, maskAt(dy, pool, saved[0] as tf.Tensor1D, k)],
        };
      });
      return op(base, x) as T;
    }
    const mask = tf.reshape(at ? windowAt(pool, at.offsets, at.k, size) : tf.slice(pool, [offset], [size]), x.shape);
    // Gradient dy·mask, the mask saved once: tf.mul's own gradient saves both operands and casts
    // the mask (a kernel) on every backward pass. (Saved, not captured: tfjs disposes everything
    // made during the forward pass before backward starts, except what custom gradients save.)
    const op = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
      (args[1] as tf.GradSaveFunc)([mask]);
      return {
        value: tf.mul(args[0] as tf.Tensor, mask),
        gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.mul(dy, saved[0]),
      };
    });
    return (base === null ? op(x) : tf.add(base, op(x))) as T;
  }

  /** masked() for generation (no gradient): each row's window from the pool at its own generator's offset. */
  private maskedByRow<T extends tf.Tensor>(x: T, rate: number, base: T | null): T {
    const rows = this.rows!;
    const per = x.size / rows.length;
    if (!Number.isInteger(per))
      throw new Error(`dropout on a tensor of ${x.size} values that is not batch-major over ${rows.length} rows`);
    const pool = this.poolFor(rate, per);
    const mask = tf.tidy(() =>
      tf.reshape(
        tf.concat(rows.map((r) => tf.slice(pool, [Math.floor(r.next() * (pool.size - per + 1))], [per]))),
        x.shape,
      ),
    );
    const out = tf.mul(x, mask);
    mask.dispose();
    return (base === null ? out : tf.add(base, out)) as T;
  }

  /** Records the dropout calls of what `run` does (their rates and sizes, in order). */
  recordPlan<R>(run: () => R): { result: R; calls: DropoutCall[] } {
    const calls: DropoutCall[] = [];
    this.plan = calls;
    try {
      return { result: run(), calls };
    } finally {
      this.plan = null;
    }
  }

  /**
   * The offsets `calls` would draw, drawn now (the generator advances exactly as those applies
   * would advance it): int32 [calls], for useOffsets.
   */
  drawOffsets(calls: readonly DropoutCall[]): Int32Array {
    return Int32Array.from(
      calls,
      (c) => Math.floor(this.rng.next() * (this.poolFor(c.rate, c.whole).size - c.whole + 1)) + c.rowOffset,
    );
  }

  /** Runs `run` with its dropout masks taken at `offsets` (a device tensor of drawOffsets' values). */
  useOffsets<R>(calls: readonly DropoutCall[], offsets: tf.Tensor1D, run: () => R): R {
    this.drawn = { calls, offsets, next: 0 };
    try {
      const result = run();
      if (this.drawn.next !== calls.length)
        throw new Error(`the step made ${this.drawn.next} of its ${calls.length} planned dropout calls`);
      return result;
    } finally {
      this.drawn = null;
    }
  }

  private poolFor(rate: number, size: number): tf.Tensor1D {
    let cls = 1 << 16;
    while (cls < size) cls *= 2;
    const key = `${tf.getBackend()}:${rate}:${cls}`;
    let pool = this.pools.get(key);
    if (!pool || pool.isDisposed) {
      const n = 2 * cls;
      const rng = new Rng(mixSeed(mixSeed(this.seed, hashString(`pool:${rate}`)), cls));
      const keep = 1 / (1 - rate);
      const values = new Float32Array(n);
      for (let i = 0; i < n; i++) values[i] = rng.next() >= rate ? keep : 0;
      pool = tf.keep(tf.tensor1d(values));
      this.pools.set(key, pool);
    }
    return pool;
  }

  dispose(): void {
    for (const p of this.pools.values()) p.dispose();
    this.pools.clear();
  }
}
