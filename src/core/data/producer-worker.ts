// Entry of a producer worker thread: runs one producer over the shared ring, reports its totals,
// and on failure marks the ring failed so that the trainer sees the message instead of hanging.
import { parentPort, workerData } from 'node:worker_threads';
import { runProducer, type ProducerJob } from './producer.js';
import { failRing } from './ring.js';

export function producerWorkerMain(job: ProducerJob): void {
  try {
    const result = runProducer(job);
    parentPort?.postMessage({ type: 'done', result });
  } catch (e) {
    failRing(job.ring, `data producer ${job.producerIndex} failed: ${(e as Error).message}`);
    parentPort?.postMessage({ type: 'error', message: (e as Error).message });
  }
}

if (parentPort && (workerData as { xttsRole?: string } | undefined)?.xttsRole === 'producer') {
  producerWorkerMain((workerData as { job: ProducerJob }).job);
}
