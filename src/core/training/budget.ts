// Memory a run may use: the estimate against what the backend holds, before the model is built; and
// device.model_memory_budget_mb, checked after every step on every device that trains (rank 0 and
// each data-parallel replica): what the engine still holds once the step has freed its tensors. And
// the disk its checkpoints will take, against what the run folder's disk has free.
import { lstatSync, readdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import {
  batchSizeWithin,
  describeEstimate,
  estimateTrainingMemory,
  formatBytes,
  trainingMemoryLimit,
} from '../config/index.js';
import type { XttsConfig } from '../config/index.js';
import { findGpu, hostInventory } from '../env/index.js';
import { ExitCode, XttsError } from '../errors.js';

/**
 * MODEL_BUDGET_EXCEEDED (exit 3) when `heldBytes` is over the budget; `who` names the device's holder in the message.
 */
export function checkModelBudget(
  budgetMb: number | null,
  step: number,
  heldBytes: number,
  batchSize: number,
  who?: string,
): void {
  if (budgetMb === null || heldBytes <= budgetMb * 2 ** 20) return;
  throw new XttsError(
    'MODEL_BUDGET_EXCEEDED',
    `after step ${step} the model, its optimizer state and the step's buffers ` +
      `hold ${formatBytes(heldBytes)}${who ? ` on ${who}` : ''}: more than ` +
      `device.model_memory_budget_mb ${budgetMb} (${formatBytes(budgetMb * 2 ** 20)})`,
    {
      exitCode: ExitCode.environment,
      suggestions: [
        `raise device.model_memory_budget_mb to at least ${Math.ceil((heldBytes * 1.2) / 2 ** 20)}`,
        `or lower batching.batch_size (now ${batchSize}) or the model's size`,
      ],
    },
  );
}

/**
 * Before the model is allocated: parameters, optimizer state and activations at the largest bucket
 * against what the backend can hold (the budget, the GPU, wasm's heap, the host). Over it, the run
 * is refused naming the keys to change, instead of aborting at some allocation minutes later.
 */
export function checkMemoryEstimate(config: XttsConfig, backend: string, say: (m: string) => void): void {
  const host = hostInventory();
  const gpu = config.device.model_device !== null ? findGpu(host.gpus, config.device.model_device) : host.gpus[0];
  const limit = trainingMemoryLimit(config, backend, { memoryBytes: host.memoryBytes, gpu });
  const est = estimateTrainingMemory(config);
  if (!limit) {
    say(
      `memory: ${describeEstimate(config, est)}; the ${backend} device's memory is not ` +
        `known here (no nvidia-smi): not checked`,
    );
    return;
  }
  if (est.totalBytes <= limit.bytes) return;
  const modelTooLarge = est.parameterBytes >= limit.bytes * 0.85;
  throw new XttsError(
    'MEMORY_ESTIMATE_EXCEEDS',
    `training this config on ${backend} needs ${describeEstimate(config, est)}: more than ${limit.what}`,
    {
      exitCode: ExitCode.usage,
      suggestions: modelTooLarge
        ? [
            'make the model smaller: model.d_model, model.ff_mult, model.text_layers, model.decoder_layers',
            'or train on a device with more memory (--backend, device.model_device)',
          ]
        : [
            `lower batching.batch_size (now ${config.batching.batch_size}), e.g. --set ` +
              `batching.batch_size=${batchSizeWithin(config, est, limit.bytes, 0.85)}`,
            `or limits.max_audio_s (now ${config.limits.max_audio_s}) or batching.frame_budget`,
            'or train on a device with more memory (--backend, device.model_device)',
          ],
    },
  );
}

/** Bytes in the files under `dir` (0 where it does not exist). */
function bytesUnder(dir: string): number {
  let total = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const st = lstatSync(join(dir, name), { throwIfNoEntry: false }); // a link is not followed: counted once
    if (st?.isDirectory()) total += bytesUnder(join(dir, name));
    else if (st?.isFile()) total += st.size;
  }
  return total;
}

/**
 * Before training: the checkpoints this model will write (weights and AdamW's two moments, 12 bytes a parameter;
 * keep_checkpoints of them, the best, and the one being written) against the free space of the run folder's disk,
 * counting the checkpoints already there (a resumed run rotates them away). Short of it, a warning that says what
 * to change: a checkpoint that does not fit ends the run at the last one written. `freeBytes`: the disk's free bytes
 * (statfs of the run folder when not given). Returns the warning, or null.
 */
export function checkCheckpointDisk(
  runDir: string,
  parameters: number,
  keep: number,
  say: (m: string) => void,
  freeBytes?: number,
): string | null {
  const each = parameters * 12;
  const need = (keep + 2) * each - bytesUnder(join(runDir, 'checkpoints'));
  let free = freeBytes;
  if (free === undefined) {
    try {
      const fs = statfsSync(runDir);
      free = fs.bavail * fs.bsize;
    } catch {
      return null; // a filesystem that does not say: nothing to check against
    }
  }
  if (need <= free) return null;
  const warning =
    `each checkpoint of this model takes ${formatBytes(each)} (the weights and AdamW's moments of ` +
    `${parameters.toLocaleString('en-US')} parameters); training.keep_checkpoints ${keep}, the best and the one ` +
    `being written need ${formatBytes(need)} more than ${runDir} holds now, and its disk has ${formatBytes(free)} ` +
    `free: a checkpoint that does not fit ends the run at the last one written. Free space, lower ` +
    `training.keep_checkpoints, or train into a folder on a larger disk (--output)`;
  say(`warning: ${warning}`);
  return warning;
}
