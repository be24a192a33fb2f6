#!/usr/bin/env bash
# The GPU half of the intelligibility benchmark (bench/intelligibility/README.md), on a GPU host with
# the bundle and the runtime folder beside the checkout (npm run bundle && npm run gpu-runtime):
#
#   bash bench/intelligibility/gpu.sh OUT [HELDOUT_MINUTES] [OVERFIT_MINUTES]
#
# In one run, side by side on the one GPU (a run given 0 minutes is skipped: alone, a run gets the
# whole GPU; side by side each got ~60% of the steps on an H100):
#   overfit   the quickstart config (tiny) on all 36 quickstart clips read as phonemes for
#             OVERFIT_MINUTES (default 3), then its training sentences spoken back;
#   held-out  bench/intelligibility/heldout.yaml (phonemes) on espeak-ng renderings of the training
#             sentences of DATA (made here, 16 at a time) for HELDOUT_MINUTES (default 7.5), then the
#             held-out sentences spoken.
# Everything lands in OUT: overfit.tar.gz and heldout.tar.gz (WAVs, mel and alignment images, run
# databases, logs, the trainer's and synthesizer's JSON), checkpoints.tar.gz (both models' weights),
# and nvidia-smi's log; score them on a connected machine with score.sh.
set -u
out=${1:?usage: gpu.sh OUT [HELDOUT_MINUTES] [OVERFIT_MINUTES]}
heldout_minutes=${2:-7.5}
overfit_minutes=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
x="node bundle/xtts.cjs"
backend=${XTTS_BENCH_BACKEND:-webgpu} # wasm: a CPU rehearsal of this script
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; espeak-ng --version; } >"$work/host.txt" 2>&1
[[ -f $data/train.tsv && -f $data/heldout.tsv ]] || { echo "gpu.sh: $data/train.tsv and heldout.tsv are missing: run bench/intelligibility/prepare.sh first" >&2; exit 2; }

# The held-out run's dataset: espeak-ng speaks each training sentence as the quickstart's were spoken.
mkdir -p "$work/heldout-data/wavs"
t0=$(date +%s%N)
tr '\n' '\0' <"$data/train.tsv" | xargs -0 -P "$(nproc)" -n 1 sh -c 'espeak-ng -v en-us -s 165 -w "$0/${1%%	*}.wav" "${1#*	}"' "$work/heldout-data/wavs"
awk -F'\t' '{print $1 "|" $2 "|" $2}' "$data/train.tsv" >"$work/heldout-data/metadata.csv"
echo "dataset: $(ls "$work/heldout-data/wavs" | wc -l) clips spoken in $((($(date +%s%N) - t0) / 1000000)) ms" >>"$work/summary.txt"

cut -f2 "$data/heldout.tsv" >"$work/heldout.txt"
cut -d'|' -f3 configs/quickstart/metadata.csv >"$work/overfit.txt"
train() { # name minutes args...
  local name=$1 minutes=$2
  shift 2
  $x train --output "$work/$name" --max-minutes "$minutes" --backend "$backend" --json "$@" >"$work/$name-train.json" 2>"$work/$name-train.log"
  echo "$name train rc=$?" >>"$work/summary.txt"
}
speak() { # name texts
  mkdir -p "$work/$1-spoken"
  $x synthesize --checkpoint "$work/$1" --texts "$2" --out-dir "$work/$1-spoken" --backend "$backend" --batch-size 32 --json >"$work/$1-synthesize.json" 2>"$work/$1-synthesize.log"
  echo "$1 synthesize rc=$?" >>"$work/summary.txt"
}
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 >"$work/smi.csv" 2>/dev/null &
smi=$!
# The overfit run: the quickstart config on all 36 of its clips read as espeak-ng phonemes (the
# clips are espeak-ng's own reading of them), batch 16, a schedule for ~2,000 steps. 0 minutes skips a run.
runs=()
if [[ $overfit_minutes != 0 ]]; then
  (train overfit "$overfit_minutes" --config configs/quickstart.yaml --set text.tokenizer=phonemes --set dataset.validation_fraction=0 --set batching.batch_size=16 \
    --set training.learning_rate=1e-3 --set training.schedule.warmup_steps=100 --set training.max_steps=2000 --set training.log_every=50 \
    --set training.eval_every=2000 --set training.validate_every=2000 --set training.checkpoint_every=2000 && speak overfit "$work/overfit.txt") &
  runs+=($!)
fi
if [[ $heldout_minutes != 0 ]]; then
  (train heldout "$heldout_minutes" --config "$here/heldout.yaml" --dataset "$work/heldout-data" && speak heldout "$work/heldout.txt") &
  runs+=($!)
fi
wait "${runs[@]}"
kill $smi 2>/dev/null

# Three archives under 16 MiB each: what each run spoke (WAVs, logs, run database, eval pictures), and the two models.
for name in overfit heldout; do
  [[ -d $work/$name ]] || continue
  tar -czf "$out/$name.tar.gz" -C "$work" --exclude="$name/checkpoints" "$name" "$name-spoken" "$name-train.json" "$name-train.log" "$name-synthesize.json" "$name-synthesize.log" 2>/dev/null
done
(cd "$work" && tar -czf "$out/checkpoints.tar.gz" --exclude='*/optimizer.*' $(ls -d overfit/checkpoints heldout/checkpoints 2>/dev/null))
cp "$work/summary.txt" "$work/host.txt" "$work/smi.csv" "$out/" 2>/dev/null
cat "$work/host.txt" "$work/summary.txt"
ls -la "$out"
