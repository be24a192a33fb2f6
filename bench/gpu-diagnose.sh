#!/usr/bin/env bash
# Evidence for the two instruments on a GPU host (no network, no Node.js), through the bundle on the
# webgpu backend: `xtts profile-bottleneck` on the tiny and small presets and on a deliberately
# input-starved tiny (features uncached, one producer thread), and `xtts diagnose-gpu-utilization`
# (report and --watch, the watch while the small preset trains). Beside every run, an independent
# `nvidia-smi -lms 100` log to hold the NVML sampler's figures against. Prepare on a connected machine:
#   npm run gpu-runtime && npm run bundle
# then on the host:  bash bench/gpu-diagnose.sh OUT [steps] [warmup]
# Prints bench/gpu-diagnose-summary.mjs's figures into OUT/summary.txt; every other file (JSON, text
# output, traces, HTML reports, fixed configs, the nvidia-smi logs, the run databases) is packed into
# OUT/evidence.tar.gz, since a device run returns only a few files.
set -u
dest=${1:?usage: gpu-diagnose.sh OUT [steps] [warmup]}
steps=${2:-50}
warmup=${3:-10}
out=$(mktemp -d)
mkdir -p "$dest"
source .gpu-runtime/setup.sh
x="node bundle/xtts.cjs"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; echo "cpu cores: $(nproc)"; } >"$out/host.txt" 2>&1

smi_start() { nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 >"$out/smi-$1.csv" 2>/dev/null & smi_pid=$!; }
smi_stop() { kill "$smi_pid" 2>/dev/null; wait "$smi_pid" 2>/dev/null; }

profile() { # name config [extra flags...]
  local name=$1 config=$2
  shift 2
  smi_start "$name"
  local t0=$(date +%s%N)
  timeout 420 $x profile-bottleneck --config "$config" --backend webgpu --steps "$steps" --warmup "$warmup" --output "$out/run-$name" \
    --trace "$out/trace-$name.json" --report "$out/report-$name.html" --fix-config "$out/fixed-$name.yaml" "$@" >"$out/profile-$name.txt" 2>&1
  echo "profile-$name rc=$? wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms" >>"$out/rc.txt"
  smi_stop
  # The same run read back (--run): the JSON the summary quotes.
  $x profile-bottleneck --run "$out/run-$name" --warmup "$warmup" --json >"$out/profile-$name.json" 2>>"$out/profile-$name.txt"
}

# Report on the machine alone (quickstart speed test), as JSON: the bug-report snapshot.
smi_start diagnose
$x diagnose-gpu-utilization --json >"$out/diagnose.json" 2>"$out/diagnose.err"
echo "diagnose rc=$?" >>"$out/rc.txt"
smi_stop
# The same with the tiny preset audited and speed-tested, as a person reads it.
$x diagnose-gpu-utilization --config bundle/configs/tiny.yaml >"$out/diagnose-tiny.txt" 2>&1
echo "diagnose-tiny rc=$?" >>"$out/rc.txt"

profile tiny bundle/configs/tiny.yaml
# The live view and its JSON while the small preset trains.
$x diagnose-gpu-utilization --watch --duration 40 --rate 10 --json >"$out/watch.json" 2>"$out/watch.err" &
watch_pid=$!
$x diagnose-gpu-utilization --watch --duration 12 >"$out/watch.txt" 2>&1 &
profile small bundle/configs/small.yaml
wait "$watch_pid"
echo "watch rc=$?" >>"$out/rc.txt"
wait
profile starved bundle/configs/tiny.yaml --set pipeline.cache.enabled=false --set pipeline.workers=1 --set batching.batch_size=64

node bench/gpu-diagnose-summary.mjs "$out" >"$out/summary.txt" 2>&1
cp "$out/summary.txt" "$dest/"
tar -czf "$dest/evidence.tar.gz" -C "$out" .
cat "$dest/summary.txt"
