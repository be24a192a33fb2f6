import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { HostGcRecorder } from '../../src/core/telemetry/host-gc.js';

/** The engine's full collection on demand (--expose-gc, set at run time for a new context). */
function fullCollection(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

test("the recorder counts this thread's full and young collections with their pauses, until stopped", async () => {
  const gc = new HostGcRecorder().start();
  fullCollection();
  fullCollection();
  // Young garbage: many small objects kept for a while in an array, then dropped.
  let young: { i: number }[] = [];
  let made = 0;
  for (let i = 0; i < 2_000_000; i++) {
    young.push({ i });
    made++;
    if (young.length === 1000) young = [];
  }
  assert.equal(made, 2_000_000);
  await new Promise((r) => setTimeout(r, 20));
  const s = gc.stop();
  assert.ok(s.full.count >= 2, JSON.stringify(s));
  assert.ok(s.full.ms > 0 && s.full.longestMs > 0 && s.full.longestMs <= s.full.ms, JSON.stringify(s));
  assert.ok(s.minor.count >= 1, JSON.stringify(s));
  assert.ok(s.spanMs >= 20 && s.share > 0 && s.share < 1, JSON.stringify(s));
  // Stopped: later collections are not counted.
  fullCollection();
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(gc.summary(), s);
});
