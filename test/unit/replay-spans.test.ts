// Where a replayed step's device time goes (backend/replay-spans.ts): the spans from a step's pass
// timestamps, their medians, and the ring of slots that brings them back a round at a time without a
// readback per step. The tests' real WebGPU device (Dawn on OpenGL ES) has no timestamp queries (the
// e2e capture test checks what a run then says), so the ring runs here on a device made of plain
// buffers that does what WebGPU specifies for the calls it uses: timestamps written where the pass
// descriptors say, resolved into a buffer, copied, mapped when the test lets the map resolve.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  describeSpans,
  ReplaySpans,
  stepSpan,
  summarizeSpans,
  type StepSpan,
} from '../../src/core/backend/replay-spans.js';
import type { GpuDevice } from '../../src/core/backend/gpu-types.js';

const span = (begin: number, end: number, inside: number): StepSpan => ({
  beginNs: BigInt(begin),
  endNs: BigInt(end),
  insideNs: inside,
  passes: 1,
});

describe("a step's spans from its pass timestamps", () => {
  test('span, inside and passes from begin/end pairs', () => {
    assert.deepEqual(stepSpan([100n, 200n, 210n, 300n], 2), { beginNs: 100n, endNs: 300n, insideNs: 190, passes: 2 });
    assert.deepEqual(stepSpan([5n, 9n], 1), { beginNs: 5n, endNs: 9n, insideNs: 4, passes: 1 });
  });
  test('a pair out of order, overlapping passes or missing stamps make no span', () => {
    assert.equal(stepSpan([100n, 90n], 1), null);
    assert.equal(stepSpan([100n, 200n, 150n, 300n], 2), null);
    assert.equal(stepSpan([100n, 200n], 2), null);
    assert.equal(stepSpan([], 0), null);
  });
  test('medians; between only where one step followed the other; nulls are dropped, holes not yet back', () => {
    const s = summarizeSpans([
      span(0, 1_000_000, 900_000),
      span(1_200_000, 2_200_000, 800_000),
      null,
      span(3_000_000, 4_500_000, 1_000_000),
      undefined,
      span(5_000_000, 6_000_000, 700_000),
    ]);
    assert.deepEqual(s, { steps: 4, spanMs: 1, insideMs: 0.85, betweenMs: 0.2, dropped: 1 });
    assert.deepEqual(summarizeSpans([]), { steps: 0, spanMs: null, insideMs: null, betweenMs: null, dropped: 0 });
  });
});

/**
 * A device of plain buffers: timestamp writes land when the pass ends (the test says when); maps resolve when released.
 */
class FakeDevice {
  readonly features = new Set(['timestamp-query']);
  readonly limits = { maxStorageBuffersPerShaderStage: 8 };
  readonly sets: BigUint64Array[] = [];
  readonly maps: (() => void)[] = [];
  holdMaps = false;
  createQuerySet(d: { count: number }) {
    const values = new BigUint64Array(d.count);
    this.sets.push(values);
    return { values, destroy() {} };
  }
  createBuffer(d: { size: number; usage: number }) {
    const data = new ArrayBuffer(d.size);
    const device = this;
    return {
      size: d.size,
      data,
      destroy() {},
      mapAsync(): Promise<void> {
        return new Promise((resolve) => (device.holdMaps ? device.maps.push(resolve) : resolve()));
      },
      getMappedRange: () => data,
      unmap() {},
    };
  }
  createCommandEncoder() {
    return {
      resolveQuerySet(
        set: { values: BigUint64Array },
        first: number,
        count: number,
        dst: { data: ArrayBuffer },
        offset: number,
      ) {
        new BigUint64Array(dst.data, offset, count).set(set.values.subarray(first, first + count));
      },
      copyBufferToBuffer(
        src: { data: ArrayBuffer },
        so: number,
        dst: { data: ArrayBuffer },
        doff: number,
        size: number,
      ) {
        new Uint8Array(dst.data, doff, size).set(new Uint8Array(src.data, so, size));
      },
      beginComputePass() {
        throw new Error('not used');
      },
      finish: () => ({}),
    };
  }
  readonly queue = { writeBuffer() {}, submit() {} };
  releaseMaps(): void {
    for (const m of this.maps.splice(0)) m();
  }
}

