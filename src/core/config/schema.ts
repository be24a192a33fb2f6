// The one source of truth for a training config: this JSON Schema validates YAML (ajv), gives the
// TypeScript types (TypeBox's Static), and generates docs/config-reference.md. Each section's schema
// is in a file of its own (schema-*.ts); this file puts them together. Every field is read by some
// part of xtts; a field nobody reads does not belong here.
import { Type, type Static } from '@sinclair/typebox';
import { AudioSchema, DatasetSchema, LimitsSchema, TextSchema } from './schema-data.js';
import { BACKENDS, DeviceSchema } from './schema-device.js';
import { ModelSchema } from './schema-model.js';
import { Section } from './schema-parts.js';
import { BatchingSchema, PipelineSchema } from './schema-pipeline.js';
import { TrainingSchema } from './schema-training.js';
import { TaskSchema, VocoderSchema } from './schema-vocoder.js';

export { AudioSchema, CLEANERS, DatasetSchema, LimitsSchema, TextSchema } from './schema-data.js';
export { BACKENDS, DeviceSchema } from './schema-device.js';
export { ModelSchema } from './schema-model.js';
export { BatchingSchema, PipelineSchema } from './schema-pipeline.js';
export { PRECISIONS, TrainingSchema } from './schema-training.js';
export { TASKS, TaskSchema, VocoderSchema } from './schema-vocoder.js';

export const OutputSchema = Section(
  {
    dir: Type.String({
      minLength: 1,
      default: 'runs/xtts',
      description: 'Run folder (checkpoints, metrics, eval WAVs); relative to the working directory.',
    }),
  },
  'Where a run writes.',
);

export const ConfigSchema = Type.Object(
  {
    extends: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'A preset name (`tiny`, `small`, `normal`, `big`, `quickstart`, `dual-gpu`) or a ' +
          'path to another config, relative to this file. Its values are the defaults of ' +
          'this one.',
      }),
    ),
    task: TaskSchema,
    dataset: DatasetSchema,
    audio: AudioSchema,
    text: TextSchema,
    limits: LimitsSchema,
    batching: BatchingSchema,
    pipeline: PipelineSchema,
    model: ModelSchema,
    vocoder: VocoderSchema,
    training: TrainingSchema,
    device: DeviceSchema,
    output: OutputSchema,
  },
  { additionalProperties: false, required: ['dataset'], description: 'An xtts training config.' },
);

export type XttsConfig = Static<typeof ConfigSchema>;
export type AudioConfig = Static<typeof AudioSchema>;
export type TextConfig = Static<typeof TextSchema>;
export type DatasetConfig = Static<typeof DatasetSchema>;
export type LimitsConfig = Static<typeof LimitsSchema>;
export type BatchingConfig = Static<typeof BatchingSchema>;
export type PipelineConfig = Static<typeof PipelineSchema>;
export type ModelConfig = Static<typeof ModelSchema>;
export type VocoderConfig = Static<typeof VocoderSchema>;
export type TrainingConfig = Static<typeof TrainingSchema>;
export type DeviceConfig = Static<typeof DeviceSchema>;
export type Backend = (typeof BACKENDS)[number];
