// The model's parameters: one ordered, named set of tf.Variables. Modules ask for their parameters
// by name and shape at construction; the same construction code in "shapes only" mode lists every
// parameter of a config without allocating anything (for parameter counts of presets).
import * as tf from '@tensorflow/tfjs-core';
import { XttsError } from '../errors.js';
import { hashString, type Init, initValues, mixSeed } from './init.js';

export interface ParamSpec {
  name: string;
  shape: number[];
  init: Init;
}

export class ParamStore {
  readonly specs: ParamSpec[] = [];
  readonly variables = new Map<string, tf.Variable>();

  /** `seed` null: record shapes only; `param()` then returns a placeholder that must not be used. */
  constructor(private readonly seed: number | null) {}

  get shapesOnly(): boolean {
    return this.seed === null;
  }

  param(name: string, shape: number[], init: Init): tf.Variable {
    if (this.specs.some((s) => s.name === name)) throw new Error(`duplicate parameter name ${name}`);
    this.specs.push({ name, shape, init });
    if (this.seed === null) return undefined as unknown as tf.Variable;
    const size = shape.reduce((a, b) => a * b, 1);
    const values = initValues(init, size, mixSeed(this.seed, hashString(name)));
    // No tfjs variable name: those must be unique per process, and tests hold several models.
    const initial = tf.tensor(values, shape, 'float32');
    const v = tf.variable(initial, true);
    initial.dispose();
    this.variables.set(name, v);
    return v;
  }

  count(): number {
    return this.specs.reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
  }

  /** Assign weights by name; every parameter must be present with its shape, and nothing else. */
  assignWeights(weights: ReadonlyMap<string, tf.Tensor>): void {
    const problems: string[] = [];
    for (const [name, v] of this.variables) {
      const w = weights.get(name);
      if (!w) problems.push(`missing ${name}`);
      else if (w.shape.join(',') !== v.shape.join(','))
        problems.push(`${name}: shape [${w.shape}] but the model has [${v.shape}]`);
    }
    for (const name of weights.keys()) if (!this.variables.has(name)) problems.push(`unexpected ${name}`);
    if (problems.length > 0) {
      throw new XttsError(
        'WEIGHTS_MISMATCH',
        `weights do not fit this ` +
          `model: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`,
        {
          suggestions: ['Load the checkpoint with the model config it was trained with.'],
        },
      );
    }
    for (const [name, v] of this.variables) {
      // The cast is a new tensor even of a float32 one: the variable keeps the data, the tensor goes.
      const value = tf.cast(weights.get(name)!, 'float32');
      v.assign(value);
      value.dispose();
    }
  }

  /** Frees every parameter (the store holds none afterwards). */
  dispose(): void {
    for (const v of this.variables.values()) v.dispose();
    this.variables.clear();
  }
}
