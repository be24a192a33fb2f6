#!/usr/bin/env bash
# Training evidence on a GPU host (no network, no Node.js): the tiny and small presets on the
# webgpu backend, and the same runs on the wasm (CPU) backend for comparison, through the bundle.
# Per run: the trainer's JSON result (median step, samples/s, kernels/step, loss curve) and
# nvidia-smi utilisation sampled every 200 ms. Everything lands in OUT/evidence.tar.gz plus a
# summary. Prepare on a connected machine first:
#   npm run gpu-runtime && npm run bundle
# then on the host:  bash bench/gpu-train.sh OUT [tiny_steps] [small_steps] [cpu_steps]
set -u
out=${1:?usage: gpu-train.sh OUT [tiny_steps] [small_steps] [cpu_steps]}
tiny_steps=${2:-200}
small_steps=${3:-150}
cpu_steps=${4:-20}
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; } >"$work/host.txt" 2>&1
x="node bundle/xtts.cjs"
quiet=(--set training.validate_every=1000000 --set training.eval_every=1000000 --set training.checkpoint_every=1000000 --set training.log_every=25 --set pipeline.workers=4)

run() { # name config backend steps
  local name=$1 config=$2 backend=$3 steps=$4
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,clocks.sm --format=csv,noheader,nounits -lms 200 >"$work/smi-$name.csv" 2>/dev/null &
  local smi=$!
  local t0=$(date +%s%N)
  timeout 420 $x train --config "$config" --backend "$backend" --max-steps "$steps" --output "$work/run-$name" "${quiet[@]}" --json >"$work/train-$name.json" 2>"$work/train-$name.log"
  local rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$name rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms" >>"$work/summary.txt"
  node -e '
    const fs = require("fs");
    const [json, smi, name] = process.argv.slice(1);
    let r; try { r = JSON.parse(fs.readFileSync(json, "utf8")); } catch { console.log(name, "no result"); process.exit(0); }
    if (r.status !== "success") { console.log(name, "error", JSON.stringify(r.error)); process.exit(0); }
    const res = r.result, c = res.lossCurve;
    const util = fs.readFileSync(smi, "utf8").trim().split("\n").map((l) => Number(l.split(",")[1])).filter((u) => Number.isFinite(u));
    const busy = util.filter((u) => u > 0);
    console.log(`${name}: backend ${res.backend.backend}${res.backend.adapter ? " (" + (res.backend.adapter.description || res.backend.adapter.device) + ")" : ""}, ${(res.parameters / 1e6).toFixed(2)} M params, ${res.steps} steps, median step ${res.timing.stepMsMedian.toFixed(1)} ms, ${res.timing.samplesPerS.toFixed(1)} samples/s, ${res.timing.kernelsPerStep} kernels/step, data wait ${(res.timing.dataWaitShare * 100).toFixed(2)}%, nvidia-smi utilisation mean ${util.length ? (util.reduce((a, b) => a + b, 0) / util.length).toFixed(1) : "n/a"}% over ${util.length} samples (while >0: ${busy.length ? (busy.reduce((a, b) => a + b, 0) / busy.length).toFixed(1) : "n/a"}%)`);
    console.log(`  loss: ${c.map((p) => p.step + ":" + p.loss.toFixed(3)).join(" ")}`);
  ' "$work/train-$name.json" "$work/smi-$name.csv" "$name" >>"$work/summary.txt"
}

# A 3-step smoke run first: if webgpu fails here, the logs say why before the long runs.
run smoke-webgpu bundle/configs/tiny.yaml webgpu 3
run tiny-webgpu bundle/configs/tiny.yaml webgpu "$tiny_steps"
run small-webgpu bundle/configs/small.yaml webgpu "$small_steps"
run tiny-wasm bundle/configs/tiny.yaml wasm "$cpu_steps"
run small-wasm bundle/configs/small.yaml wasm "$((cpu_steps / 2))"
cp "$work/summary.txt" "$work/host.txt" "$out/"
tar -czf "$out/evidence.tar.gz" -C "$work" --exclude='run-*' . 2>/dev/null
cat "$out/host.txt" "$out/summary.txt"
