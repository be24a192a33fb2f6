#!/usr/bin/env bash
# The GPU half of the intelligibility benchmark (bench/intelligibility/README.md), on a GPU host with
# the bundle and the runtime folder beside the checkout (npm run bundle && npm run gpu-runtime):
#
#   bash bench/intelligibility/gpu.sh OUT [HELDOUT_MINUTES] [OVERFIT_MINUTES]
#
# Two runs, one after the other, each alone on the GPU (side by side each would get ~60% of the steps,
# the step being bound by the host's work); a run given 0 minutes is skipped:
#   held-out  bench/intelligibility/heldout.yaml (phonemes) on espeak-ng renderings of the training
#             sentences of DATA (made here, all cores) for at most HELDOUT_MINUTES (default 6.5: with
#             the synthesis, at most 8.5 minutes on an H100), its cosine schedule sized to what fits
#             in that time (fit_steps below), then the held-out sentences spoken;
#   overfit   the quickstart config (tiny) on all 36 quickstart clips read as phonemes for
#             OVERFIT_MINUTES (default 0: the 3-minute overfit is a run of its own, gpu.sh OUT 0 3,
#             4 minutes; the two together take longer than one 10-minute command on a GPU host),
#             then its training sentences spoken back.
# The evidence comes back as one archive, OUT/intelligibility.tar: per run a .tar.gz (WAVs, mel and
# alignment images, run database, logs, the trainer's and synthesizer's JSON) and the host's
# description, each phase's duration and nvidia-smi's log; each model's weights lie beside it in
# OUT/NAME-checkpoint.tar.gz (a file comes back from a GPU host only under 16 MiB). A run's archive is
# written as soon as it is done, so a run cut short still leaves the finished ones in OUT. Score with
# score.sh.
set -u
start=$(date +%s%N)
out=${1:?usage: gpu.sh OUT [HELDOUT_MINUTES] [OVERFIT_MINUTES]}
heldout_minutes=${2:-6.5}
overfit_minutes=${3:-0}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
source "$here/../gpu-host.sh"
gpu_setup # work, out; x and backend (XTTS_BENCH_BACKEND=wasm: a CPU rehearsal of this script)
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; espeak-ng --version; } >"$work/host.txt" 2>&1
[[ -f $data/train.tsv && -f $data/heldout.tsv ]] || { echo "gpu.sh: $data/train.tsv and heldout.tsv are missing: run bench/intelligibility/prepare.sh first" >&2; exit 2; }

# The held-out run's dataset: espeak-ng speaks each training sentence as the quickstart's were spoken.
t0=$(date +%s%N)
speak_sentences "$data/train.tsv" "$work/heldout-data"
echo "dataset: $(ls "$work/heldout-data/wavs" | wc -l) clips spoken in $((($(date +%s%N) - t0) / 1000000)) ms" >>"$work/summary.txt"

