#!/usr/bin/env bash
# Data-parallel scaling on a GPU host with two or more GPUs, through the bundle (npm run bundle &&
# npm run gpu-runtime; bench/intelligibility/prepare.sh for the sentences):
#
#   bash bench/parallel-gpu.sh OUT [STEPS] [PRESETS]
#
# For each preset (default: "small normal"): one GPU at the preset's batch (--gpus 0), then two GPUs
# at twice the batch (--gpus 0,1: the same batch per GPU, the issue's measure), STEPS optimizer steps
# each (default 40) after 8 warm-up steps, on espeak-ng renderings of the intelligibility benchmark's
# training sentences (enough clips that no batch is capped by the dataset). Prints samples/s over the
# steps after the warm-up (xtts profile-bottleneck --run), the ratio, the all-reduce's own share of the
# wall (its readback, sums and upload), the share rank 0 waited for the other replicas, and how many
# measured steps each replica replayed (step capture), and packs the run databases and logs into
# OUT/parallel.tar.gz. XTTS_BENCH_GPUS="0 0,0" rehearses it on one GPU (two replicas taking turns on
# it: the mechanics and the all-reduce's cost, not the scaling); XTTS_BENCH_GPUS="cpu:1 cpu:2" on CPU
# replicas. XTTS_BENCH_CAPTURE="auto off" also runs every replicated case with device.step_capture off
# (eager replicas: "-eager" in its name) beside the captured one. XTTS_BENCH_ARGS adds arguments to every
# `xtts train` (e.g. "--set training.grad_accumulation_steps=2"). XTTS_BENCH_EXCHANGE="float32 bfloat16" also runs
# every replicated case with device.gradient_exchange bfloat16 ("-bf16" in its name) beside float32.
# XTTS_BENCH_OVERLAP="on off" also runs every replicated case with the all-reduce after the backward pass
# (XTTS_EXCHANGE_OVERLAP=off: "-seq" in its name) beside the one overlapped with it.
set -u
out=${1:?usage: parallel-gpu.sh OUT [STEPS] [PRESETS]}
steps=${2:-40}
presets=${3:-small normal}
warmup=8
read -r -a gpus <<<"${XTTS_BENCH_GPUS:-0 0,1}"
read -r -a captures <<<"${XTTS_BENCH_CAPTURE:-auto}"
read -r -a extra <<<"${XTTS_BENCH_ARGS:-}"
read -r -a exchanges <<<"${XTTS_BENCH_EXCHANGE:-float32}"
read -r -a overlaps <<<"${XTTS_BENCH_OVERLAP:-on}"
here=$(cd "$(dirname "$0")" && pwd)
data=$here/intelligibility/data
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
x="node bundle/xtts.cjs"
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader; nproc; } >"$work/host.txt" 2>&1
[[ -f $data/train.tsv ]] || { echo "parallel-gpu.sh: $data/train.tsv is missing: run bench/intelligibility/prepare.sh first" >&2; exit 2; }
mkdir -p "$work/data/wavs"
tr '\n' '\0' <"$data/train.tsv" | xargs -0 -P "$(nproc)" -n 1 sh -c 'espeak-ng -v en-us -s 165 -w "$0/${1%%	*}.wav" "${1#*	}"' "$work/data/wavs"
awk -F'\t' '{print $1 "|" $2 "|" $2}' "$data/train.tsv" >"$work/data/metadata.csv"
echo "dataset: $(ls "$work/data/wavs" | wc -l) clips" | tee "$work/summary.txt"
quiet=(--set training.validate_every=1000000 --set training.eval_every=1000000 --set training.checkpoint_every=1000000 --set training.log_every=10
  --set batching.buckets=1 --set dataset.validation_fraction=0 --set pipeline.cache.path="$work/cache.sqlite")

