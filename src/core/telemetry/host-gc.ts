// The trainer's own thread stopped by garbage collection. A replayed step is issued by this thread;
// while V8 collects, nothing is issued and the GPU runs dry once the steps in flight are done. Seen on
// H100 hosts: a full collection every ~33 tiny steps (V8 collects whenever the array buffers outside
// its heap have grown by ~64 MB, and a tiny step's alignment readback makes 2 MB of them), 5–30 ms
// each; where they come rarer, each takes longer (Dawn's objects of every step since the last one are
// released together): 80 ms, and stops of 200–300 ms, on small. Node's PerformanceObserver reports
// each collection on this thread (worker threads' collections do not stop it), so a run can say how
// much of its wall went there.
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';

/** A gc entry's kind (major, minor, incremental, weak callbacks): in its detail since Node 16. */
const kindOf = (e: PerformanceEntry) => (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;

export interface HostGcSummary {
  /** Full (mark-compact) collections: how many, their pauses in all, the longest. */
  full: { count: number; ms: number; longestMs: number };
  /** Young-generation collections (scavenges) and incremental marking steps. */
  minor: { count: number; ms: number };
  /** Wall time observed, and the share of it the thread spent collecting. */
  spanMs: number;
  share: number;
}

/** Collects the collections of this thread from start() to stop(). */
export class HostGcRecorder {
  private observer: PerformanceObserver | null = null;
  private started = 0;
  private stopped = 0;
  private readonly full = { count: 0, ms: 0, longestMs: 0 };
  private readonly minor = { count: 0, ms: 0 };

  start(): this {
    this.started = performance.now();
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.add(kindOf(e), e.duration);
    });
    this.observer.observe({ entryTypes: ['gc'] });
    return this;
  }

  private add(kind: number, ms: number): void {
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      this.full.count++;
      this.full.ms += ms;
      this.full.longestMs = Math.max(this.full.longestMs, ms);
    } else {
      this.minor.count++;
      this.minor.ms += ms;
    }
  }

  /**
   * Stops observing and returns the summary. Entries are delivered after the collection, on a later
   * turn of the event loop: await one turn before stop() to count the last ones (the caller's choice).
   */
  stop(): HostGcSummary {
    for (const e of this.observer?.takeRecords() ?? []) this.add(kindOf(e), e.duration);
    this.observer?.disconnect();
    this.observer = null;
    if (!this.stopped) this.stopped = performance.now();
    return this.summary();
  }

  summary(): HostGcSummary {
    const spanMs = (this.stopped || performance.now()) - this.started;
    return {
      full: { ...this.full },
      minor: { ...this.minor },
      spanMs,
      share: spanMs > 0 ? (this.full.ms + this.minor.ms) / spanMs : 0,
    };
  }
}
