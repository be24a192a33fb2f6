// Comparing two runs' checkpoints: the same tensors, bit for bit. weights.safetensors' header also carries the
// run's config, so runs that differ only in how they computed (replayed or eager steps, pipelined or not) have
// files that differ there; what must match is every tensor's name, shape, dtype and bytes, and the step.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeSafetensors } from '../../src/core/training/safetensors.js';

/** The folder of a run's latest checkpoint (checkpoints/latest names it). */
export function latestCheckpoint(run: string): string {
  return join(run, 'checkpoints', readFileSync(join(run, 'checkpoints', 'latest'), 'utf8').trim());
}

/** Why the two checkpoints' `file` (weights or optimizer .safetensors) hold different tensors, or null. */
export function tensorsDiffer(dirA: string, dirB: string, file: string): string | null {
  const read = (dir: string) => decodeSafetensors(readFileSync(join(dir, file)), join(dir, file));
  const [a, b] = [read(dirA), read(dirB)];
  if (a.metadata.step !== b.metadata.step) return `step ${a.metadata.step} and ${b.metadata.step}`;
  if (a.arrays.length !== b.arrays.length) return `${a.arrays.length} and ${b.arrays.length} tensors`;
  for (const [i, x] of a.arrays.entries()) {
    const y = b.arrays[i];
    if (x.name !== y.name || x.dtype !== y.dtype || x.shape.join() !== y.shape.join())
      return `tensor ${i}: ${x.name} ${x.dtype} [${x.shape}] and ${y.name} ${y.dtype} [${y.shape}]`;
    const bytes = (t: typeof x) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    if (!bytes(x).equals(bytes(y))) return `${x.name} differs`;
  }
  return null;
}
