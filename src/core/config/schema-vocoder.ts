// The schema of the neural vocoder (src/core/vocoder): its size, what it trains on and its losses, and
// which vocoder an acoustic run's eval audio and `xtts synthesize` use.
import { Type } from '@sinclair/typebox';
import { Enum, Section } from './schema-parts.js';

export const TASKS = ['acoustic', 'vocoder'] as const;

export const TaskSchema = Enum(TASKS, {
  default: 'acoustic',
  description:
    'What `xtts train` trains: `acoustic` (text to log-mel, the `model` section) or `vocoder` (log-mel to ' +
    'waveform, the `vocoder` section; presets `vocoder-tiny`, `vocoder-small`).',
});

export const VocoderSchema = Section(
  {
    channels: Type.Integer({
      minimum: 16,
      maximum: 2048,
      default: 256,
      description: 'Width of the ConvNeXt backbone (Vocos-style generator, one frame per hop).',
    }),
    layers: Type.Integer({ minimum: 1, maximum: 32, default: 8, description: 'ConvNeXt blocks.' }),
    kernel: Type.Integer({
      minimum: 3,
      maximum: 31,
      default: 7,
      description: "Depthwise convolution width in frames (odd: 'same' padding).",
    }),
    ff_mult: Type.Integer({
      minimum: 1,
      maximum: 8,
      default: 3,
      description: 'Pointwise feed-forward width of a block as a multiple of `channels`.',
    }),
    segment_frames: Type.Integer({
      minimum: 8,
      maximum: 512,
      default: 32,
      description:
        'Training segment in mel frames (× hop_length samples): every batch is batch_size random ' +
        'segments of this length, one static shape.',
    }),
    mel_loss_weight: Type.Number({
      minimum: 0,
      maximum: 1000,
      default: 1,
      description: "Weight of the L1 distance between the output's log-mel and the input's.",
    }),
    stft_loss_weight: Type.Number({
      minimum: 0,
      maximum: 1000,
      default: 1,
      description:
        'Weight of the multi-resolution STFT loss (spectral convergence + log-magnitude L1 at FFT sizes ' +
        'n_fft/2, n_fft and 2·n_fft; Yamamoto et al. 2020).',
    }),
    init_from: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      default: null,
      description:
        'A vocoder run folder (or one of its checkpoints) whose generator weights a new `task: vocoder` run ' +
        'starts from (its optimizer and step start afresh): the vocoder trained on recordings, before it is ' +
        'fine-tuned with `finetune_acoustic`. Same channels, layers, kernel, ff_mult and mel settings. ' +
        'Relative to the working directory.',
    }),
    finetune_acoustic: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      default: null,
      description:
        "An acoustic run folder (or one of its checkpoints): the vocoder trains on that model's teacher-" +
        "forced predictions of the dataset's clips (each clip's text aligned to its own recording, read " +
        "with the recording as the voice) in place of the recordings' mels, paired with the recorded " +
        "samples, as HiFi-GAN's fine-tuning does; so that it learns to turn what the acoustic model " +
        'says into sound. A clip whose text the model cannot read keeps its own mel. null: the ' +
        "recordings' mels. Relative to the working directory.",
    }),
    checkpoint: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      default: null,
      description:
        'A vocoder run folder (or one of its checkpoints) that an acoustic run uses for its eval audio and ' +
        '`xtts synthesize` by default; null: Griffin-Lim. Relative to the working directory.',
    }),
  },
  'The neural vocoder: trained with `task: vocoder`, used by acoustic runs through `vocoder.checkpoint`.',
);
