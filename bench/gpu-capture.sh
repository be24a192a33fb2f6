#!/usr/bin/env bash
# Step capture on a GPU host, through the bundle (npm run gpu-runtime && npm run bundle): for each
# preset (default "tiny small normal") `xtts train` on the quickstart data with one bucket, once with
# device.step_capture off and once on (bench/step-capture.mjs: median step, host time issuing a step,
# GPU programs per step, encode µs per replayed program, identical losses), STEPS steps each (default
# 60). Prints the figures side by side and packs the logs into OUT/capture.tar.gz.
#
#   bash bench/gpu-capture.sh OUT [STEPS] [PRESETS]
set -u
out=${1:?usage: gpu-capture.sh OUT [STEPS] [PRESETS]}
steps=${2:-60}
presets=${3:-tiny small normal}
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } >"$work/host.txt" 2>&1
for preset in $presets; do
  XTTS_BIN=bundle/xtts.cjs timeout 290 node bench/step-capture.mjs "$work/$preset" "$steps" "bundle/configs/$preset.yaml" \
    -- --set pipeline.cache.path="$work/cache.sqlite" >"$work/$preset.txt" 2>&1
  echo "== $preset (rc=$?)" >>"$work/summary.txt"
  cat "$work/$preset.txt" >>"$work/summary.txt"
done
cp "$work/summary.txt" "$work/host.txt" "$out/"
tar -czf "$out/capture.tar.gz" -C "$work" --exclude='*.sqlite' --exclude='checkpoints' . 2>/dev/null
cat "$out/host.txt" "$out/summary.txt"
