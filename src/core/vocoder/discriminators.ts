// The vocoder's discriminators, for adversarial training (`vocoder.adversarial`): HiFi-GAN's
// multi-period discriminator (Kong et al. 2020) and UnivNet's multi-resolution discriminator (Jang et
// al. 2021, the pair Vocos trains with). Each judges a waveform by its own view of it and hands back
// its score map and every layer's activations (for the feature-matching loss):
//
// - period p: the wave [B, T] folded into p columns of every p-th sample ([B·p, ⌈T/p⌉]), then 1-D
//   convolutions down each column (HiFi-GAN's (5, 1) kernels, stride 3 four times, then stride 1),
//   channels c/32, c/8, c/2, c, c for `period_channels` c (HiFi-GAN: 1024), a (3, 1) convolution to
//   one score per position;
// - resolution (n_fft, hop) (the multi-resolution STFT loss's three): log(1 + |STFT|) [B, frames,
//   bins], 2-D convolutions over time × frequency: (3, 9) from 1 channel, three (3, 9) halving the
//   bins, one (3, 3), all `resolution_channels` wide (UnivNet: 32), a (3, 3) to one score. The log
//   compresses our unnormalised magnitudes (hundreds in loud bins) to the range of the convolutions'
//   initial weights.
//
// Leaky ReLU (slope 0.1) after every layer but the last, as both papers. No weight normalisation: the
// engine's optimizer holds one flat buffer of plain weights, and the LSGAN losses (losses.ts) keep the
// scores bounded without it.
//
// Every convolution is a stride-1 "same" 1-D convolution (`sameConv`), of one of two compositions with
// gradients on every backend: where a layer widens (1 → 32 channels) the K shifted copies of its input
// side by side and one matmul (im2col: K·C_in values a position); elsewhere the engine's (model/nn.ts
// `conv1dComposed`: every position times every tap in one matmul, K·C_out products a position, then
// their shifted sum, one program on webgpu). Either way the larger of the two is never made: the
// resolution discriminators' first layer alone would otherwise hold 288 values for each of a batch's
// million time-frequency cells.
import * as tf from '@tensorflow/tfjs-core';
import { conv1dComposed, ParamStore, scalar } from '../model/index.js';
import { stftMagnitude, type StftSize } from './spectral.js';

const LEAKY_SLOPE = 0.1;

/** What the discriminators' shape depends on (config `vocoder.adversarial`). */
export interface DiscriminatorShape {
  periods: number[];
  period_channels: number;
  resolution_channels: number;
}

/** One discriminator's verdict: its scores (any shape) and its layers' activations, in order. */
export interface Judgement {
  score: tf.Tensor;
  features: tf.Tensor[];
}

/**
 * A 1-D convolution with stride: x [N, L, C], w [K, C, O] (K odd), b [O] -> [N, ⌈L/s⌉, O]; output t
 * sums w[k]·x[s·t + k − (K−1)/2] over the taps (zero outside the input).
 */
export function stridedConv1d(x: tf.Tensor3D, w: tf.Tensor3D, b: tf.Tensor1D, stride: number): tf.Tensor3D {
  if (stride === 1) return sameConv(x, w, b);
  const [n, length, ch] = x.shape;
  const [kernel, , out] = w.shape;
  const half = (kernel - 1) / 2;
  const blocks = Math.ceil(length / stride);
  const padded =
    blocks * stride === length
      ? x
      : tf.pad(x, [
          [0, 0],
          [0, blocks * stride - length],
          [0, 0],
        ]);
  const folded = tf.reshape(padded, [n, blocks, stride * ch]) as tf.Tensor3D;
  // Block j (−J … J, J = ⌈h/s⌉) of output t holds inputs s·(t + j) + r, r = 0 … s − 1: offsets
  // d = s·j + r from s·t.
  // The taps (offsets −h … h) padded to −J·s … J·s + s − 1 and cut into 2J + 1 blocks of s.
  const reach = Math.ceil(half / stride);
  const before = reach * stride - half;
  const after = reach * stride + stride - 1 - half;
  const taps = tf.pad(w, [
    [before, after],
    [0, 0],
    [0, 0],
  ]);
  const blocked = tf.reshape(taps, [2 * reach + 1, stride * ch, out]) as tf.Tensor3D;
  return sameConv(folded, blocked, b);
}

/**
 * A stride-1 'same' convolution x [N, L, C] · w [K, C, O] + b: the matmul first where the layer narrows
 * or keeps its width (K·O products a position, on webgpu summed by the tap-sum program), the shifted
 * copies first (im2col, K·C values a position) where it widens.
 */
