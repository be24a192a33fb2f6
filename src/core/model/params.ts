// The model's parameters: one ordered, named set of tf.Variables. Modules ask for their parameters
// by name and shape at construction; the same construction code in "shapes only" mode lists every
// parameter of a config without allocating anything (for parameter counts of presets).
import * as tf from '@tensorflow/tfjs-core';
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
}
