// The nvidia-smi fallback: parsing real `--format=csv,noheader,nounits` lines, and one long-lived
// `nvidia-smi -lms` process driven through a stand-in nvidia-smi script written by the test.
// Times are checked in a zone with daylight saving, so that a parse as UTC would be caught.
process.env.TZ = 'America/New_York';

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { GpuSampler } from '../../src/core/telemetry/gpu-sampler.js';
import { joinedRegExp } from '../helpers/regexp.js';
import {
  defaultNvidiaSmiQuery,
  NvidiaSmiStream,
  parseNvidiaSmiLine,
  parseNvidiaSmiTimestamp,
  rejectedNvidiaSmiField,
  withoutField,
} from '../../src/core/telemetry/gpu-smi.js';

const MIB = 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), 'xtts-smi-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Lines as nvidia-smi prints them for
// --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,clocks.sm,power.draw,temperature.gpu,
//   clocks_throttle_reasons.active
// --format=csv,noheader,nounits
const BUSY_H100 = '2024/05/14 09:31:07.412, 0, 97, 61234, 81559, 1980, 512.37, 63, 0x0000000000000000';
const IDLE_H100 = '2024/05/14 09:31:07.415, 1, 0, 1, 81559, 345, 69.88, 31, 0x0000000000000001';
const HOT_H100 = '2024/05/14 09:31:07.418, 2, 100, 79812, 81559, 1755, 699.12, 84, 0x0000000000000024';
// A MIG-enabled GPU reports no utilisation; a GeForce without a power sensor, none either.
const MIG_H100 = '2024/05/14 09:31:07.420, 3, [N/A], 10213, 81559, 1980, 301.50, 45, 0x0000000000000000';
const NO_POWER = '2024/05/14 09:31:07.423, 0, 12, 812, 6144, 1410, [Not Supported], 52, 0x0000000000000000';
const BROKEN =
  '2024/05/14 09:31:07.425, 1, [Unknown Error], [Unknown Error], [Unknown Error], ' +
  '[Unknown Error], [Unknown Error], [Unknown Error], [Unknown Error]';
// The same reading without `nounits`: never mistaken for numbers.
const WITH_UNITS = '2024/05/14 09:31:07.412, 0, 97 %, 61234 MiB, 81559 MiB, 1980 MHz, 512.37 W, 63, 0x0000000000000000';

describe('parseNvidiaSmiLine', () => {
  test('reads a busy and an idle GPU, in bytes, watts and reason names', () => {
    const busy = parseNvidiaSmiLine(BUSY_H100)!;
    assert.deepEqual(busy, {
      timestampMs: Date.UTC(2024, 4, 14, 13, 31, 7, 412),
      index: 0,
      utilizationPct: 97,
      memoryUsedBytes: 61234 * MIB,
      memoryTotalBytes: 81559 * MIB,
      smClockMhz: 1980,
      powerW: 512.37,
      temperatureC: 63,
      throttleReasons: [],
      missing: {},
    });
    const idle = parseNvidiaSmiLine(IDLE_H100)!;
    assert.equal(idle.index, 1);
    assert.equal(idle.utilizationPct, 0);
    assert.deepEqual(idle.throttleReasons, ['gpu_idle']);
    assert.deepEqual(parseNvidiaSmiLine(HOT_H100)!.throttleReasons, ['sw_power_cap', 'sw_thermal_slowdown']);
  });

  test('[N/A], [Not Supported] and [Unknown Error] become nulls, with the words kept', () => {
    const mig = parseNvidiaSmiLine(MIG_H100)!;
    assert.equal(mig.utilizationPct, null);
    assert.equal(mig.memoryUsedBytes, 10213 * MIB);
    assert.deepEqual(mig.missing, { utilizationPct: '[N/A]' });
    const geforce = parseNvidiaSmiLine(NO_POWER)!;
    assert.equal(geforce.powerW, null);
    assert.equal(geforce.memoryTotalBytes, 6144 * MIB);
    assert.deepEqual(geforce.missing, { powerW: '[Not Supported]' });
    const broken = parseNvidiaSmiLine(BROKEN)!;
    assert.deepEqual(
      [
        broken.utilizationPct,
        broken.memoryUsedBytes,
        broken.memoryTotalBytes,
        broken.smClockMhz,
        broken.powerW,
        broken.temperatureC,
        broken.throttleReasons,
      ],
      [null, null, null, null, null, null, null],
    );
    assert.equal(broken.missing.throttleMask, '[Unknown Error]');
  });

  test('units (a query without nounits) are not read as numbers', () => {
    const r = parseNvidiaSmiLine(WITH_UNITS)!;
    assert.equal(r.utilizationPct, null);
    assert.equal(r.memoryUsedBytes, null);
    assert.equal(r.powerW, null);
    assert.equal(r.missing.memoryUsedMiB, '61234 MiB');
    assert.equal(r.temperatureC, 63);
  });

  test('lines that are not readings are skipped', () => {
    for (const line of [
      '',
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " +
        'Make sure that the latest NVIDIA driver is installed and running.',
      'No devices were found',
      'timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], ' +
        'clocks.current.sm [MHz], power.draw [W], temperature.gpu, ' +
        'clocks_throttle_reasons.active',
      '2024/05/14 09:31:07.412, 0, 97, 61234',
    ]) {
      assert.equal(parseNvidiaSmiLine(line), undefined, line);
    }
  });

  test('a query that lost a column reads the columns it has', () => {
    const q = withoutField(
      withoutField(defaultNvidiaSmiQuery(), 'clocks_throttle_reasons.active')!,
      'clocks_event_reasons.active',
    )!;
    const r = parseNvidiaSmiLine('2024/05/14 09:31:07.412, 0, 97, 61234, 81559, 1980, 512.37, 63', q)!;
    assert.equal(r.temperatureC, 63);
    assert.equal(r.throttleReasons, null);
  });
});

