#!/usr/bin/env bash
# xtts against its PyTorch twin on one GPU host, in one call (the engine-speed benchmark).
# Per preset (default "tiny small normal"): bench/step-capture.mjs runs `xtts train` through the bundle
# on the quickstart data with one bucket, eager (device.step_capture off) and replayed (auto), STEPS
# steps each (default 60); `xtts export` writes the replayed run's last checkpoint under PyTorch's names;
# then the twin (bench/twin/xtts_twin.py, or another with its `bench` interface) loads that checkpoint and
# trains the same bucket shape (batch × tokens × frames × reference frames, read from the replayed run)
# for each of its VARIANTS (default "fp32,graphs_fp32,graphs_bf16,compile_graphs_bf16": eager float32 with
# TF32 off, the same arithmetic; that step in one CUDA graph; in bf16 autocast; torch.compile with its CUDA
# graphs; bench/twin/README.md lists the others). gpu-twin-summary.py
# prints, per preset, the step times side by side, the ratios to the twin's eager float32 and to its best
# variant (also for the run's pace: the longer of the replayed median and the device's cycle), GPU programs
# per step, host time per replayed program and the GPU's busy share (NVML samples the
# trainer wrote to run.sqlite) over the replayed steps.
#
#   bash bench/gpu-twin.sh OUT TWIN_PY [STEPS] [PRESETS] [VARIANTS]      (TWIN_PY: bench/twin/xtts_twin.py)
#
# STEPS is one count for every preset or a count per preset (tiny=400,small=150,normal=60): the GPU
# busy share comes from NVML samples (10 a second) over the replayed steps, and a tiny step of a few
# milliseconds needs a few hundred steps for a span of seconds (the summary says when it is too short).
#
# XTTS_ARGS adds `xtts train` arguments to both xtts runs, e.g. XTTS_ARGS="--set device.matmul=tiled"
# or XTTS_ARGS="--set training.precision=mixed_fp16" (run the script once with and once without, in one
# call, to compare them against the same twin). TWIN_STEPS (50) and TWIN_WARMUP (10): the twin's timed and
# untimed steps per variant (its first step, compilation or graph capture included, is timed apart).
#
# Needs: npm run gpu-runtime && npm run bundle here; python3 with torch there. Writes OUT/summary.txt
# and OUT/twin.tar.gz (every log, the twin's JSON lines, each run's run.sqlite).
set -u
out=${1:?usage: gpu-twin.sh OUT TWIN_PY [STEPS] [PRESETS] [VARIANTS]}
twin=${2:?usage: gpu-twin.sh OUT TWIN_PY [STEPS] [PRESETS] [VARIANTS]}
steps=${3:-60}
presets=${4:-tiny small normal}
variants=${5:-fp32,graphs_fp32,graphs_bf16,compile_graphs_bf16}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; python3 -c 'import torch; print("torch", torch.__version__)'; echo "XTTS_ARGS: ${XTTS_ARGS:-none}"; } >"$work/host.txt" 2>&1
steps_of() { # preset -> its step count
  if [[ $steps != *=* ]]; then echo "$steps"; return; fi
  local n
  n=$(tr ',' '\n' <<<"$steps" | sed -n "s/^$1=//p")
  echo "${n:-60}"
}
for preset in $presets; do
  t=$(date +%s)
  XTTS_BIN=bundle/xtts.cjs timeout 300 node bench/step-capture.mjs "$work/$preset" "$(steps_of "$preset")" "bundle/configs/$preset.yaml" \
    -- --set pipeline.cache.path="$work/cache.sqlite" ${XTTS_ARGS:-} >"$work/$preset.txt" 2>&1
  echo "$preset xtts rc=$? in $(($(date +%s) - t)) s" >>"$work/phases.txt"
  shape=$(sed -n 's/^BENCH_JSON //p' "$work/$preset.txt" | python3 -c 'import json,sys; s=json.load(sys.stdin).get("shape") or ""; print(" ".join(s.replace("×"," ").split()[:4]))' 2>/dev/null)
  if [[ $(wc -w <<<"$shape") != 4 ]]; then
    echo "$preset: no replayed bucket shape in the xtts run; the twin is skipped" >>"$work/phases.txt"
    continue
  fi
  read -r b tk fr rf <<<"$shape"
  weights="$work/$preset.safetensors"
  if ! node bundle/xtts.cjs export --checkpoint "$work/$preset/run-auto" --out "$weights" \
    >"$work/$preset-export.txt" 2>&1; then
    echo "$preset: xtts export failed (see $preset-export.txt); the twin is skipped" >>"$work/phases.txt"
    continue
  fi
  t=$(date +%s)
  timeout 300 python3 "$twin" bench --weights "$weights" --batch "$b" --tokens "$tk" --frames "$fr" --ref "$rf" \
    --variants "$variants" --steps "${TWIN_STEPS:-50}" --warmup "${TWIN_WARMUP:-10}" \
    >"$work/$preset-twin.jsonl" 2>"$work/$preset-twin.err"
  echo "$preset twin rc=$? in $(($(date +%s) - t)) s (shape $b×$tk×$fr×$rf)" >>"$work/phases.txt"
done
python3 "$here/gpu-twin-summary.py" "$work" $presets >"$work/summary.txt" 2>&1
cp "$work/summary.txt" "$work/host.txt" "$work/phases.txt" "$out/"
tar -czf "$out/twin.tar.gz" -C "$work" --exclude='cache.sqlite' --exclude='checkpoints' --exclude='*.safetensors' \
  --exclude='*.wav' . 2>/dev/null
cat "$out/host.txt" "$out/phases.txt" "$out/summary.txt"
