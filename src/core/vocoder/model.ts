// The neural vocoder: log-mel frames in, waveform out. A Vocos-style generator (Siuzdak 2023): every
// layer runs at the mel frame rate, a ConvNeXt backbone (Liu et al. 2022) turns each frame into one
// STFT frame (log-magnitude and phase), and the inverse STFT of the features' own size makes the
// samples. Nothing runs at the sample rate but one matmul and an overlap-add, so the generator costs
// about as much per second of audio as a small transformer layer does: HiFi-GAN's upsampling stack
// does most of its work at the sample rate.
//
//   mel [B, T, n_mels] → conv (kernel, n_mels → C) → norm
//     → layers × ConvNeXt block: depthwise conv (kernel) → norm → C → ff_mult·C (ReLU) → C → ·γ,
//       residual
//     → norm → linear C → 2·bins: log|X| (clamped at ln 1000) and phase φ
//     → X = |X|·(cos φ, sin φ) → inverse STFT → wave [B, T·hop]
//
// ReLU stands in for ConvNeXt's GELU: the engine fuses ReLU into the dense layer's matmul and its
// gradient (model/nn.ts), GELU would be four more kernels per block each way. γ is ConvNeXt's layer
// scale, starting at 1/layers as Vocos's does, so that the deep residual stack starts near identity.
//
// Parameter counts (80 mels, n_fft 1024; `countVocoderParameters`, checked by test/unit/vocoder-model.test.ts):
//
//   preset        | channels layers kernel ff_mult | parameters
//   vocoder-tiny  |   192       6      7      3    |  1,649,346
//   vocoder-small |   384       8      7      3    |  7,732,098
import * as tf from '@tensorflow/tfjs-core';
import type { VocoderConfig } from '../config/index.js';
import type { MelSettings } from '../data/index.js';
import { Conv1d, LayerNorm, Linear, ParamStore, scalar } from '../model/index.js';
import { tapSum, tapSumAvailable } from '../backend/programs/index.js';
import { featureStft, framesPerWindow, istft, type StftSize } from './spectral.js';

/** Log-magnitudes above this are clamped (Vocos clamps |X| at 100 for a normalised STFT; ours is not). */
const MAX_LOG_MAGNITUDE = Math.log(1000);

/** What a generator's shape depends on: its section of the config and the features it inverts. */
export type VocoderShape = Pick<VocoderConfig, 'channels' | 'layers' | 'kernel' | 'ff_mult'>;
/** The feature settings of the mels it inverts: all of the log-mel's. */
export type VocoderAudio = MelSettings;

/** Depthwise 1-D convolution over frames, 'same' padding: [B, T, C] with taps [K, C] and bias [C]. */
function depthwiseConv(x: tf.Tensor3D, w: tf.Tensor2D, b: tf.Tensor1D): tf.Tensor3D {
  const [batch, frames, ch] = x.shape;
  const kernel = w.shape[0];
  if (tapSumAvailable()) {
    // webgpu: every frame times every tap in one broadcast product, the shifted sum and the bias in one
    // program (backend/programs/conv.ts, the same program the model's convolutions use).
    return tapSum(tf.mul(tf.reshape(x, [batch, frames, 1, ch]), w) as tf.Tensor4D, b);
  }
  const half = (kernel - 1) / 2;
  const padded = tf.pad(x, [
    [0, 0],
    [half, half],
    [0, 0],
  ]);
  const taps = Array.from({ length: kernel }, (_, k) =>
    tf.mul(tf.slice(padded, [0, k, 0], [batch, frames, ch]), tf.slice(w, [k, 0], [1, ch])),
  );
  return tf.add(tf.addN(taps), b) as tf.Tensor3D;
}

class ConvNeXtBlock {
  private readonly dw: tf.Variable;
  private readonly dwBias: tf.Variable;
  private readonly norm: LayerNorm;
  private readonly up: Linear;
  private readonly down: Linear;
  private readonly gamma: tf.Variable;

  constructor(store: ParamStore, name: string, c: VocoderShape) {
    const ch = c.channels;
    this.dw = store.param(`${name}.dw.w`, [c.kernel, ch], { kind: 'uniform', limit: Math.sqrt(3 / c.kernel) });
    this.dwBias = store.param(`${name}.dw.b`, [ch], { kind: 'zeros' });
    this.norm = new LayerNorm(store, `${name}.norm`, ch);
    this.up = new Linear(store, `${name}.up`, ch, c.ff_mult * ch, { std: Math.sqrt(2 / ch) });
    this.down = new Linear(store, `${name}.down`, c.ff_mult * ch, ch, { std: Math.sqrt(1 / (c.ff_mult * ch)) });
    this.gamma = store.param(`${name}.gamma`, [ch], { kind: 'constant', value: 1 / c.layers });
  }

