// One optimizer step of a vocoder run (training/vocoder-trainer.ts runs the loop around it): random
// segments → upload → forward, losses, backward → update; with `vocoder.adversarial` the
// discriminators' step beside the generator's (HiFi-GAN's alternation within one step: the generator
// is judged by the discriminators as they stand, and they then learn from the same generated wave).
// With step capture (webgpu, one micro-batch a step) the whole step is recorded twice and then replayed,
// as the acoustic model's (optim/step-replay.ts): its inputs are the segments and the optimizers'
// per-step scalars. A run that turns adversarial at `start_step` records its new step afresh.
import * as tf from '@tensorflow/tfjs-core';
import { advanceCapture, type CaptureState, dropStaleCapture, onDeviceOnly, recordStep } from '../backend/index.js';
import type { XttsConfig } from '../config/index.js';
import { mixSeed, scalar } from '../model/index.js';
import type { SpanTimer } from '../telemetry/index.js';
import {
  adversarialLoss,
  discriminatorLoss,
  Discriminators,
  featureMatchingLoss,
  type Judgement,
  lossResolutions,
  type SegmentSampler,
  stftFrames,
  type VocoderGenerator,
  vocoderLosses,
} from '../vocoder/index.js';
import type { AdamW } from './optim/adamw.js';
import { captureUnavailable } from './optim/step-replay.js';
import type { NamedArray } from './checkpoint.js';

/** The discriminators of an adversarial run and their own optimizer. */
export interface Adversary {
  discriminators: Discriminators;
  optimizer: AdamW;
  /** Steps up to this one train the generator alone. */
  startStep: number;
}

/** What a step needs of its run. */
export interface VocoderStepRun {
  config: XttsConfig;
  generator: VocoderGenerator;
  optimizer: AdamW;
  adversary: Adversary | undefined;
  sampler: SegmentSampler;
  capture: VocoderCapture;
  /** The last step taken (this one is step + 1). */
  step: number;
  say: (m: string) => void;
}

/**
 * A step's device scalars, read back at log intervals: the generator's [loss (its reconstruction
 * part, unscaled), mel, spectral convergence, log-magnitude, grad norm, finite], then for an
 * adversarial step [adversarial, feature matching, discriminator loss, its grad norm, its finite].
 */
export type StepParts = tf.Tensor[];

/** Names of an adversarial step's extra parts (after the first six), as metrics. */
export const ADVERSARIAL_METRICS = [
  'loss/adversarial',
  'loss/feature_matching',
  'loss/discriminator',
  'discriminator_grad_norm',
] as const;

/** Whether step `step` (1-based) trains against the discriminators. */
function isAdversarial(run: Pick<VocoderStepRun, 'adversary'>, step: number): boolean {
  return run.adversary !== undefined && step > run.adversary.startStep;
}

/**
 * About how many bytes an adversarial step's resolution discriminators hold at its peak: 2 KB for every
 * time-frequency cell of every resolution and channel of a batch (measured on wasm: a judgement's
 * composed convolutions copy each layer's input a few times, and the gradient's tape keeps them).
 * The period discriminators work on the samples, two orders of magnitude less.
 */
export function adversarialStepBytes(config: XttsConfig): number {
  const { adversarial } = config.vocoder;
  if (!adversarial.enabled || adversarial.resolution_channels === 0) return 0;
  const samples = config.vocoder.segment_frames * config.audio.hop_length;
  const cells = lossResolutions(config.audio).reduce((n, r) => n + stftFrames(samples, r) * (r.nFft / 2 + 1), 0);
  return 2048 * cells * adversarial.resolution_channels * config.batching.batch_size;
}

/** The discriminators of an adversarial config (seeded apart from the generator), else undefined. */
export function makeDiscriminators(config: XttsConfig): Discriminators | undefined {
  const { adversarial } = config.vocoder;
  if (!adversarial.enabled) return undefined;
  const { periods, period_channels, resolution_channels } = adversarial;
  const resolutions = resolution_channels > 0 ? lossResolutions(config.audio) : [];
  return new Discriminators(
    { periods, period_channels, resolution_channels },
    resolutions,
    mixSeed(config.training.seed, 2),
  );
}

/**
 * Forward, losses and backward of one micro-batch into the optimizers' sums: the generator's, and in an
 * adversarial step then the discriminators'. Returns [loss, mel, sc, logMag] and, adversarial,
 * [adversarial, feature matching, discriminator loss].
 */
