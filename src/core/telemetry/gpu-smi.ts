// GPU readings from one long-lived `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N`
// process, parsed line by line: the fallback when the NVML addon is missing. Starting nvidia-smi costs
// 50-500 ms, so a process per sample would be both slow and a load on the machine.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { GpuReadings } from './gpu-sample.js';
import { decodeThrottleReasons } from './gpu-throttle.js';

/** What a row of the query holds, in order, and the nvidia-smi field names that provide it: when a
 * driver rejects a name ("is not a valid field to query") the next one is tried, then the column is
 * dropped (its value is null). */
export const NVIDIA_SMI_COLUMNS = [
  { key: 'timestamp', fields: ['timestamp'] },
  { key: 'index', fields: ['index'] },
  { key: 'utilizationPct', fields: ['utilization.gpu'] },
  { key: 'memoryUsedMiB', fields: ['memory.used'] },
  { key: 'memoryTotalMiB', fields: ['memory.total'] },
  { key: 'smClockMhz', fields: ['clocks.sm'] },
  // power.draw became an alias of power.draw.average in driver R530+; keep whichever the driver knows.
  { key: 'powerW', fields: ['power.draw', 'power.draw.average', 'power.draw.instant'] },
  { key: 'temperatureC', fields: ['temperature.gpu'] },
  // Renamed clocks_event_reasons in driver R535; the old name is still accepted there.
  { key: 'throttleMask', fields: ['clocks_throttle_reasons.active', 'clocks_event_reasons.active'] },
] as const;

export type NvidiaSmiColumnKey = (typeof NVIDIA_SMI_COLUMNS)[number]['key'];

/** A chosen field name per column; the order of the query. */
export interface NvidiaSmiQuery {
  columns: { key: NvidiaSmiColumnKey; field: string }[];
}

export function defaultNvidiaSmiQuery(): NvidiaSmiQuery {
  return { columns: NVIDIA_SMI_COLUMNS.map((c) => ({ key: c.key, field: c.fields[0] })) };
}

const DEFAULT_QUERY = defaultNvidiaSmiQuery();

export interface NvidiaSmiRow extends GpuReadings {
  /** nvidia-smi's own timestamp of the reading (local time, ms resolution) as epoch ms. */
  timestampMs: number | null;
  index: number;
  /** null when the mask was not reported. */
  throttleReasons: string[] | null;
  /** Columns whose value nvidia-smi did not give, with its words ("[N/A]", "[Not Supported]", ...). */
  missing: Partial<Record<NvidiaSmiColumnKey, string>>;
}

const MIB = 1024 * 1024;

// Epoch ms of the last "YYYY/MM/DD HH:MM" seen: local-time conversion is the costly part of a
// parse, and a UTC offset cannot change within a minute (zones move by whole or half hours).
let minuteKey = '';
let minuteEpochMs = 0;

/** nvidia-smi's "2024/01/15 10:22:33.123" (local time) as epoch ms. */
export function parseNvidiaSmiTimestamp(s: string): number | null {
  const t = s.trim();
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$/.exec(t);
  if (!m) return null;
  const key = t.slice(0, 16);
  if (key !== minuteKey) {
    minuteEpochMs = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5])).getTime();
    minuteKey = key;
  }
  return minuteEpochMs + Number(m[6]) * 1000 + (m[7] ? Number(m[7].padEnd(3, '0')) : 0);
}

/** One line of `--format=csv,noheader,nounits` output for `query`; undefined for a line that is not
 * a data row (blank, a header, a message). Cells nvidia-smi cannot fill read "[N/A]",
 * "[Not Supported]", "[Unknown Error]", ... and become null. */