describe('nvidia-smi helpers', () => {
  test('timestamps are local time with milliseconds', () => {
    assert.equal(parseNvidiaSmiTimestamp('2024/05/14 09:31:07.412'), Date.UTC(2024, 4, 14, 13, 31, 7, 412));
    assert.equal(parseNvidiaSmiTimestamp('2024/01/15 10:22:33.5'), Date.UTC(2024, 0, 15, 15, 22, 33, 500));
    assert.equal(parseNvidiaSmiTimestamp('2024/01/15 10:22:33'), Date.UTC(2024, 0, 15, 15, 22, 33, 0));
    assert.equal(parseNvidiaSmiTimestamp('Tue May 14 09:31:07 2024'), null);
    // New York skips 02:00-03:00 on 2024-03-10: 200 ms pass between these two readings.
    assert.equal(
      parseNvidiaSmiTimestamp('2024/03/10 03:00:00.100')! - parseNvidiaSmiTimestamp('2024/03/10 01:59:59.900')!,
      200,
    );
    assert.equal(parseNvidiaSmiTimestamp('2024/03/10 01:59:59.900'), Date.UTC(2024, 2, 10, 6, 59, 59, 900));
  });

  test('a rejected field is replaced by its next name, then dropped; the index never is', () => {
    assert.equal(
      rejectedNvidiaSmiField(
        'Field "clocks_throttle_reasons.active" is not a valid field to query.\n\nPlease ' +
          "see 'nvidia-smi -h' for help.",
      ),
      'clocks_throttle_reasons.active',
    );
    assert.equal(rejectedNvidiaSmiField('No devices were found'), undefined);
    const q0 = defaultNvidiaSmiQuery();
    const q1 = withoutField(q0, 'clocks_throttle_reasons.active')!;
    assert.equal(q1.columns.at(-1)!.field, 'clocks_event_reasons.active');
    const q2 = withoutField(q1, 'clocks_event_reasons.active')!;
    assert.equal(q2.columns.length, q0.columns.length - 1);
    assert.equal(withoutField(q0, 'index'), undefined);
    assert.equal(withoutField(q0, 'not.queried'), undefined);
  });
});