function microBatch(run: VocoderStepRun, mel: tf.Tensor3D, wave: tf.Tensor2D, adversarial: boolean) {
  const { generator, optimizer, config } = run;
  const { adversarial_weight, feature_matching_weight } = config.vocoder.adversarial;
  const disc = adversarial ? run.adversary! : undefined;
  let kept: tf.Tensor[] = [];
  let generated: tf.Tensor2D | undefined;
  // The recording's verdict is a constant to the generator: judged outside its gradient's tape, which
  // would keep every layer's activations for a backward pass that never reaches them.
  const real = disc && (tf.tidy(() => disc.discriminators.judge(wave) as never) as Judgement[]);
  const { value, grads } = tf.variableGrads(() => {
    const out = generator.forward(mel);
    const parts = vocoderLosses(out, wave, config.audio, config.vocoder);
    let loss = parts.loss;
    // The parts outlive the gradient's tidy: they are read back at log intervals. The loss is cloned:
    // unscaled it is also `value`, which the optimizer takes and frees.
    kept = [tf.clone(parts.loss), parts.mel, parts.spectralConvergence, parts.logMagnitude];
    if (disc) {
      generated = tf.keep(out);
      const fake = disc.discriminators.judge(out);
      const adv = adversarialLoss(fake);
      const fm = featureMatchingLoss(real!, fake);
      kept.push(adv, fm);
      loss = tf.add(
        loss,
        tf.add(tf.mul(adv, scalar(adversarial_weight)), tf.mul(fm, scalar(feature_matching_weight))),
      ) as tf.Scalar;
    }
    kept = kept.map((x) => tf.keep(x));
    const scale = optimizer.lossScale;
    return scale ? (tf.mul(loss, scale) as tf.Scalar) : loss;
  }, optimizer.variables);
  // The optimizer's loss sum is only tested for being finite: the scaled one will do.
  optimizer.accumulate(optimizer.flatten(grads), value);
  tf.dispose(Object.values(grads));
  if (real) tf.dispose(real.flatMap((j) => [j.score, ...j.features]));
  if (!disc || !generated) return kept;
  // The discriminators learn from the same generated wave, a constant to them.
  const fake = generated;
  const d = tf.variableGrads(() => {
    const loss = discriminatorLoss(disc.discriminators.judge(wave), disc.discriminators.judge(fake));
    kept.push(tf.keep(tf.clone(loss)));
    const scale = disc.optimizer.lossScale;
    return scale ? (tf.mul(loss, scale) as tf.Scalar) : loss;
  }, disc.optimizer.variables);
  disc.optimizer.accumulate(disc.optimizer.flatten(d.grads), d.value);
  tf.dispose([...Object.values(d.grads), fake]);
  return kept;
}

/** The optimizers' updates after a step's micro-batches: the step's parts in StepParts order. */
function applyUpdates(run: VocoderStepRun, kept: tf.Tensor[], adversarial: boolean, scalars?: tf.Tensor1D[]) {
  const g = run.optimizer.apply(scalars?.[0]);
  const out = [...kept.slice(0, 4), g.gradNorm, g.finite, ...kept.slice(4)];
  if (!adversarial) return out;
  const d = run.adversary!.optimizer.apply(scalars?.[1]);
  return [...out, d.gradNorm, d.finite];
}

/**
 * One optimizer step: grad_accumulation_steps micro-batches of random segments, each forward, losses and
 * backward; then the updates. Returns its StepParts (of the last micro-batch).
 */
export function trainOneStep(run: VocoderStepRun, timer: SpanTimer): StepParts {
  const { config, capture } = run;
  const batch = config.batching.batch_size;
  const frames = config.vocoder.segment_frames;
  const micro = Math.max(1, config.training.grad_accumulation_steps);
  const adversarial = isAdversarial(run, run.step + 1);
  let kept: tf.Tensor[] = [];
  for (let m = 0; m < micro; m++) {
    tf.dispose(kept);
    const segments = run.sampler.next(batch);
    timer.mark('dataWaitMs');
    const mel = tf.tensor3d(segments.mel, [batch, frames, config.audio.n_mels]);
    const wave = tf.tensor2d(segments.wave, [batch, frames * config.audio.hop_length]);
    timer.mark('uploadMs');
    if (micro === 1 && capture.off === null) {
      const out = capturedStep(run, mel, wave, adversarial);
      tf.dispose([mel, wave]);
      timer.mark('forwardBackwardMs');
      return out;
    }
    kept = onDeviceOnly(tf, () => microBatch(run, mel, wave, adversarial));
    tf.dispose([mel, wave]);
    timer.mark('forwardBackwardMs');
  }
  const out = onDeviceOnly(tf, () => applyUpdates(run, kept, adversarial));
  timer.mark('optimizerMs');
  capture.eager++;
  return out;
}

