// A step that runs out of device memory becomes DEVICE_OUT_OF_MEMORY with what to lower.
import type { XttsConfig } from '../../config/index.js';
import type { LoadedBatch } from '../../data/index.js';
import { ExitCode, XttsError } from '../../errors.js';

// Out-of-memory as each backend words it; the wasm backend aborts its module when its heap (at most
// 4 GiB) runs out, or, when an allocation's null pointer is written to first, traps with "memory
// access out of bounds" (seen with the small preset's batch of 32: a RuntimeError from a transpose).
const OOM = new RegExp(
  [
    'out of memory|OOM|failed to allocate|allocation failed',
    'exceeds the (maximum|max) buffer size|createBuffer',
    '^Aborted\\(|memory access out of bounds',
  ].join('|'),
  'i',
);

/** `e` as DEVICE_OUT_OF_MEMORY where a backend ran out of memory on `batch`; otherwise `e` itself. */
export function outOfMemory(e: unknown, config: XttsConfig, batch: LoadedBatch): unknown {
  if (!(e instanceof Error) || !OOM.test(e.message)) return e;
  const b = config.batching.batch_size;
  const budget = config.device.model_memory_budget_mb;
  return new XttsError(
    'DEVICE_OUT_OF_MEMORY',
    `the device ran out of memory on a batch of ${batch.shape.batchSize} ` +
      `× ${batch.shape.frames} frames (${e.message.split('\n')[0]})`,
    {
      exitCode: ExitCode.environment,
      suggestions: [
        `lower batching.batch_size (now ${b}), e.g. --set batching.batch_size=${Math.max(1, Math.floor(b / 2))}`,
        `or lower limits.max_audio_s (now ${config.limits.max_audio_s}) so the longest bucket is shorter`,
        budget
          ? `device.model_memory_budget_mb is ${budget}; check it with \`xtts validate-gpu-optimization\``
          : 'set device.model_memory_budget_mb and check it with `xtts validate-gpu-optimization`',
      ],
    },
  );
}
