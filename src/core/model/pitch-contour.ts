// model.pitch_contour: every text symbol's pitch in the decoder's memory (FastPitch, Łańcucki 2021, embeds each
// symbol's mean F0 the same way). speaker_pitch tells the conditioning latents a reference's pitch, but the latents
// also carry the trained voice the clip resembles, and nothing in training makes the decoder follow the number
// rather than the voice (bench/voices: a 97 Hz voice spoken at its 112 Hz neighbour's pitch in one seed of two).
// Here each symbol the decoder reads carries its own pitch: in training what the target says there (the mean log F0
// of the symbol's voiced frames, read on the target's log-mel by data/audio/pitch.ts), which the decoder can only
// gain by following; at synthesis the reference's median log F0 plus the rise or fall a pitch predictor gives the
// symbol (trained on each target's own, from the utterance's mean). A voice's pitch is then a number the reference
// is measured at, not a voice the encoder recognises.
import * as tf from '@tensorflow/tfjs-core';
import { XttsError } from '../errors.js';
import type { BlockContext } from './attention.js';
import type { ModelInputs } from './batch.js';
import { DurationPredictor } from './encoders.js';
import { type ConvImpl, Linear, scalar } from './nn.js';
import type { ParamStore } from './params.js';
import { PITCH_FEATURES, VoicePitch } from './voice-pitch.js';

/** An utterance with fewer voiced frames has no pitch (as a reference clip, data/audio/pitch.ts). */
const MIN_VOICED_FRAMES = 5;
const NO_PITCH = 'model.pitch_contour reads each target frame’s pitch; the batch has none';

/** What training reads of a target's pitch, per token [B, T_text]. */
export interface PitchTargets {
  /** Each token's log F0 as the decoder reads it: the utterance's mean plus `rise`; 0 where the utterance has none. */
  logF0: tf.Tensor2D;
  /** The token's mean log F0 over its voiced frames less the utterance's mean; 0 for a token with none voiced. */
  rise: tf.Tensor2D;
  /** 1 on the tokens the pitch loss reads: spoken tokens of utterances with a pitch. */
  weight: tf.Tensor2D;
}

export class PitchContour {
  readonly predictor: DurationPredictor;
  readonly embed: Linear;
  constructor(store: ParamStore, dModel: number) {
    this.predictor = new DurationPredictor(store, dModel, 'pitch');
    this.embed = new Linear(store, 'pitch.embed', PITCH_FEATURES, dModel);
  }

  /** The targets of a training batch (reduction factor r); refused without its frames' pitch. */
  static targetsOf(inputs: ModelInputs, r: number): PitchTargets {
    if (!inputs.melPitch)
      throw new XttsError('BATCH_NO_PITCH', NO_PITCH, {
        suggestions: ['Make the batch with its frames’ log F0 (melPitch), as the training loader does.'],
      });
    return PitchContour.targets(inputs.alignment.steps, inputs.alignment.durations, inputs.melPitch, r);
  }