function sameConv(x: tf.Tensor3D, w: tf.Tensor3D, b: tf.Tensor1D): tf.Tensor3D {
  const [n, length, ch] = x.shape;
  const [kernel, , out] = w.shape;
  if (ch >= out) return conv1dComposed(x, w, b);
  const half = (kernel - 1) / 2;
  const padded =
    kernel === 1
      ? x
      : tf.pad(x, [
          [0, 0],
          [half, half],
          [0, 0],
        ]);
  const shifted = Array.from({ length: kernel }, (_, k) => tf.slice(padded, [0, k, 0], [n, length, ch]));
  const columns = kernel === 1 ? x : tf.concat(shifted, 2);
  // Column block k holds input t + k − h: the taps' order of w [K, C, O] flattened.
  const y = tf.matMul(tf.reshape(columns, [n * length, kernel * ch]), tf.reshape(w, [kernel * ch, out]));
  return tf.add(tf.reshape(y, [n, length, out]), b) as tf.Tensor3D;
}

/** A 2-D convolution over [N, T, F, C] with a (kt, kf) kernel ('same' padding), stride (1, sf). */
function conv2dTimeFreq(x: tf.Tensor4D, w: tf.Tensor3D, b: tf.Tensor1D, kt: number, sf: number): tf.Tensor4D {
  const [n, frames, bins, ch] = x.shape;
  const half = (kt - 1) / 2;
  let stacked: tf.Tensor = x;
  if (kt > 1) {
    const padded = tf.pad(x, [
      [0, 0],
      [half, half],
      [0, 0],
      [0, 0],
    ]);
    const shifted = Array.from({ length: kt }, (_, i) => tf.slice(padded, [0, i, 0, 0], [n, frames, bins, ch]));
    stacked = tf.concat(shifted, 3);
  }
  const y = stridedConv1d(tf.reshape(stacked, [n * frames, bins, kt * ch]) as tf.Tensor3D, w, b, sf);
  return tf.reshape(y, [n, frames, y.shape[1], y.shape[2]]) as tf.Tensor4D;
}

/** Kaiming-uniform for a leaky-ReLU layer of `fanIn` inputs. */
function convParams(store: ParamStore, name: string, shape: [number, number, number]) {
  const fanIn = shape[0] * shape[1];
  const limit = Math.sqrt(6 / ((1 + LEAKY_SLOPE ** 2) * fanIn));
  return {
    w: store.param(`${name}.w`, shape, { kind: 'uniform', limit }) as tf.Tensor3D,
    b: store.param(`${name}.b`, [shape[2]], { kind: 'zeros' }) as tf.Tensor1D,
  };
}

const leaky = (x: tf.Tensor) => tf.leakyRelu(x, LEAKY_SLOPE);

/** HiFi-GAN's discriminator of period p. */
class PeriodDiscriminator {
  private readonly layers: { w: tf.Tensor3D; b: tf.Tensor1D; stride: number }[] = [];
  private readonly post: { w: tf.Tensor3D; b: tf.Tensor1D };

  constructor(
    store: ParamStore,
    readonly period: number,
    channels: number,
  ) {
    const widths = [channels / 32, channels / 8, channels / 2, channels, channels].map((c) => Math.max(1, c));
    let inCh = 1;
    widths.forEach((c, i) => {
      const p = convParams(store, `disc.period${period}.conv${i}`, [5, inCh, c]);
      this.layers.push({ ...p, stride: i < 4 ? 3 : 1 });
      inCh = c;
    });
    this.post = convParams(store, `disc.period${period}.post`, [3, inCh, 1]);
  }

  judge(wave: tf.Tensor2D): Judgement {
    const [batch, samples] = wave.shape;
    const p = this.period;
    const rows = Math.ceil(samples / p);
    const padded =
      rows * p === samples
        ? wave
        : tf.pad(wave, [
            [0, 0],
            [0, rows * p - samples],
          ]);
    // [B, rows, p] -> [B, p, rows]: column c holds samples c, c + p, c + 2p, …
    let x = tf.reshape(tf.transpose(tf.reshape(padded, [batch, rows, p]), [0, 2, 1]), [batch * p, rows, 1]);
    const features: tf.Tensor[] = [];
    for (const l of this.layers) {
      x = leaky(stridedConv1d(x as tf.Tensor3D, l.w, l.b, l.stride));
      features.push(x);
    }
    const score = sameConv(x as tf.Tensor3D, this.post.w, this.post.b);
    return { score, features };
  }
}

/** UnivNet's discriminator of one STFT resolution. */
class ResolutionDiscriminator {
  private readonly layers: { w: tf.Tensor3D; b: tf.Tensor1D; kt: number; sf: number }[] = [];

