// A stand-in `nvidia-smi` for CLI tests on machines without a GPU: a shell script, put first on the
// PATH of the process under test, that answers the queries xtts makes the way the real one does
// (`--format=csv,noheader,nounits`): the inventory (index, name, memory.total, uuid), the compute
// processes, and the streaming query (`--loop-ms=N` or `-lms N`), one line per GPU every N ms until killed.
// Each GPU's readings are fixed by the test; xtts's NVML path is turned off with XTTS_NVML_LIBRARY.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FakeGpu {
  name: string;
  memoryTotalMiB: number;
  utilizationPct: number;
  memoryUsedMiB: number;
  smClockMhz: number;
  powerW: number;
  temperatureC: number;
  /** Active clock-event reasons mask, e.g. 0x20 (SW thermal slowdown). */
  throttleMask?: number;
}

export interface FakeProcess {
  pid: number;
  name: string;
  usedMemoryMiB: number;
  gpu: number;
}

const uuid = (i: number) => `GPU-${String(i).padStart(8, '0')}-0000-4000-8000-00000000000${i}`;

/** Writes `nvidia-smi` into `dir`; returns the environment that puts it first on PATH and turns NVML off. */
export function fakeNvidiaSmi(dir: string, gpus: FakeGpu[], processes: FakeProcess[] = []): Record<string, string> {
  mkdirSync(dir, { recursive: true });
  const inventory = gpus.map((g, i) => `echo "${i}, ${g.name}, ${g.memoryTotalMiB}, ${uuid(i)}"`).join('\n  ');
  const apps = processes.map((p) => `echo "${p.pid}, ${p.name}, ${p.usedMemoryMiB}, ${uuid(p.gpu)}"`).join('\n  ');
  const readings = gpus
    .map((g, i) => {
      const fields = [
        i,
        g.utilizationPct,
        g.memoryUsedMiB,
        g.memoryTotalMiB,
        g.smClockMhz,
        g.powerW.toFixed(2),
        g.temperatureC,
      ];
      return `echo "$ts, ${fields.join(', ')}, 0x${(g.throttleMask ?? 0).toString(16).padStart(16, '0')}"`;
    })
    .join('\n  ');
  writeFileSync(
    join(dir, 'nvidia-smi'),
    `#!/bin/sh
q=""; apps=""; ms=1000
prev=""
for a in "$@"; do
  case "$a" in
    --query-gpu=*) q="\${a#--query-gpu=}";;
    --query-compute-apps=*) apps=1;;
    --loop-ms=*) ms="\${a#--loop-ms=}";;
  esac
  if [ "$prev" = "-lms" ]; then ms="$a"; fi
  prev="$a"
done
if [ -n "$apps" ]; then
  ${apps || ':'}
  exit 0
fi
if [ "$q" = "index,name,memory.total,uuid" ]; then
  ${inventory}
  exit 0
fi
s=$(awk "BEGIN { print $ms / 1000 }")
while :; do
  ts=$(date '+%Y/%m/%d %H:%M:%S.%3N')
  ${readings}
  sleep "$s"
done
`,
  );
  chmodSync(join(dir, 'nvidia-smi'), 0o755);
  return { PATH: `${dir}:${process.env.PATH ?? ''}`, XTTS_NVML_LIBRARY: join(dir, 'no-libnvidia-ml.so.1') };
}

/** An environment with no nvidia-smi on PATH (the folders that hold one are left out) and NVML off. */
export function noGpuEnv(dir: string): Record<string, string> {
  const path = (process.env.PATH ?? '').split(':').filter((d) => d && !existsSync(join(d, 'nvidia-smi')));
  return { PATH: path.join(':'), XTTS_NVML_LIBRARY: join(dir, 'no-libnvidia-ml.so.1') };
}

/** A host whose kernel has the NVIDIA driver loaded: there, "no GPU" cannot be staged by PATH alone. */
export const nvidiaDriverLoaded = existsSync('/dev/nvidiactl');