// A stand-in nvidia-smi: answers the inventory query, records each streaming start, and prints the
// readings of two GPUs every 50 ms until killed. FAKE_SMI_MODE picks a failure to imitate.
const FAKE = join(dir, 'nvidia-smi');
const LOG = join(dir, 'starts.log');
writeFileSync(
  FAKE,
  `#!/bin/sh
q=""
for a in "$@"; do case "$a" in --query-gpu=*) q="\${a#--query-gpu=}";; esac; done
case "$FAKE_SMI_MODE" in
  nodriver)
    echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." \\
      "Make sure that the latest NVIDIA driver is installed and running."
    exit 9;;
  nodevices) echo "No devices were found"; exit 6;;
  silent) echo "$$ $*" >> "${LOG}"; exec sleep 30;;
esac
if [ "$q" = "index,name,memory.total,uuid" ]; then
  echo "0, NVIDIA H100 80GB HBM3, 81559, GPU-aaaaaaaa-0000-0000-0000-000000000000"
  echo "1, NVIDIA H100 80GB HBM3, 81559, GPU-bbbbbbbb-0000-0000-0000-000000000001"
  exit 0
fi
echo "$$ $*" >> "${LOG}"
if [ "$FAKE_SMI_MODE" = "new-driver" ]; then
  case "$q" in *clocks_throttle_reasons.active*)
    echo 'Field "clocks_throttle_reasons.active" is not a valid field to query.'; echo
    echo "Please see 'nvidia-smi -h' for help."; exit 2;;
  esac
  case "$q" in *power.draw,*) echo 'Field "power.draw" is not a valid field to query.' >&2; exit 2;; esac
fi
n=0
while :; do
  ts=$(date '+%Y/%m/%d %H:%M:%S.%3N')
  echo "$ts, 0, 97, 61234, 81559, 1980, 512.37, 63, 0x0000000000000004"
  echo "$ts, 1, [N/A], 1, 81559, 345, [Not Supported], 31, 0x0000000000000001"
  n=$((n + 1))
  if [ "$FAKE_SMI_MODE" = "dies" ] && [ $n -ge 3 ]; then
    echo "Unable to determine the device handle for GPU0000:04:00.0: GPU is lost." \\
      " Reboot the system to recover this GPU"
    exit 15
  fi
  sleep 0.05
done
`,
);
chmodSync(FAKE, 0o755);

