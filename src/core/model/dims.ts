// The model's dimensions: the sizes that come from the data, and the checks a config's shape must pass before a
// model is built.
import type { ModelConfig } from '../config/index.js';
import { XttsError } from '../errors.js';

/** Sizes that come from the data rather than the model config. */
export interface ModelSizes {
  vocabSize: number;
  nMels: number;
  numLanguages: number;
}

/** Throws MODEL_CONFIG_INVALID for dimensions that do not fit together. */
export function checkDims(config: ModelConfig, sizes: ModelSizes): void {
  const bad = (field: string, message: string, suggestion: string) => {
    throw new XttsError('MODEL_CONFIG_INVALID', `model.${field}: ${message}`, { suggestions: [suggestion] });
  };
  if (config.d_model % config.heads !== 0)
    bad(
      'heads',
      `${config.heads} heads do not divide d_model ${config.d_model}`,
      'Choose heads that divide d_model (e.g. d_model / 64).',
    );
  if (config.alignment_heads > config.heads)
    bad(
      'alignment_heads',
      `${config.alignment_heads} alignment heads are more than the ${config.heads} heads`,
      'Use at most `heads` alignment heads (1 is enough).',
    );
  if (config.postnet_kernel % 2 !== 1)
    bad(
      'postnet_kernel',
      `${config.postnet_kernel} is even; 'same' padding needs an odd width`,
      'Use an odd kernel width such as 5.',
    );
  for (const [k, v] of Object.entries(sizes))
    if (!Number.isInteger(v) || v < 1)
      bad(k, `must be a positive integer, got ${v}`, 'Pass sizes taken from the prepared dataset.');
}