export function parseNvidiaSmiLine(line: string, query: NvidiaSmiQuery = DEFAULT_QUERY): NvidiaSmiRow | undefined {
  const cells = line.split(',');
  const columns = query.columns;
  if (cells.length !== columns.length) return undefined;
  const row: NvidiaSmiRow = {
    timestampMs: null,
    index: -1,
    utilizationPct: null,
    memoryUsedBytes: null,
    memoryTotalBytes: null,
    smClockMhz: null,
    powerW: null,
    temperatureC: null,
    throttleReasons: null,
    missing: {},
  };
  for (let i = 0; i < cells.length; i++) {
    const key = columns[i].key;
    const v = cells[i].trim();
    if (key === 'index') {
      if (!/^\d+$/.test(v)) return undefined;
      row.index = Number(v);
      continue;
    }
    if (v === '' || v === 'N/A' || (v.charCodeAt(0) === 91 /* [ */ && v.charCodeAt(v.length - 1) === 93) /* ] */) {
      row.missing[key] = v || '(empty)';
      continue;
    }
    if (key === 'timestamp') {
      row.timestampMs = parseNvidiaSmiTimestamp(v);
    } else if (key === 'throttleMask') {
      try {
        row.throttleReasons = decodeThrottleReasons(v);
      } catch {
        row.missing.throttleMask = v;
      }
    } else {
      const n = Number(v);
      if (!Number.isFinite(n)) row.missing[key] = v;
      else if (key === 'memoryUsedMiB') row.memoryUsedBytes = n * MIB;
      else if (key === 'memoryTotalMiB') row.memoryTotalBytes = n * MIB;
      else row[key] = n;
    }
  }
  return row.index < 0 ? undefined : row;
}

/** The field nvidia-smi rejected, from its message 'Field "x.y" is not a valid field to query.' */
export function rejectedNvidiaSmiField(output: string): string | undefined {
  return /Field "([^"]+)" is not a valid field to query/.exec(output)?.[1];
}

/** The query without a field nvidia-smi rejected: the column's next alternative, or no column. */
export function withoutField(query: NvidiaSmiQuery, field: string): NvidiaSmiQuery | undefined {
  const i = query.columns.findIndex((c) => c.field === field);
  if (i < 0) return undefined;
  const col = query.columns[i];
  if (col.key === 'index') return undefined;
  const alternatives = NVIDIA_SMI_COLUMNS.find((c) => c.key === col.key)!.fields as readonly string[];
  const next = alternatives[alternatives.indexOf(field) + 1];
  const columns = [...query.columns];
  if (next) columns[i] = { key: col.key, field: next };
  else columns.splice(i, 1);
  return { columns };
}

export interface NvidiaSmiStreamOptions {
  intervalMs: number;
  /** nvidia-smi indices to query (all when absent). */
  devices?: readonly number[];
  /** The executable (default: nvidia-smi on PATH). */
  command?: string;
  /** How long to wait for the first row before giving up (nvidia-smi can take seconds to start on a
   * host without persistence mode). */
  startTimeoutMs?: number;
  /** Each row, with performance.now() when its line arrived. */
  onRow: (row: NvidiaSmiRow, arrivalMs: number) => void;
  /** The process ended while streaming (not after stop()). */
  onExit?: (reason: string) => void;
}

export type NvidiaSmiStart = { ok: true; stream: NvidiaSmiStream } | { ok: false; reason: string };

/** A running `nvidia-smi -lms` process. It does not keep the Node process alive; stop() ends it. */
export class NvidiaSmiStream {
  readonly query: NvidiaSmiQuery;
  readonly command: string;
  readonly args: readonly string[];
  /** Rows parsed and lines that were not rows. */
  rows = 0;
  skippedLines = 0;
  private child: ChildProcess;
  private stopped = false;
  private readonly killOnExit = () => this.child.kill('SIGTERM');

