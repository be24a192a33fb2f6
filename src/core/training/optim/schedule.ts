// Learning-rate schedules: pure functions of the optimizer step, computed on the host (a number
// per step, uploaded with the step's other scalars), so a resumed run follows the same curve.
import type { TrainingConfig } from '../../config/index.js';

export type ScheduleConfig = Pick<TrainingConfig, 'learning_rate' | 'max_steps' | 'schedule'>;

/**
 * Learning rate of update number `step` (1 for the first update).
 * - constant: `learning_rate`, after a linear warm-up when warmup_steps > 0.
 * - warmup_cosine: linear warm-up to `learning_rate` over warmup_steps, then half a cosine down to
 *   `min_learning_rate` at max_steps (Loshchilov & Hutter 2017, SGDR without restarts); the floor after.
 * - noam: Vaswani et al. 2017, d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), scaled so that its
 *   peak (at step = warmup) is `learning_rate`. The scaling cancels d_model, leaving
 *   learning_rate · min(step / warmup, √(warmup / step)).
 */
export function learningRateAt(step: number, c: ScheduleConfig): number {
  const peak = c.learning_rate;
  const warmup = c.schedule.warmup_steps;
  const s = Math.max(1, step);
  switch (c.schedule.name) {
    case 'constant':
      return warmup > 0 && s < warmup ? (peak * s) / warmup : peak;
    case 'warmup_cosine': {
      if (warmup > 0 && s <= warmup) return (peak * s) / warmup;
      const floor = Math.min(c.schedule.min_learning_rate, peak);
      const span = c.max_steps - warmup;
      const progress = span <= 0 ? 1 : Math.min(1, (s - warmup) / span);
      return floor + 0.5 * (peak - floor) * (1 + Math.cos(Math.PI * progress));
    }
    case 'noam': {
      const w = Math.max(1, warmup);
      return peak * Math.min(s / w, Math.sqrt(w / s));
    }
  }
}
