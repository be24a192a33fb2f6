// What a vocoder checkpoint's state.json holds (checkpoint.ts writes and validates it against this
// schema): the run, its step, the segment sampler's state and the config it was trained with.
import { Type } from '@sinclair/typebox';
import type { XttsConfig } from '../config/index.js';

export interface VocoderCheckpointState {
  kind: 'vocoder';
  runId: string;
  step: number;
  /** The segment sampler's generator state: a resumed run draws the segments the run would have. */
  samplerRng: number;
  bestValidationLoss: number | null;
  config: XttsConfig;
}

const Finite = Type.Number({ minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE });
export const VocoderStateSchema = Type.Object({
  format: Type.String(),
  kind: Type.Literal('vocoder'),
  runId: Type.String({ pattern: '^[0-9a-f]{16}$' }),
  step: Type.Integer({ minimum: 0, maximum: 1e12 }),
  samplerRng: Type.Integer({ minimum: 0, maximum: 2 ** 32 }),
  bestValidationLoss: Type.Union([Finite, Type.Null()]),
  config: Type.Object({ vocoder: Type.Object({}), audio: Type.Object({}), training: Type.Object({}) }),
});
