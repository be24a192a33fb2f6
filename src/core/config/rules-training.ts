// Rules on the trainer: precision, optimizer settings, eval sentences and the intervals of a run.
import { precisionSupported } from '../backend/index.js';
import { at, fired, type Rule } from './rule-context.js';
import { THRESHOLDS } from './thresholds.js';

export const trainingPrecisionRule: Rule = {
  id: 'training/precision',
  title: 'The backend trains in the precision asked for',
  severity: 'error',
  rationale:
    'Mixed precision on a backend that trains in float32 only, or over data-parallel ' +
    'replicas (which train in float32), would silently not be mixed: `xtts train` ' +
    'refuses it through this rule, so the validator does too, with or without ' +
    '--no-environment.',
  check(ctx) {
    const p = ctx.config.training.precision;
    if (p === 'fp32') return [];
    const support = precisionSupported(ctx.config.device.backend, p, ctx.config.device.gpus);
    return support.ok
      ? []
      : [at(ctx, 'training.precision', 'error', `precision ${p}: ${support.reason}`, 'precision: fp32')];
  },
};

export const trainingOptimizerRule: Rule = {
  id: 'training/optimizer',
  title: 'The learning rates and weight decay make a trainable run',
  severity: 'error',
  rationale:
    'Decoupled weight decay multiplies the weights by 1 − lr·weight_decay each step: ' +
    'at 1 or more they are zeroed or flipped and the run blows up at its first ' +
    'steps; a floor above the peak makes the schedule climb when it should decay.',
  check(ctx) {
    const t = ctx.config.training;
    const shrink = t.learning_rate * t.optimizer.weight_decay;
    return fired([
      shrink >= 0.1 &&
        at(
          ctx,
          'training.optimizer.weight_decay',
          'error',
          `learning_rate ${t.learning_rate} × weight_decay ${t.optimizer.weight_decay} ` +
            `= ${shrink.toPrecision(3)}: each step scales the weights ` +
            `by ${(1 - shrink).toPrecision(3)}, which wipes them out within steps`,
          `weight_decay: ${Math.min(0.1, 0.01 / t.learning_rate).toPrecision(2)}`,
        ),
      t.schedule.name === 'warmup_cosine' &&
        t.schedule.min_learning_rate > t.learning_rate &&
        at(
          ctx,
          'training.schedule.min_learning_rate',
          'error',
          `min_learning_rate ${t.schedule.min_learning_rate} is above ` +
            `learning_rate ${t.learning_rate}: the cosine "decay" would climb`,
          `min_learning_rate: ${(t.learning_rate / 100).toPrecision(2)}`,
        ),
    ]);
  },
};

export const trainingEvalSentencesRule: Rule = {
  id: 'training/eval-sentences',
  tasks: ['acoustic'],
  title: 'Eval sentences are in languages the model learns',
  severity: 'error',
  rationale:
    'An eval sentence in a language the run has no language token for cannot be ' +
    'spoken: it would fail at the first eval, hours into the run.',
  check(ctx) {
    const c = ctx.config;
    const known = c.text.languages;
    return c.training.eval_sentences.flatMap((e, i) => {
      const language = e.language ?? c.dataset.language;
      return known.includes(language)
        ? []
        : [
            at(
              ctx,
              `training.eval_sentences.${i}${e.language ? '.language' : ''}`,
              'error',
              `eval sentence ${i + 1} is in ${language}, which text.languages (${known.join(', ')}) does not list`,
              `language: ${known[0]}   # or add ${language} to text.languages`,
            ),
          ];
    });
  },
};

export const trainingIntervalsRule: Rule = {
  id: 'training/intervals',
  title: 'Checkpoint, validation and eval intervals fit the run',
  severity: 'warn',
  rationale:
    'An interval longer than the run never fires (no validation curve, only the ' +
    'final checkpoint); a very short checkpoint interval spends the run writing ' +
    'files; warm-up longer than the run never reaches the peak learning rate.',
  check(ctx) {
    const t = ctx.config.training;
    return fired([
      ...(['validate_every', 'eval_every', 'checkpoint_every'] as const).map(
        (key) =>
          t[key] > t.max_steps &&
          at(
            ctx,
            `training.${key}`,
            'warn',
            `${key} ${t[key]} is longer than max_steps ${t.max_steps}: it never ` +
              `fires${key === 'checkpoint_every' ? ' (only the final checkpoint is written)' : ''}`,
            `${key}: ${Math.max(1, Math.floor(t.max_steps / 4))}`,
          ),
      ),
      t.checkpoint_every < THRESHOLDS.minCheckpointEvery &&
        t.max_steps > t.checkpoint_every * 4 &&
        at(
          ctx,
          'training.checkpoint_every',
          'warn',
          `a checkpoint every ${t.checkpoint_every} steps: writing weights and optimizer ` +
            `state that often stalls the device`,
          `checkpoint_every: ${Math.max(THRESHOLDS.minCheckpointEvery * 10, Math.floor(t.max_steps / 20))}`,
        ),
      t.schedule.name !== 'constant' &&
        t.schedule.warmup_steps >= t.max_steps &&
        at(
          ctx,
          'training.schedule.warmup_steps',
          'warn',
          `warmup_steps ${t.schedule.warmup_steps} ≥ max_steps ${t.max_steps}: the ` +
            `learning rate never reaches its peak`,
          `warmup_steps: ${Math.floor(t.max_steps / 10)}`,
        ),
      t.early_stopping_patience > 0 &&
        t.validate_every > t.max_steps &&
        at(
          ctx,
          'training.early_stopping_patience',
          'warn',
          'early stopping needs validations, and validate_every is longer than the run',
          `validate_every: ${Math.max(1, Math.floor(t.max_steps / 10))}`,
        ),
    ]);
  },
};

export const trainingLogSyncRule: Rule = {
  id: 'training/log-sync',
  title: 'The loss is not read back every step',
  severity: 'warn',
  rationale:
    'Reading a value from the device waits for all queued work: logging every step ' +
    'turns an asynchronous pipeline into a synchronous one and idles the GPU while ' +
    'the host catches up.',
  check(ctx) {
    const t = ctx.config.training;
    return t.log_every < THRESHOLDS.minLogEvery && t.max_steps > 100
      ? [
          at(
            ctx,
            'training.log_every',
            'warn',
            `log_every ${t.log_every}: the host waits for the device ` +
              `every ${t.log_every === 1 ? '' : `${t.log_every} `}step${t.log_every === 1 ? '' : 's'}`,
            'log_every: 25',
          ),
        ]
      : [];
  },
};
