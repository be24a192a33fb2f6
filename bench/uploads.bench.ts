// Host time of one host-to-device upload on the webgpu backend, tfjs's own path (a staging buffer
// created, mapped and destroyed per upload) against queue.writeBuffer (backend/webgpu-uploads.ts, what
// xtts installs), side by side in one process on one device, for a small, a batch-sized and a large
// tensor. Each upload is timed on the host from the call to its return; the device is drained between
// sizes so queued copies do not leak into the next figure.
//   node --import tsx bench/uploads.bench.ts [--dawn-backend vulkan|opengles] [--device NAME] [--count 40]
//   here: EGL_PLATFORM=surfaceless node --import tsx bench/uploads.bench.ts --dawn-backend opengles --device llvmpipe
import { disposeBackend, initBackend } from '../src/core/backend/index.js';
import { setQueueUploads } from '../src/core/backend/webgpu-uploads.js';
import { median, report } from './lib.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const count = Number(arg('count') ?? 40);
const { tf, choice } = await initBackend('webgpu', { dawnBackend: arg('dawn-backend'), device: arg('device') });
const backend = tf.backend() as unknown as { uploadToGPU(id: object): void };
const sizes = [4 << 10, 1 << 20, 8 << 20];
const figures: Record<string, number> = {};
console.log(
  `${choice.adapter?.name ?? choice.backend}: ${count} uploads per size and path, host µs per upload (median)`,
);
try {
  for (const bytes of sizes) {
    const values = Float32Array.from({ length: bytes / 4 }, (_, i) => i % 977);
    const row: string[] = [];
    for (const path of ['tfjs staging', 'queue.writeBuffer'] as const) {
      setQueueUploads(tf.backend(), path === 'queue.writeBuffer');
      const times: number[] = [];
      const made = [];
      for (let k = 0; k < count; k++) {
        const t = tf.tensor1d(values);
        const t0 = performance.now();
        backend.uploadToGPU(t.dataId);
        times.push((performance.now() - t0) * 1000);
        made.push(t);
      }
      // Drain: a program that reads the last one, read back.
      await tf.sum(made[made.length - 1]).data();
      tf.dispose(made);
      const us = median(times);
      figures[`${path === 'tfjs staging' ? 'staging' : 'writeBuffer'}Us_${bytes}`] = Math.round(us * 10) / 10;
      row.push(`${path} ${us.toFixed(1)} µs`);
    }
    const ratio = figures[`stagingUs_${bytes}`] / figures[`writeBufferUs_${bytes}`];
    console.log(
      `${(bytes / 1024).toFixed(0).padStart(6)} KiB: ${row.join(', ')}; writeBuffer ${ratio.toFixed(1)}× faster`,
    );
  }
  report('uploads', { device: choice.adapter?.name ?? choice.backend, count, ...figures });
} finally {
  disposeBackend(tf);
}
