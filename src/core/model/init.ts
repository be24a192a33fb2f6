// Deterministic parameter initialisation. Every parameter draws from its own stream, seeded by the
// run seed and a hash of the parameter's name, so adding or reordering parameters never changes
// the values of the others, and the same seed gives bit-identical weights on every backend (the
// numbers are made on the host, then uploaded once).

/** FNV-1a over the UTF-16 code units of a string (32-bit). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** splitmix32 finaliser: spreads a 32-bit seed over all bits (Steele et al. 2014). */
export function mixSeed(a: number, b: number): number {
  let z = (a ^ Math.imul(b, 0x9e3779b9)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** mulberry32: a small, fast 32-bit generator; its state is one uint32, so it is trivial to save. */
export class Rng {
  state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

export type Init =
  | { kind: 'zeros' }
  | { kind: 'ones' }
  | { kind: 'constant'; value: number }
  | { kind: 'normal'; std: number }
  | { kind: 'uniform'; limit: number };

export function initValues(init: Init, size: number, seed: number): Float32Array {
  const out = new Float32Array(size);
  switch (init.kind) {
    case 'zeros':
      return out;
    case 'ones':
      return out.fill(1);
    case 'constant':
      return out.fill(init.value);
    case 'uniform': {
      const rng = new Rng(seed);
      for (let i = 0; i < size; i++) out[i] = (2 * rng.next() - 1) * init.limit;
      return out;
    }
    case 'normal': {
      // Marsaglia's polar method (Marsaglia & Bray 1964): two normals per accepted pair with one log
      // and no trigonometry, about twice as fast as Box-Muller (the big preset has 422 M values).
      const rng = new Rng(seed);
      for (let i = 0; i < size; i += 2) {
        let u: number;
        let v: number;
        let s: number;
        do {
          u = 2 * rng.next() - 1;
          v = 2 * rng.next() - 1;
          s = u * u + v * v;
        } while (s >= 1 || s === 0);
        const f = init.std * Math.sqrt((-2 * Math.log(s)) / s);
        out[i] = u * f;
        if (i + 1 < size) out[i + 1] = v * f;
      }
      return out;
    }
  }
}