cut -f2 "$data/heldout.tsv" >"$work/heldout.txt"
cut -d'|' -f3 configs/quickstart/metadata.csv >"$work/overfit.txt"
since() { echo "$((($(date +%s%N) - $1) / 1000000))"; }
train() { # name minutes args...
  local name=$1 minutes=$2 t=$(date +%s%N) rc
  shift 2
  $x train --output "$work/$name" --max-minutes "$minutes" --backend "$backend" --json "$@" >"$work/$name-train.json" 2>"$work/$name-train.log"
  rc=$?
  echo "$name train rc=$rc in $(since "$t") ms" >>"$work/summary.txt"
  return $rc
}
speak() { # name texts
  local t=$(date +%s%N) rc
  mkdir -p "$work/$1-spoken"
  $x synthesize --checkpoint "$work/$1" --texts "$2" --out-dir "$work/$1-spoken" --backend "$backend" --batch-size 32 --json >"$work/$1-synthesize.json" 2>"$work/$1-synthesize.log"
  rc=$?
  echo "$1 synthesize rc=$rc in $(since "$t") ms" >>"$work/summary.txt"
}
pack() { # name: what the run spoke, at once; its model's weights (not the optimizer's moments) beside it
  local t=$(date +%s%N)
  (cd "$work" && tar -czf "$out/$1.tar.gz" --exclude="$1/checkpoints" "$1" "$1-spoken" "$1-train.json" "$1-train.log" "$1-synthesize.json" "$1-synthesize.log" 2>/dev/null)
  (cd "$work" && tar -czf "$out/$1-checkpoint.tar.gz" --exclude='*/optimizer.*' "$1/checkpoints" 2>/dev/null)
  echo "$1 packed in $(since "$t") ms" >>"$work/summary.txt"
}
# Steps that fit MINUTES of training: a 60-step run of the same config measures the median step (the
# step-capture replay, on by default, makes it several times faster than the eager step the fixed
# defaults were sized for), and the schedule gets 92% of MINUTES at that pace (the rest: start-up and the
# eager steps that record the replay).
fit_steps() { # name minutes args...
  local name=$1 minutes=$2 t=$(date +%s%N) ms
  shift 2
  $x train --output "$work/$name-calibration" --max-steps 60 --backend "$backend" --json "$@" --set training.eval_every=1000000 --set training.validate_every=1000000 \
    --set training.checkpoint_every=1000000 >"$work/$name-calibration.json" 2>"$work/$name-calibration.log"
  ms=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["timing"]["stepMsMedian"])' "$work/$name-calibration.json" 2>/dev/null)
  echo "$name calibration: median step ${ms:-unknown} ms in $(since "$t") ms" >>"$work/summary.txt"
  rm -rf "$work/$name-calibration"
  [[ -n $ms ]] && awk -v m="$minutes" -v ms="$ms" 'BEGIN { printf "%d", 0.92 * m * 60000 / ms }'
}
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 >"$work/smi.csv" 2>/dev/null &
smi=$!
# The overfit run: the quickstart config on all 36 of its clips read as espeak-ng phonemes (the
# clips are espeak-ng's own reading of them), all 36 in one batch, learning rate 2e-3, a cosine
# schedule of OVERFIT_STEPS (default: what fit_steps measures fits in the minutes, so that the learning
# rate has decayed when time is up; batch 16 at 1e-3 scored worse, README.md). OVERFIT_ARGS adds --set
# overrides (experiments).
if [[ $overfit_minutes != 0 ]]; then
  # shellcheck disable=SC2086
  overfit_args=(--config configs/quickstart.yaml --set text.tokenizer=phonemes --set dataset.validation_fraction=0 --set batching.batch_size=36
    --set batching.buckets=1 --set training.learning_rate=2e-3 --set training.schedule.warmup_steps=100 --set training.log_every=50 ${OVERFIT_ARGS:-})
  steps=${OVERFIT_STEPS:-$(fit_steps overfit "$overfit_minutes" "${overfit_args[@]}")}
  steps=${steps:-1100}
  train overfit "$overfit_minutes" "${overfit_args[@]}" --set training.max_steps="$steps" \
    --set training.eval_every="$steps" --set training.validate_every="$steps" --set training.checkpoint_every="$steps" && speak overfit "$work/overfit.txt"
  pack overfit
fi
# The held-out run: a cosine schedule of HELDOUT_STEPS (default: what fit_steps measures fits in the
# minutes; 380 a minute if the calibration run fails), so that its learning rate has decayed in time.
if [[ $heldout_minutes != 0 ]]; then
  steps=${HELDOUT_STEPS:-$(fit_steps heldout "$heldout_minutes" --config "$here/heldout.yaml" --dataset "$work/heldout-data" ${HELDOUT_ARGS:-})}
  steps=${steps:-$(awk -v m="$heldout_minutes" 'BEGIN { printf "%d", m * 380 }')}
  train heldout "$heldout_minutes" --config "$here/heldout.yaml" --dataset "$work/heldout-data" ${HELDOUT_ARGS:-} --set training.max_steps="$steps" \
    --set training.eval_every="$steps" --set training.checkpoint_every="$steps" && speak heldout "$work/heldout.txt"
  pack heldout
fi
kill $smi 2>/dev/null
echo "total $(since "$start") ms" >>"$work/summary.txt"

# One archive: the runs' archives (already compressed), the host, the timings, nvidia-smi's log.
cp "$work/summary.txt" "$work/host.txt" "$work/smi.csv" "$out/" 2>/dev/null
(cd "$out" && tar -cf intelligibility.tar $(ls overfit.tar.gz heldout.tar.gz 2>/dev/null) summary.txt host.txt smi.csv && rm -f overfit.tar.gz heldout.tar.gz summary.txt host.txt smi.csv)
cat "$work/host.txt" "$work/summary.txt"
ls -la "$out"
