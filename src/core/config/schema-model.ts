// The schema of the model's dimensions (the presets tiny/small/normal/big set these).
import { Type } from '@sinclair/typebox';
import { Section } from './schema-parts.js';

export const ModelSchema = Section(
  {
    d_model: Type.Integer({
      minimum: 16,
      maximum: 4096,
      default: 256,
      description: 'Width of every transformer layer.',
    }),
    heads: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'Attention heads (must divide d_model).' }),
    alignment_heads: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 1,
      description:
        'Decoder cross-attention heads (per layer, at most `heads`) that read only the ' +
        'text symbol each decoder step says: in training the one monotonic alignment ' +
        'search gives it, in synthesis the one the predicted durations give it. The ' +
        'other heads read the voice latents and the whole text.',
    }),
    ff_mult: Type.Integer({
      minimum: 1,
      maximum: 8,
      default: 4,
      description: 'Feed-forward width as a multiple of d_model.',
    }),
    text_layers: Type.Integer({ minimum: 1, maximum: 48, default: 4, description: 'Text encoder layers.' }),
    cond_layers: Type.Integer({
      minimum: 1,
      maximum: 24,
      default: 2,
      description: 'Conditioning (reference speaker) encoder layers.',
    }),
    cond_latents: Type.Integer({
      minimum: 1,
      maximum: 64,
      default: 8,
      description: 'Conditioning latents the reference clip is pooled into.',
    }),
    speaker_offset: Type.Boolean({
      default: false,
      description:
        "Add the voice's own log-mel offset (a projection of its mean conditioning latent) to every token's " +
        'mean frame, so that the average spectral envelope of a voice, most of what tells voices apart, comes ' +
        "from the reference directly rather than only through the decoder's attention to the latents. " +
        'A new model (one more parameter matrix); false: the means are the same for every voice.',
    }),
    speaker_rate: Type.Boolean({
      default: false,
      description:
        'Let the duration predictor read the voice (a projection of its mean conditioning latent added to the ' +
        'text encodings it reads), so that each voice speaks at its own pace, as a cloned voice should; the ' +
        'duration loss teaches the conditioning encoder what a pace sounds like. A new model (one more ' +
        'd_model × d_model matrix); false: every voice speaks at the pace of the training data as a whole.',
    }),
    speaker_pitch: Type.Boolean({
      default: false,
      description:
        "Tell the model the reference's pitch: the median F0 of the voiced frames of the clips it is read from " +
        "(measured on their log-mel), as a vector added to every conditioning latent, so that a new voice's pitch " +
        'is spoken between those of the trained voices instead of at the nearest one. A new model (a 10 × d_model ' +
        'matrix); needs 12 mel bands centred within 50-1000 Hz (80 bands to 8 kHz have 25).',
    }),
    pitch_contour: Type.Boolean({
      default: false,
      description:
        "Give the decoder every text symbol's pitch (FastPitch's pitch embedding): in training the symbol's mean " +
        "F0 over its aligned frames (read on the target's log-mel as speaker_pitch reads a reference's), at " +
        "synthesis the reference's median F0 plus a pitch predictor's rise or fall for that symbol (trained on " +
        "the targets' own, in log F0 from the utterance's mean), so that a voice is spoken at the pitch its clip " +
        'was measured at, not the trained voice its clip resembles. A new model (a pitch predictor the size of ' +
        'the duration predictor and a 10 × d_model matrix); the pitch loss is logged as loss/pitch; the ' +
        'mel-band condition of speaker_pitch applies.',
    }),
    reference_rate: Type.Boolean({
      default: false,
      description:
        "Tell the duration predictor the voice's speaking rate, measured without its text on the log-mel of its " +
        'clips (spectral-change peaks a second of speech): in training the speaker’s, pooled over up to 16 of ' +
        "its clips, at synthesis the reference's, and every token's predicted steps are scaled by it, so that a " +
        'new voice is spoken at the pace its clip was measured at, not at the pace of the trained voice its clip ' +
        'resembles. No new parameters; the duration predictor learns the durations of a typical rate. Measured ' +
        'on bench/voices: an unseen voice kept its pace (0.99 of it, where it ' +
        "was spoken 20% slow), but one 6 s clip's rate is up to 17% off its voice's, and seen voices, which keep " +
        'their pace without it, came out at 0.79-1.04 of theirs (with a move that amplified the error by half, ' +
        'since fixed).',
    }),
    decoder_layers: Type.Integer({
      minimum: 1,
      maximum: 48,
      default: 4,
      description: 'Autoregressive mel decoder layers.',
    }),
    prenet_dim: Type.Integer({ minimum: 8, maximum: 2048, default: 256, description: 'Decoder prenet width.' }),
    postnet_layers: Type.Integer({
      minimum: 0,
      maximum: 12,
      default: 3,
      description: 'Convolutional postnet layers (0 disables it).',
    }),
    postnet_channels: Type.Integer({ minimum: 8, maximum: 2048, default: 256, description: 'Postnet channels.' }),
    postnet_kernel: Type.Integer({ minimum: 1, maximum: 31, default: 5, description: 'Postnet kernel width (odd).' }),
    reduction_factor: Type.Integer({
      minimum: 1,
      maximum: 8,
      default: 2,
      description: 'Mel frames predicted per decoder step.',
    }),
    dropout: Type.Number({
      minimum: 0,
      maximum: 0.9,
      default: 0.1,
      description: 'Dropout in attention and feed-forward blocks.',
    }),
    prenet_dropout: Type.Number({
      minimum: 0,
      maximum: 1,
      default: 1,
      description:
        "Dropout on the decoder's view of its previous frames (the prenet), in training " +
        'and synthesis alike. 1 (the default) shows it none: each step is decoded from ' +
        'the text and the steps before it — measured on 1,200 espeak-ng clips, a decoder ' +
        "that sees its previous frames (Tacotron 2's 0.5, or 0.9) learns to copy them " +
        "and to cancel the text's part, and free-running synthesis then loses the text. " +
        'Below 1 the decoder is autoregressive over its frames.',
    }),
    max_text_tokens: Type.Integer({
      minimum: 8,
      maximum: 4096,
      default: 256,
      description: 'Longest token sequence the positional table covers.',
    }),
    max_mel_frames: Type.Integer({
      minimum: 16,
      maximum: 16384,
      default: 1024,
      description: 'Longest mel sequence the positional table covers.',
    }),
  },
  'Model dimensions. Presets tiny/small/normal/big set these.',
);
