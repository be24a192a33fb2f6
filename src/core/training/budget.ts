// device.model_memory_budget_mb, checked after every step on every device that trains (rank 0 and
// each data-parallel replica): what the engine still holds once the step has freed its tensors.
import { formatBytes } from '../config/estimate.js';
import { ExitCode, XttsError } from '../errors.js';

/** MODEL_BUDGET_EXCEEDED (exit 3) when `heldBytes` is over the budget; `who` names the device's holder in the message. */
export function checkModelBudget(budgetMb: number | null, step: number, heldBytes: number, batchSize: number, who?: string): void {
  if (budgetMb === null || heldBytes <= budgetMb * 2 ** 20) return;
  throw new XttsError('MODEL_BUDGET_EXCEEDED', `after step ${step} the model, its optimizer state and the step's buffers hold ${formatBytes(heldBytes)}${who ? ` on ${who}` : ''}: more than device.model_memory_budget_mb ${budgetMb} (${formatBytes(budgetMb * 2 ** 20)})`, {
    exitCode: ExitCode.environment,
    suggestions: [`raise device.model_memory_budget_mb to at least ${Math.ceil((heldBytes * 1.2) / 2 ** 20)}`, `or lower batching.batch_size (now ${batchSize}) or the model's size`],
  });
}