  /**
   * The targets of a training batch: alignment [B, S] token per decoder step, durations [B, T_text] steps per token,
   * melPitch [B, S·r] each frame's log F0 (0: unvoiced; padded frames are 0).
   */
  static targets(alignment: tf.Tensor2D, durations: tf.Tensor2D, melPitch: tf.Tensor2D, r: number): PitchTargets {
    const [batch, steps] = alignment.shape;
    const textSteps = durations.shape[1];
    const frames = tf.reshape(melPitch, [batch, steps, r]);
    const voiced = tf.cast(tf.greater(frames, scalar(0)), 'float32');
    // Sums over each token's steps: [B, 1, S] × [B, S, T_text].
    const aligned = tf.cast(tf.oneHot(alignment, textSteps), 'float32') as tf.Tensor3D;
    const perToken = (perStep: tf.Tensor) =>
      tf.reshape(tf.matMul(tf.reshape(tf.sum(perStep, 2), [batch, 1, steps]), aligned), [batch, textSteps]);
    const tokenSum = perToken(frames);
    const tokenVoiced = perToken(voiced);
    const voicedFrames = tf.sum(voiced, [1, 2]);
    const mean = tf.reshape(tf.div(tf.sum(frames, [1, 2]), tf.maximum(voicedFrames, scalar(1))), [batch, 1]);
    const known = tf.reshape(tf.cast(tf.greaterEqual(voicedFrames, scalar(MIN_VOICED_FRAMES)), 'float32'), [batch, 1]);
    const hasVoiced = tf.cast(tf.greater(tokenVoiced, scalar(0)), 'float32');
    const rise = tf.mul(tf.mul(tf.sub(tf.div(tokenSum, tf.maximum(tokenVoiced, scalar(1))), mean), hasVoiced), known);
    return {
      logF0: tf.mul(tf.add(mean, rise), known) as tf.Tensor2D,
      rise: rise as tf.Tensor2D,
      weight: tf.mul(tf.cast(tf.greater(durations, scalar(0)), 'float32'), known) as tf.Tensor2D,
    };
  }

  /** The predicted rise of every token [B, T_text] from the text encodings [B, T_text, D]. */
  predict(
    text: tf.Tensor3D,
    textLengths: tf.Tensor1D,
    c: Omit<BlockContext, 'batch' | 'steps'>,
    convImpl: ConvImpl,
  ): tf.Tensor2D {
    return this.predictor.apply(text, textLengths, c, convImpl);
  }

  /**
   * The text encodings [B, T_text, D] as the decoder's memory reads them: each token's pitch added, as training gives
   * it (`tokenPitch` [B, T_text]) or, at synthesis, the voice's median log F0 plus the predicted rise.
   */
  memory(
    text: tf.Tensor3D,
    tokenPitch: tf.Tensor2D | undefined,
    inputs: { textLengths: tf.Tensor1D; refPitch?: tf.Tensor1D },
    c: Omit<BlockContext, 'batch' | 'steps'>,
    convImpl: ConvImpl,
  ): tf.Tensor3D {
    const voice = inputs.refPitch ?? tf.zeros([text.shape[0]]);
    return this.apply(
      text,
      tokenPitch ?? PitchContour.spoken(voice, this.predict(text, inputs.textLengths, c, convImpl)),
    );
  }

  /** Synthesis: each token's log F0 [B, T_text], the voice's median log F0 [B] (0: unknown) plus its rise. */
  static spoken(voiceLogF0: tf.Tensor1D, rise: tf.Tensor2D): tf.Tensor2D {
    const [batch] = voiceLogF0.shape;
    const centre = tf.reshape(voiceLogF0, [batch, 1]);
    const known = tf.cast(tf.greater(centre, scalar(0)), 'float32');
    return tf.mul(tf.add(centre, rise), known) as tf.Tensor2D;
  }

  /** Text encodings [B, T_text, D] with each token's pitch [B, T_text] (log F0, 0: unknown) added as a vector. */
  apply(text: tf.Tensor3D, logF0: tf.Tensor2D): tf.Tensor3D {
    const [batch, textSteps, dModel] = text.shape;
    const features = VoicePitch.features(tf.reshape(logF0, [batch * textSteps]) as tf.Tensor1D);
    return tf.add(text, tf.reshape(this.embed.apply(features), [batch, textSteps, dModel])) as tf.Tensor3D;
  }
}

/**
 * The pitch predictor's loss: the mean squared error of the predicted rise (log F0 over the utterance's mean) over
 * the tokens `weight` marks; `denominator` (a data-parallel shard's: the whole batch's spoken tokens) or their count.
 */
export function pitchLoss(predicted: tf.Tensor2D, targets: PitchTargets, denominator?: tf.Scalar): tf.Scalar {
  const err = tf.sum(tf.mul(tf.squaredDifference(predicted, targets.rise), targets.weight));
  return tf.div(err, denominator ?? tf.maximum(tf.sum(targets.weight), scalar(1))) as tf.Scalar;
}
