// One compute pass timed on the device: timestamps at the pass's edges (benches of raw WebGPU work).
import { BufferUsage } from '../src/core/backend/gpu-types.js';

const { COPY_DST, COPY_SRC, MAP_READ, QUERY_RESOLVE } = BufferUsage;

/** The raw WebGPU objects of Dawn's node binding, untyped here (the benches call them as WebGPU specifies). */
export type Any = any;

/** The device time in ms of one compute pass that `encode` fills; throws where the device refuses the pass. */
export async function passMs(device: Any, encode: (pass: Any) => void): Promise<number> {
  const set = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolved = device.createBuffer({ size: 16, usage: QUERY_RESOLVE | COPY_SRC });
  const read = device.createBuffer({ size: 16, usage: MAP_READ | COPY_DST });
  device.pushErrorScope('validation');
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass({
    timestampWrites: { querySet: set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
  });
  encode(pass);
  pass.end();
  encoder.resolveQuerySet(set, 0, 2, resolved, 0);
  encoder.copyBufferToBuffer(resolved, 0, read, 0, 16);
  device.queue.submit([encoder.finish()]);
  const error = await device.popErrorScope();
  if (error) throw new Error(`the device refused the pass: ${error.message}`);
  await read.mapAsync(MAP_READ);
  const t = new BigUint64Array(read.getMappedRange().slice(0));
  read.unmap();
  for (const x of [set, resolved, read]) x.destroy();
  return Number(t[1] - t[0]) / 1e6;
}