  // [B, T, C] -> [B, T, C]
  apply(x: tf.Tensor3D): tf.Tensor3D {
    const [batch, frames, ch] = x.shape;
    const mixed = depthwiseConv(x, this.dw as tf.Tensor2D, this.dwBias as tf.Tensor1D);
    const h = this.down.apply(this.up.apply(this.norm.apply(tf.reshape(mixed, [batch * frames, ch])), 'relu'));
    return tf.add(x, tf.reshape(tf.mul(h, this.gamma), [batch, frames, ch])) as tf.Tensor3D;
  }
}

export class VocoderGenerator {
  readonly store: ParamStore;
  readonly stft: StftSize;
  readonly bins: number;
  private readonly embed: Conv1d;
  private readonly embedNorm: LayerNorm;
  private readonly blocks: ConvNeXtBlock[];
  private readonly outNorm: LayerNorm;
  private readonly head: Linear;

  /** `seed` null: shapes only (parameter counts), nothing allocated. */
  constructor(
    readonly shape: VocoderShape,
    readonly audio: VocoderAudio,
    seed: number | null,
  ) {
    this.stft = featureStft(audio);
    framesPerWindow(this.stft);
    this.bins = audio.n_fft / 2 + 1;
    this.store = new ParamStore(seed);
    const s = this.store;
    const ch = shape.channels;
    this.embed = new Conv1d(s, 'vocoder.embed', shape.kernel, audio.n_mels, ch, 1);
    this.embedNorm = new LayerNorm(s, 'vocoder.embed_norm', ch);
    this.blocks = Array.from({ length: shape.layers }, (_, i) => new ConvNeXtBlock(s, `vocoder.block${i}`, shape));
    this.outNorm = new LayerNorm(s, 'vocoder.out_norm', ch);
    this.head = new Linear(s, 'vocoder.head', ch, 2 * this.bins, { std: 0.01 });
  }

  get params(): ReadonlyMap<string, tf.Variable> {
    return this.store.variables;
  }

  parameterCount(): number {
    return this.store.count();
  }

  /** Samples per mel frame. */
  get hop(): number {
    return this.audio.hop_length;
  }

  /**
   * mel [B, T, n_mels] (log-mel as the features are) -> wave [B, T·hop]. `inference`: nothing is
   * differentiated, so each block's intermediates are freed as it ends.
   */
  forward(mel: tf.Tensor3D, options: { inference?: boolean } = {}): tf.Tensor2D {
    const [batch, frames, nMels] = mel.shape;
    if (nMels !== this.audio.n_mels) throw new Error(`the vocoder takes ${this.audio.n_mels} mels, got ${nMels}`);
    const ch = this.shape.channels;
    const embedded = this.embed.apply(mel, 'composed');
    let x = tf.reshape(this.embedNorm.apply(tf.reshape(embedded, [batch * frames, ch])), [batch, frames, ch]);
    for (const block of this.blocks) {
      const input = x as tf.Tensor3D;
      x = options.inference ? tf.tidy(() => block.apply(input)) : block.apply(input);
    }
    const out = this.head.apply(this.outNorm.apply(tf.reshape(x, [batch * frames, ch])));
    const bins = this.bins;
    const logMagnitude = tf.minimum(tf.slice(out, [0, 0], [batch * frames, bins]), scalar(MAX_LOG_MAGNITUDE));
    const phase = tf.slice(out, [0, bins], [batch * frames, bins]);
    const magnitude = tf.exp(logMagnitude);
    const spectrum = tf.concat([tf.mul(magnitude, tf.cos(phase)), tf.mul(magnitude, tf.sin(phase))], 1);
    return istft(tf.reshape(spectrum, [batch, frames, 2 * bins]), this.stft);
  }

  /** The live weights by stable name (not copies: do not dispose them). */
  getWeights(): Map<string, tf.Tensor> {
    return new Map(this.store.variables);
  }

  /** Assign weights by name; every parameter must be present with its shape, and nothing else. */
  setWeights(weights: ReadonlyMap<string, tf.Tensor>): void {
    this.store.assignWeights(weights);
  }

  dispose(): void {
    this.store.dispose();
  }
}

/** Parameters of a vocoder config without allocating it. */
export function countVocoderParameters(shape: VocoderShape, audio: VocoderAudio): number {
  return new VocoderGenerator(shape, audio, null).parameterCount();
}
