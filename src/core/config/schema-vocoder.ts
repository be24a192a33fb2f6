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
    adversarial: Type.Object(
      {
        enabled: Type.Boolean({
          default: false,
          description:
            "Train against discriminators (a GAN): HiFi-GAN's multi-period and UnivNet's multi-resolution " +
            'discriminators, LSGAN losses and feature matching on top of the mel and STFT losses, the pair ' +
            'Vocos trains with. Sharper harmonics and less buzz than the reconstruction losses alone; a step ' +
            'costs more. false: the reconstruction losses only.',
        }),
        start_step: Type.Integer({
          minimum: 0,
          default: 0,
          description:
            'Steps 1 … start_step train the generator on the reconstruction losses alone, so that the ' +
            'discriminators meet a generator that already speaks; they train and judge from the next step ' +
            '(0: from the first). Their optimizer counts its own steps: its warm-up starts there.',
        }),
        periods: Type.Array(Type.Integer({ minimum: 2, maximum: 64 }), {
          minItems: 0,
          maxItems: 8,
          uniqueItems: true,
          default: [2, 3, 5, 7, 11],
          description: "Periods of the multi-period discriminator (HiFi-GAN's: 2, 3, 5, 7, 11); [] for none.",
        }),
        period_channels: Type.Integer({
          minimum: 32,
          maximum: 1024,
          multipleOf: 32,
          default: 256,
          description:
            "Widest layer of each period discriminator; its layers are 1/32, 1/8, 1/2, 1 and 1 of it (HiFi-GAN's: " +
            '1024).',
        }),
        resolution_channels: Type.Integer({
          minimum: 0,
          maximum: 256,
          default: 0,
          description:
            'Width of each multi-resolution discriminator, one per resolution of the STFT loss (n_fft/2, n_fft, ' +
            '2·n_fft); 0: none, the default: they judge every time-frequency cell, so on an H200 a vocoder-small ' +
            'step at batch 64 costs 17× a plain one at width 8 and 33× at 16 (UnivNet: 32), against 6.5× for the ' +
            'period discriminators alone (bench/vocoder/README.md).',
        }),
        adversarial_weight: Type.Number({
          minimum: 0,
          maximum: 1000,
          default: 0.2,
          description:
            "Weight of the generator's LSGAN loss (mean over the discriminators) beside the mel loss's " +
            "`mel_loss_weight`: HiFi-GAN's 1 : 45 over its eight discriminators' sum.",
        }),
        feature_matching_weight: Type.Number({
          minimum: 0,
          maximum: 1000,
          default: 2,
          description:
            "Weight of the feature-matching loss: the L1 distance between the discriminators' activations " +
            "on the real and the generated wave (mean over layers and discriminators); HiFi-GAN's 2 : 45 " +
            "over about forty layers' sum.",
        }),
      },
      {
        additionalProperties: false,
        default: {},
        description: 'Adversarial training of a `task: vocoder` run (src/core/vocoder/discriminators.ts).',
      },
    ),
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
        '`xtts synthesize` by default; null: Griffin-Lim. Relative to the working directory (a run records it ' +
        'absolute). `train` checks it ' +
        "before its first step (a vocoder, of this config's mels); one gone since costs an eval its neural WAVs " +
        "(Griffin-Lim's instead, with a warning), not the run.",
    }),
  },
  'The neural vocoder: trained with `task: vocoder`, used by acoustic runs through `vocoder.checkpoint`.',
);