measure() { # name preset gpus batch capture exchange overlap
  local name=$1 preset=$2 g=$3 batch=$4 capture=$5 exchange=$6 overlap=$7
  XTTS_EXCHANGE_OVERLAP=$overlap timeout 280 $x train --config "bundle/configs/$preset.yaml" \
    --dataset "$work/data" --gpus "$g" \
    --set batching.batch_size="$batch" --set device.step_capture="$capture" --max-steps $((warmup + steps)) \
    --set device.gradient_exchange="$exchange" \
    --output "$work/$name" "${quiet[@]}" "${extra[@]}" >"$work/$name.log" 2>&1
  local rc=$?
  $x profile-bottleneck --run "$work/$name" --warmup "$warmup" --json >"$work/$name-profile.json" 2>"$work/$name-profile.log"
  echo "$name: rc=$rc $(node -e '
    let r; try { r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); } catch { console.log("no profile"); process.exit(0); }
    if (!r.result) { console.log("profile failed:", JSON.stringify(r.error)); process.exit(0); }
    const p = r.result, b = p.breakdown;
    const devices = p.replicas ? p.replicas.map((x) => x.device).join(" + ") : p.device ?? p.backend;
    const pct = (x) => `${(x * 100).toFixed(1)}%`;
    const r0 = p.replicas?.[0];
    const ms = (x) => `${x.toFixed(1)} ms`;
    const parts = r0 && r0.readbackMs !== null
      ? ` (${ms(b.spans.allReduceMs.mean)} a step: readback ${ms(r0.readbackMs)}, exchange ${ms(r0.exchangeMs)}, ` +
        `uploads and sums ${ms(b.spans.allReduceMs.mean - r0.readbackMs - r0.exchangeMs)}` +
        (r0.overlapMs == null ? ")" : `; host copies hidden behind the step ${ms(r0.overlapMs)})`) : "";
    const waited = r0 && r0.peerWaitMs !== null ? `, waiting for the others ${pct(r0.peerWaitMs / b.wallMs.mean)}` : "";
    const wait = `${parts}${waited}`;
    const c = p.stepCapture;
    const replayed = p.replicas
      ? p.replicas[0].replayedSteps === null ? "; no step capture"
        : `; replayed ${p.replicas.map((x) => `rank ${x.rank} ${x.replayedSteps}/${x.steps}`).join(", ")}`
      : c && !c.summary?.off ? `; replayed ${c.replayedSteps}/${c.measuredSteps}` : "; no step capture";
    console.log(`${b.steps} steps, ${b.samplesPerS.toFixed(2)} samples/s, median step ${b.wallMs.p50.toFixed(1)} ms, ` +
      `all-reduce ${pct(b.shares.allReduceMs)} of the wall${wait}${replayed}, on ${devices}`);
  ' "$work/$name-profile.json")" | tee -a "$work/summary.txt"
}

for preset in $presets; do
  batch=$(sed -n 's/^  batch_size: \([0-9]*\).*/\1/p' "bundle/configs/$preset.yaml" | head -1)
  n=0
  for g in "${gpus[@]}"; do
    n=$((n + 1))
    for c in "${captures[@]}"; do
      for e in "${exchanges[@]}"; do
        for o in "${overlaps[@]}"; do
          suffix=$([[ $c == auto ]] || echo "-eager")$([[ $e == float32 ]] || echo "-bf16")
          suffix+=$([[ $o == on ]] || echo "-seq")
          # One device has nothing to compare or exchange: the captured float32 run only.
          [[ $n == 1 && ($c != auto || $e != float32 || $o != on) ]] && continue
          measure "$preset-$n$suffix" "$preset" "$g" $((batch * n)) "$c" "$e" "$o"
        done
      done
    done
  done
  node -e '
    const fs = require("fs");
    const lines = fs.readFileSync(process.argv[1], "utf8").split("\n");
    const sps = (n) => { const m = lines.find((l) => l.startsWith(`${process.argv[2]}-${n}:`))?.match(/([0-9.]+) samples\/s/); return m ? Number(m[1]) : NaN; };
    console.log(`${process.argv[2]}: ${process.argv[3]} devices ${(sps(process.argv[3]) / sps(1)).toFixed(2)}× one (efficiency ${((sps(process.argv[3]) / sps(1) / process.argv[3]) * 100).toFixed(0)}%)`);
  ' "$work/summary.txt" "$preset" "$n" | tee -a "$work/summary.txt"
done
cp "$work/summary.txt" "$work/host.txt" "$out/"
(cd "$work" && tar -czf "$out/parallel.tar.gz" --exclude='data' --exclude='cache.sqlite' --exclude='*/checkpoints' . 2>/dev/null)
cat "$out/host.txt"
