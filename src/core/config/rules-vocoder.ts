// The vocoder's own rule: the settings its inverse STFT and its losses need (src/core/vocoder).
import { at, fired, type Rule } from './rule-context.js';

export const vocoderShapeRule: Rule = {
  id: 'vocoder/shape',
  title: 'The vocoder can invert the features and measure its segments',
  severity: 'error',
  tasks: ['vocoder'],
  rationale:
    "The vocoder's inverse STFT overlap-adds whole hops, so n_fft must be a multiple of hop_length; its " +
    'multi-resolution STFT loss looks at windows up to 2·n_fft, so a training segment must hold at least ' +
    '4·n_fft samples, or the largest resolution has too few frames to say anything. Vocoder runs train on ' +
    'one device for now: device.gpus and device.data_device would not be honoured, so they are refused. ' +
    'An adversarial run needs at least one discriminator. Its convolutions pad both sides alike, which needs an ' +
    'odd kernel.',
  check(ctx) {
    const { audio: a, vocoder: v, device } = ctx.config;
    const samples = v.segment_frames * a.hop_length;
    const needed = 4 * a.n_fft;
    const gan = v.adversarial;
    return fired([
      gan.enabled &&
        gan.periods.length === 0 &&
        gan.resolution_channels === 0 &&
        at(
          ctx,
          'vocoder.adversarial.periods',
          'error',
          'adversarial training with no discriminator: periods is [] and resolution_channels is 0',
          'periods: [2, 3, 5, 7, 11]',
        ),
      a.n_fft % a.hop_length !== 0 &&
        at(
          ctx,
          'audio.hop_length',
          'error',
          `n_fft ${a.n_fft} is not a multiple of hop_length ${a.hop_length}`,
          `hop_length: ${a.n_fft / 4}`,
        ),
      samples < needed &&
        at(
          ctx,
          'vocoder.segment_frames',
          'error',
          `segment_frames ${v.segment_frames} × hop ${a.hop_length} = ${samples} samples, ` +
            `fewer than 4 × n_fft = ${needed}`,
          `segment_frames: ${Math.ceil(needed / a.hop_length)}`,
        ),
      v.kernel % 2 === 0 &&
        at(
          ctx,
          'vocoder.kernel',
          'error',
          `kernel ${v.kernel} must be odd to keep frames aligned (an even width shifts them by half a frame)`,
          `kernel: ${v.kernel + 1}`,
        ),
      device.gpus !== null &&
        at(
          ctx,
          'device.gpus',
          'error',
          'a vocoder run trains on one device: data-parallel replicas are not built for it yet',
          'gpus: null',
        ),
      device.data_device !== null &&
        at(
          ctx,
          'device.data_device',
          'error',
          'a vocoder run validates on its training device: a data device is not built for it yet',
          'data_device: null',
        ),
    ]);
  },
};