function starts(): { pid: number; args: string }[] {
  if (!existsSync(LOG)) return [];
  return readFileSync(LOG, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => ({ pid: Number(l.split(' ')[0]), args: l.slice(l.indexOf(' ') + 1) }));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function withMode<T>(mode: string | undefined, f: () => Promise<T>): Promise<T> {
  rmSync(LOG, { force: true });
  if (mode) process.env.FAKE_SMI_MODE = mode;
  else delete process.env.FAKE_SMI_MODE;
  try {
    return await f();
  } finally {
    delete process.env.FAKE_SMI_MODE;
  }
}

describe('GpuSampler on nvidia-smi', { timeout: 60_000 }, () => {
  test('one long-lived process streams both GPUs; stop() ends it', async () => {
    await withMode(undefined, async () => {
      const origin = performance.now();
      const sampler = await GpuSampler.start({
        source: 'auto',
        nvmlLibraryPath: '/nonexistent/libnvidia-ml.so.1',
        nvidiaSmiCommand: FAKE,
        rateHz: 20,
        originMs: origin,
      });
      assert.ok(sampler.status.available, JSON.stringify(sampler.status));
      assert.equal(sampler.status.source, 'nvidia-smi');
      assert.deepEqual(
        sampler.status.devices.map((d) => [d.index, d.name, d.uuid, d.memoryTotalBytes, d.gpm]),
        [
          [0, 'NVIDIA H100 80GB HBM3', 'GPU-aaaaaaaa-0000-0000-0000-000000000000', 81559 * MIB, false],
          [1, 'NVIDIA H100 80GB HBM3', 'GPU-bbbbbbbb-0000-0000-0000-000000000001', 81559 * MIB, false],
        ],
      );
      // The NVML reason itself is the NVML test's business (and reads differently while that test rebuilds the addon).
      assert.match(sampler.status.notes.join('\n'), /^NVML: .+; using nvidia-smi$/m);
      await waitFor(() => sampler.samples({ index: 1 }).length >= 10, 20_000);
      const launched = starts();
      assert.equal(launched.length, 1, 'one nvidia-smi process for the whole stream, not one per sample');
      assert.match(launched[0].args, /--format=csv,noheader,nounits --loop-ms=50$/);
      assert.ok(alive(launched[0].pid));
      await sampler.stop();
      assert.equal(alive(launched[0].pid), false, 'stop() ended nvidia-smi');
      const stoppedAt = performance.now() - origin;

      const h100 = sampler.samples({ index: 0 });
      const s = h100.at(-1)!;
      assert.deepEqual(
        { ...s, tMs: 0 },
        {
          tMs: 0,
          index: 0,
          utilizationPct: 97,
          memoryUsedBytes: 61234 * MIB,
          memoryTotalBytes: 81559 * MIB,
          smClockMhz: 1980,
          powerW: 512.37,
          temperatureC: 63,
          throttleReasons: ['sw_power_cap'],
        },
      );
      const idle = sampler.latest(1)!;
      assert.equal(idle.utilizationPct, null);
      assert.equal(idle.powerW, null);
      assert.deepEqual(idle.throttleReasons, ['gpu_idle']);
      // nvidia-smi's own (local-time) stamps, mapped onto the sampler's clock.
      for (const x of h100) assert.ok(x.tMs >= -5 && x.tMs <= stoppedAt, `tMs ${x.tMs} outside -5..${stoppedAt}`);
      const summary = sampler.summary();
      assert.equal(summary[1].utilizationPct, null);
      assert.equal(summary[0].smActivityPct, null, 'nvidia-smi has no GPM');
    });
  });

  test('a driver that renamed fields: the stream restarts with the names it knows', async () => {
    await withMode('new-driver', async () => {
      const sampler = await GpuSampler.start({
        source: 'nvidia-smi',
        nvidiaSmiCommand: FAKE,
        rateHz: 20,
        devices: [1],
      });
      try {
        assert.ok(sampler.status.available, JSON.stringify(sampler.status));
        await waitFor(() => sampler.samples().length >= 3, 20_000);
      } finally {
        await sampler.stop();
      }
      const launched = starts();
      assert.equal(launched.length, 3, launched.map((l) => l.args).join('\n'));
      assert.match(launched[2].args, /power\.draw\.average,temperature\.gpu,clocks_event_reasons\.active /);
      assert.match(launched[2].args, /--id=1$/);
      assert.deepEqual(sampler.status.available && sampler.status.devices.map((d) => d.index), [1]);
      assert.ok(
        sampler.samples().every((s) => s.index === 1),
        'only the GPU asked for',
      );
      assert.deepEqual(sampler.latest(1)!.throttleReasons, ['gpu_idle']);
    });
  });

  test("a driver that cannot talk to the GPU, or no GPU: unavailable, with nvidia-smi's words", async () => {
    const noDriver = await withMode('nodriver', () =>
      GpuSampler.start({ nvmlLibraryPath: '/nonexistent/libnvidia-ml.so.1', nvidiaSmiCommand: FAKE }),
    );
    assert.equal(noDriver.status.available, false);
    assert.match(
      !noDriver.status.available ? noDriver.status.reason : '',
      /^no NVIDIA GPU \/ no driver: NVML: .+; nvidia-smi: nvidia-smi failed \(exit code 9\): NVIDIA-SMI has failed /,
    );
    await noDriver.stop();
    const none = await withMode('nodevices', () => GpuSampler.start({ source: 'nvidia-smi', nvidiaSmiCommand: FAKE }));
    assert.equal(
      !none.status.available && none.status.reason,
      'no NVIDIA GPU / no driver: nvidia-smi: nvidia-smi lists no GPU',
    );
  });

  test('nvidia-smi that prints nothing is given up on and killed', async () => {
    await withMode('silent', async () => {
      const r = await NvidiaSmiStream.start({
        intervalMs: 100,
        command: FAKE,
        startTimeoutMs: 300,
        onRow: () => assert.fail('no rows expected'),
      });
      assert.equal(r.ok, false);
      assert.equal(!r.ok && r.reason, 'nvidia-smi printed no reading within 300 ms');
      const launched = starts();
      assert.equal(launched.length, 1);
      assert.equal(alive(launched[0].pid), false, 'the silent process was ended before start() answered');
    });
  });

  test('nvidia-smi that dies while streaming is reported, and samples stop', async () => {
    await withMode('dies', async () => {
      const sampler = await GpuSampler.start({ source: 'nvidia-smi', nvidiaSmiCommand: FAKE, rateHz: 20 });
      try {
        assert.ok(sampler.status.available);
        await waitFor(() => sampler.counters.lastError !== undefined, 20_000);
        assert.match(
          sampler.counters.lastError!,
          joinedRegExp(
            /^nvidia-smi exited while streaming \(exit code 15\): Unable to /,
            /determine the device handle for GPU0000:04:00\.0/,
          ),
        );
        assert.equal(sampler.samples({ index: 0 }).length, 3, 'the three readings printed before it died');
      } finally {
        await sampler.stop();
      }
    });
  });
});