/** Step i of `passes` passes: begins at i ms, each pass 200 µs, 10 µs between passes. */
function runSteps(spans: ReplaySpans, device: FakeDevice, from: number, to: number, passes = 4): void {
  for (let i = from; i < to; i++) {
    const encoder = device.createCommandEncoder();
    for (let p = 0; p < passes; p++) {
      const d = spans.pass(p) as
        | { timestampWrites: { beginningOfPassWriteIndex: number; endOfPassWriteIndex: number } }
        | undefined;
      if (!d) continue;
      const t = i * 1_000_000 + p * 210_000;
      device.sets[0][d.timestampWrites.beginningOfPassWriteIndex] = BigInt(t);
      device.sets[0][d.timestampWrites.endOfPassWriteIndex] = BigInt(t + 200_000);
    }
    spans.close(encoder as never, passes);
    spans.afterSubmit();
  }
}

describe('the ring of slots on a device', () => {
  test('every step comes back, the partial last round too, without a readback per step', async () => {
    const device = new FakeDevice();
    const spans = ReplaySpans.create(device as unknown as GpuDevice)!;
    runSteps(spans, device, 0, 150);
    const s = await spans.summary();
    // 4 passes: 3 · 210 µs + 200 = 830 µs span, 800 µs inside; the next step begins 1 ms after this one did.
    assert.deepEqual(s, { steps: 150, spanMs: 0.83, insideMs: 0.8, betweenMs: 0.17, dropped: 0 });
  });

  test('a round whose read buffers are both still mapping is dropped and counted, in its place', async () => {
    const device = new FakeDevice();
    device.holdMaps = true;
    const spans = ReplaySpans.create(device as unknown as GpuDevice)!;
    runSteps(spans, device, 0, 200);
    assert.equal(device.maps.length, 2, 'two rounds mapping at once');
    device.releaseMaps();
    device.holdMaps = false;
    const s = await spans.summary();
    // Rounds of 64: steps 0–127 read, 128–191 dropped, 192–199 read at the summary.
    assert.deepEqual([s.steps, s.dropped], [136, 64]);
    assert.equal(s.betweenMs, 0.17);
  });

  test('a step of more passes than its slot holds is not measured', async () => {
    const device = new FakeDevice();
    const spans = ReplaySpans.create(device as unknown as GpuDevice)!;
    assert.equal(spans.pass(16), undefined);
    runSteps(spans, device, 0, 3, 20);
    runSteps(spans, device, 3, 5, 2);
    const s = await spans.summary();
    assert.deepEqual([s.steps, s.dropped, s.insideMs], [2, 3, 0.4]);
  });

  test('a long run times its first 10,240 steps and no more: the record stays bounded', async () => {
    const device = new FakeDevice();
    const spans = ReplaySpans.create(device as unknown as GpuDevice)!;
    // A round at a time, the maps let resolve between them (as a run's event loop does between steps).
    for (let from = 0; from < 10_300; from += 64) {
      runSteps(spans, device, from, Math.min(from + 64, 10_300));
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(spans.pass(0), undefined, 'no timestamps written past the cap');
    const s = await spans.summary();
    assert.deepEqual([s.steps, s.dropped, s.insideMs], [10_240, 0, 0.8]);
  });

  test('a device without timestamp queries gets no timer', () => {
    const device = new FakeDevice();
    device.features.clear();
    assert.equal(ReplaySpans.create(device as unknown as GpuDevice), null);
    assert.equal(ReplaySpans.create({ ...device, features: undefined } as unknown as GpuDevice), null);
  });
});

describe('the line a run and its profile print', () => {
  const step = { available: true as const, steps: 397, spanMs: 6.25, insideMs: 6.16, betweenMs: 0.52, dropped: 0 };
  test('passes, waits between parts, the alignment forward and the rest of the cycle', () => {
    const line = describeSpans(
      step,
      { available: true, steps: 397, spanMs: 0.29, insideMs: 0.29, betweenMs: 6.5, dropped: 0 },
      6.73,
    );
    assert.equal(
      line,
      "device time of a replayed step (timestamps at its passes' edges, 397 steps): " +
        'its passes 6.16 ms (their kernels and the gaps between dependent dispatches), ' +
        "0.09 ms between its parts (the device waiting for the host's next part), the " +
        'alignment forward 0.29 ms, 0.23 ms else between steps (uploads, copies, ' +
        "command-buffer boundaries, waiting for the host); the device's cycle 6.77 ms " +
        'against a 6.73 ms median step',
    );
  });
  test('nothing measured: no line', () => {
    assert.equal(describeSpans({ available: false, reason: 'x' }, undefined, 5), null);
    assert.equal(describeSpans(undefined, undefined, 5), null);
    assert.equal(
      describeSpans({ ...step, steps: 0, spanMs: null, insideMs: null, betweenMs: null }, undefined, 5),
      null,
    );
  });
});