  private constructor(child: ChildProcess, command: string, args: string[], query: NvidiaSmiQuery) {
    this.child = child;
    this.command = command;
    this.args = args;
    this.query = query;
    process.on('exit', this.killOnExit);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Starts nvidia-smi and resolves once it printed its first row, or with the reason it could not. */
  static async start(options: NvidiaSmiStreamOptions): Promise<NvidiaSmiStart> {
    let query = defaultNvidiaSmiQuery();
    // Each rejected field costs one restart; there are fewer alternatives than this in all.
    for (let attempt = 0; attempt < 8; attempt++) {
      const r = await NvidiaSmiStream.tryStart(options, query);
      if (r.ok) return r;
      if ('retryWithout' in r) {
        const next = withoutField(query, r.retryWithout);
        if (!next) return { ok: false, reason: `nvidia-smi rejected the field ${r.retryWithout}` };
        query = next;
        continue;
      }
      return r;
    }
    return { ok: false, reason: 'nvidia-smi rejected too many fields' };
  }

  private static tryStart(
    options: NvidiaSmiStreamOptions,
    query: NvidiaSmiQuery,
  ): Promise<NvidiaSmiStart | { ok: false; retryWithout: string }> {
    const command = options.command ?? 'nvidia-smi';
    const intervalMs = Math.max(1, Math.round(options.intervalMs));
    const args = [
      `--query-gpu=${query.columns.map((c) => c.field).join(',')}`,
      '--format=csv,noheader,nounits',
      `--loop-ms=${intervalMs}`,
    ];
    if (options.devices?.length) args.push(`--id=${options.devices.join(',')}`);
    return new Promise((resolve) => {
      let settled = false;
      // What nvidia-smi said other than readings: all of it until the first row, then the latest line.
      let output = '';
      let lastMessage = '';
      let child: ChildProcess;
      try {
        child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        resolve({ ok: false, reason: `nvidia-smi could not be started: ${(e as Error).message}` });
        return;
      }
      const stream = new NvidiaSmiStream(child, command, args, query);
      const settle = (r: NvidiaSmiStart | { ok: false; retryWithout: string }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // A failed start leaves no process behind by the time it answers.
        if (!r.ok) void stream.stop().then(() => resolve(r));
        else resolve(r);
      };
      const timeoutMs = options.startTimeoutMs ?? 15_000;
      const timer = setTimeout(
        () => settle({ ok: false, reason: `nvidia-smi printed no reading within ${timeoutMs} ms` }),
        timeoutMs,
      );
      child.on('error', (e: NodeJS.ErrnoException) => {
        settle({
          ok: false,
          reason:
            e.code === 'ENOENT'
              ? `no NVIDIA driver (${command} not found)`
              : `nvidia-smi could not be started: ${e.message}`,
        });
      });
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (d: string) => {
        if (!settled && output.length < 4096) output += d;
        lastMessage = d.trim().split('\n').pop() || lastMessage;
      });
      const lines = createInterface({ input: child.stdout!, crlfDelay: Infinity });
      lines.on('line', (line) => {
        if (stream.stopped) return;
        const arrivalMs = performance.now();
        const row = parseNvidiaSmiLine(line, query);
        if (!row) {
          stream.skippedLines++;
          if (!settled && output.length < 4096) output += `${line}\n`;
          if (line.trim()) lastMessage = line.trim();
          return;
        }
        stream.rows++;
        if (!settled) {
          // Keep the child from holding the event loop open once it is known to work.
          child.unref();
          (child.stdout as unknown as { unref?: () => void }).unref?.();
          (child.stderr as unknown as { unref?: () => void }).unref?.();
          settle({ ok: true, stream });
        }
        options.onRow(row, arrivalMs);
      });
      // 'close', not 'exit': it comes once stdout and stderr have ended, so every line the process
      // printed ("No devices were found") has been read before the exit is judged ('exit' can come
      // first, which once made the reason a bare exit code).
      child.on('close', (code, signal) => {
        // Let readline deliver what is buffered before judging the exit.
        setImmediate(() => {
          const first =
            output
              .trim()
              .split('\n')
              .find((l) => l.trim()) ?? '';
          const why = code !== null ? `exit code ${code}` : `signal ${signal}`;
          if (!settled) {
            const rejected = rejectedNvidiaSmiField(output);
            if (rejected) settle({ ok: false, retryWithout: rejected });
            else if (/No devices were found/i.test(output)) settle({ ok: false, reason: 'nvidia-smi lists no GPU' });
            else settle({ ok: false, reason: `nvidia-smi failed (${why})${first ? `: ${first.trim()}` : ''}` });
          } else if (!stream.stopped) {
            process.off('exit', stream.killOnExit);
            options.onExit?.(`nvidia-smi exited while streaming (${why})${lastMessage ? `: ${lastMessage}` : ''}`);
          }
        });
      });
    });
  }

  /** Ends the process and waits for it to exit. */
  stop(): Promise<void> {
    this.stopped = true;
    process.off('exit', this.killOnExit);
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return Promise.resolve();
    // The child was unref'd so as not to keep Node alive; waiting for its exit must.
    child.ref();
    return new Promise((resolve) => {
      const force = setTimeout(() => child.kill('SIGKILL'), 2000);
      child.once('exit', () => {
        clearTimeout(force);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}