/** The vocoder's step capture: one shape (the segments'), so one state; why it is off, and its counts. */
export interface VocoderCapture {
  off: string | null;
  state: CaptureState;
  /** Whether `state` is of the adversarial step (a run that turns adversarial records afresh). */
  adversarial: boolean;
  replayed: number;
  eager: number;
  /** The last step's replayed programs (0 when it ran eagerly). */
  lastPrograms: number;
}

export function newCapture(config: XttsConfig, backend: string): VocoderCapture {
  const accumulating = config.training.grad_accumulation_steps > 1;
  const off = accumulating
    ? 'gradient accumulation (the vocoder captures single-micro-batch steps only)'
    : captureUnavailable(config.device.step_capture, backend);
  return { off, state: freshState(), adversarial: false, replayed: 0, eager: 0, lastPrograms: 0 };
}

const freshState = (): CaptureState => ({ phase: 'plan', recaptures: 0 });

/** One whole step eagerly (the first), recorded (the next two) or replayed (from then on). */
function capturedStep(run: VocoderStepRun, mel: tf.Tensor3D, wave: tf.Tensor2D, adversarial: boolean): StepParts {
  const { optimizer, capture } = run;
  if (capture.adversarial !== adversarial) {
    // The run turned adversarial: another step, recorded afresh; the old one's buffers go.
    capture.state.capture?.dispose();
    capture.state = freshState();
    capture.adversarial = adversarial;
  }
  const s = capture.state;
  capture.lastPrograms = 0;
  const scalars = [tf.tensor1d(optimizer.updateScalars().values)];
  if (adversarial) scalars.push(tf.tensor1d(run.adversary!.optimizer.updateScalars().values));
  const inputs = [mel, wave, ...scalars];
  const step = () =>
    onDeviceOnly(tf, () => applyUpdates(run, microBatch(run, mel, wave, adversarial), adversarial, scalars));
  try {
    if (s.phase === 'replay' && dropStaleCapture(s)) run.say(`vocoder step capture: ${s.reason}`);
    if (s.phase === 'replay') {
      const out = s.capture!.replay(inputs);
      optimizer.countReplayedUpdate();
      if (adversarial) run.adversary!.optimizer.countReplayedUpdate();
      capture.replayed++;
      capture.lastPrograms = s.capture!.programs;
      return out;
    }
    capture.eager++;
    if (s.phase === 'plan' || s.phase === 'refused') {
      if (s.phase === 'plan') s.phase = 'record';
      return step();
    }
    let out: tf.Tensor[] = [];
    const { recording } = recordStep(tf, inputs, () => {
      out = step();
      return out;
    });
    // advanceCapture moves the phase on (the compiler's narrowing above does not see it).
    if (advanceCapture(tf, s, recording))
      run.say(
        (s.phase as CaptureState['phase']) === 'replay'
          ? `vocoder step capture: replaying ${s.capture!.programs} programs a step` +
              (adversarial ? ' (adversarial)' : '')
          : `vocoder step capture refused: ${s.reason}`,
      );
    return out;
  } finally {
    tf.dispose(scalars);
  }
}

/** Prefix of the discriminators' optimizer state in a checkpoint's optimizer file (their weights keep theirs). */
const DISC_OPTIMIZER = 'disc_optimizer.';

/** What a checkpoint's optimizer file holds of the discriminators: their weights and their optimizer's state. */
export function adversaryState(adversary: Adversary): Map<string, tf.Tensor> {
  const out = new Map<string, tf.Tensor>();
  for (const [k, v] of adversary.discriminators.params) out.set(k, tf.clone(v));
  for (const [k, v] of adversary.optimizer.getState()) out.set(`${DISC_OPTIMIZER}${k}`, v);
  return out;
}

/** The generator's optimizer state and the discriminators' arrays of a checkpoint's optimizer file, apart. */
export function splitOptimizerArrays(arrays: readonly NamedArray[]): {
  generator: NamedArray[];
  adversary: NamedArray[];
} {
  const adversary = arrays.filter((a) => a.name.startsWith('disc.') || a.name.startsWith(DISC_OPTIMIZER));
  return { generator: arrays.filter((a) => !adversary.includes(a)), adversary };
}

/** The discriminators' weights and optimizer state back from adversaryState's tensors. */
export function restoreAdversary(adversary: Adversary, tensors: ReadonlyMap<string, tf.Tensor>): void {
  const weights = new Map([...tensors].filter(([k]) => k.startsWith('disc.')));
  adversary.discriminators.store.assignWeights(weights);
  const state = new Map(
    [...tensors].filter(([k]) => k.startsWith(DISC_OPTIMIZER)).map(([k, v]) => [k.slice(DISC_OPTIMIZER.length), v]),
  );
  adversary.optimizer.setState(state);
}