  constructor(
    store: ParamStore,
    readonly size: StftSize,
    channels: number,
  ) {
    // (kt, kf, stride along frequency) of each layer, the last one the score.
    const plan: [number, number, number, number][] = [
      [3, 9, 1, channels],
      [3, 9, 2, channels],
      [3, 9, 2, channels],
      [3, 9, 2, channels],
      [3, 3, 1, channels],
      [3, 3, 1, 1],
    ];
    let inCh = 1;
    plan.forEach(([kt, kf, sf, out], i) => {
      const name = i === plan.length - 1 ? 'post' : `conv${i}`;
      const p = convParams(store, `disc.resolution${size.nFft}.${name}`, [kf, kt * inCh, out]);
      this.layers.push({ ...p, kt, sf });
      inCh = out;
    });
  }

  judge(wave: tf.Tensor2D): Judgement {
    const batch = wave.shape[0];
    const magnitude = stftMagnitude(wave, this.size);
    const [rows, bins] = magnitude.shape;
    const frames = rows / batch;
    let x = tf.reshape(tf.log1p(magnitude), [batch, frames, bins, 1]) as tf.Tensor4D;
    const features: tf.Tensor[] = [];
    const last = this.layers.length - 1;
    for (let i = 0; i < last; i++) {
      const l = this.layers[i];
      x = leaky(conv2dTimeFreq(x, l.w, l.b, l.kt, l.sf)) as tf.Tensor4D;
      features.push(x);
    }
    const l = this.layers[last];
    return { score: conv2dTimeFreq(x, l.w, l.b, l.kt, l.sf), features };
  }
}

/** Every discriminator of a run: the periods' and the resolutions', one parameter store. */
export class Discriminators {
  readonly store: ParamStore;
  private readonly periods: PeriodDiscriminator[];
  private readonly resolutions: ResolutionDiscriminator[];

  /** `seed` null: shapes only (parameter counts), nothing allocated. */
  constructor(shape: DiscriminatorShape, resolutions: readonly StftSize[], seed: number | null) {
    this.store = new ParamStore(seed);
    this.periods = shape.periods.map((p) => new PeriodDiscriminator(this.store, p, shape.period_channels));
    this.resolutions = resolutions.map((r) => new ResolutionDiscriminator(this.store, r, shape.resolution_channels));
  }

  get params(): ReadonlyMap<string, tf.Variable> {
    return this.store.variables;
  }

  parameterCount(): number {
    return this.store.count();
  }

  /** Names of the discriminators, in the order judge() returns their verdicts. */
  get names(): string[] {
    return [
      ...this.periods.map((d) => `period${d.period}`),
      ...this.resolutions.map((d) => `resolution${d.size.nFft}`),
    ];
  }

  /** Every discriminator's verdict on wave [B, samples]. */
  judge(wave: tf.Tensor2D): Judgement[] {
    return [...this.periods, ...this.resolutions].map((d) => d.judge(wave));
  }

  dispose(): void {
    this.store.dispose();
  }
}

/** LSGAN's discriminator loss (HiFi-GAN): mean over discriminators of E[(1 − D(real))²] + E[D(fake)²]. */
export function discriminatorLoss(real: readonly Judgement[], fake: readonly Judgement[]): tf.Scalar {
  const one = scalar(1);
  const terms = real.map((r, i) => tf.add(tf.mean(tf.square(tf.sub(one, r.score))), tf.mean(tf.square(fake[i].score))));
  return tf.div(tf.addN(terms), scalar(terms.length)) as tf.Scalar;
}

/** LSGAN's generator loss: mean over discriminators of E[(1 − D(fake))²]. */
export function adversarialLoss(fake: readonly Judgement[]): tf.Scalar {
  const one = scalar(1);
  const terms = fake.map((f) => tf.mean(tf.square(tf.sub(one, f.score))));
  return tf.div(tf.addN(terms), scalar(terms.length)) as tf.Scalar;
}

/** Feature matching: mean over discriminators of the mean over their layers of E|f(real) − f(fake)|. */
export function featureMatchingLoss(real: readonly Judgement[], fake: readonly Judgement[]): tf.Scalar {
  const terms = real.map((r, i) => {
    const layers = r.features.map((f, j) => tf.mean(tf.abs(tf.sub(f, fake[i].features[j]))));
    return tf.div(tf.addN(layers), scalar(layers.length));
  });
  return tf.div(tf.addN(terms), scalar(terms.length)) as tf.Scalar;
}

/** Parameters of the discriminators without allocating them. */
export function countDiscriminatorParameters(shape: DiscriminatorShape, resolutions: readonly StftSize[]): number {
  return new Discriminators(shape, resolutions, null).parameterCount();
}
