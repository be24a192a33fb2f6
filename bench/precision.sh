#!/usr/bin/env bash
# Does mixed_fp16 keep what float32 learns? (issue 35: "losses of the mixed_fp16 run within the float32
# run's run-to-run spread after 2,000 steps"). On a GPU host with the bundle and the runtime folder beside
# the checkout (npm run bundle && npm run gpu-runtime), from the checkout's root:
#
#   bash bench/precision.sh OUT [PRESET] [STEPS] [SEEDS]        (defaults: small, 2000, "1 2 3")
#
# 1. The corpus: espeak-ng (all cores) speaks the 1,200 training sentences of bench/intelligibility/data (run
#    bench/intelligibility/prepare.sh on a connected machine first) as the intelligibility benchmark's held-out
#    run does (en-us, 165 words a minute); PRECISION_DATA=DIR trains on another dataset instead.
# 2. One config: configs/PRESET.yaml read as espeak-ng phonemes, batch 32 in 4 buckets, clips up to 6 s, 5% of
#    the rows held out for validation (the same rows for every run), a cosine schedule of STEPS steps (200 of
#    warm-up), validation every STEPS/4 steps, one checkpoint at the end.
# 3. The runs: that config for STEPS steps with training.precision fp32 and mixed_fp16, once per seed of SEEDS
#    (training.seed: initialisation, dropout and batch order; a seed's two runs start from the same weights
#    and see the same batches), PRECISION_JOBS (3) at a time on the one GPU, after a one-step run that fills
#    the feature cache they share.
# 4. precision-summary.py: per run its final validation loss and its mean training loss over the last 10% of
#    the steps; per precision the mean and the range over the seeds; the verdict: the mixed runs' mean within
#    the float32 runs' spread (max - min) of the float32 mean, and how many mixed runs lie inside the float32
#    runs' range.
# Everything comes back as one archive, OUT/precision.tar.gz (each run's trainer JSON, log and metrics, the
# config, summary.txt, host.txt, nvidia-smi's log); the weights stay on the host.
#
# Rehearsal on a CPU (the figures of a few steps mean nothing; it proves the script runs):
#   XTTS_CLI="node src/cli/run.js" XTTS_BENCH_BACKEND=wasm PRECISION_JOBS=2 bash bench/precision.sh /tmp/p tiny 4 "1 2"
# (the wasm backend has no mixed_fp16: the rehearsal's mixed runs are refused, and the summary says so).
set -u
start=$(date +%s%N)
out=${1:?usage: precision.sh OUT [PRESET] [STEPS] [SEEDS]}
preset=${2:-small}
steps=${3:-2000}
seeds=${4:-1 2 3}
jobs=${PRECISION_JOBS:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
if [[ ! -f $root/configs/$preset.yaml ]]; then
  echo "precision.sh: no configs/$preset.yaml (tiny, small, normal, big)" >&2
  exit 2
fi
if [[ ! $steps =~ ^[1-9][0-9]*$ ]]; then
  echo "precision.sh: STEPS must be a positive whole number, not '$steps'" >&2
  exit 2
fi
source "$here/gpu-host.sh"
gpu_setup
mkdir -p "$work/runs"
elapsed_s() { echo "$((($(date +%s%N) - start) / 1000000000))"; }
log() { echo "$*" >>"$work/summary.txt"; echo "precision.sh [$(elapsed_s) s] $*" >&2; }
{
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  nproc
  echo "preset $preset; steps $steps; seeds $seeds; jobs $jobs; backend $backend; cli $x"
} >"$work/host.txt" 2>&1
smi_sample "$work/smi.csv" 1000
pack() {
  smi_stop
  (cd "$work" && tar -czf "$out/precision.tar.gz" --exclude='*/checkpoints' --exclude='*.sqlite*' \
    --exclude='*/eval' --exclude=data ./*)
}
trap 'log "stopped by a signal"; pack; exit 143' TERM INT

data=${PRECISION_DATA:-}
if [[ -z $data ]]; then
  sentences=$here/intelligibility/data/train.tsv
  if [[ ! -f $sentences ]]; then
    echo "precision.sh: $sentences is missing: run bench/intelligibility/prepare.sh first" >&2
    exit 2
  fi
  data=$work/data
  t=$(date +%s%N)
  speak_sentences "$sentences" "$data"
  log "corpus: $(ls "$data/wavs" | wc -l) clips spoken in $((($(date +%s%N) - t) / 1000000)) ms"
fi

cat >"$work/precision.yaml" <<EOF
# bench/precision.sh: $preset, $steps steps, espeak-ng phonemes.
extends: $root/configs/$preset.yaml
dataset:
  path: $data
  validation_fraction: 0.05
text:
  cleaners: english
  tokenizer: phonemes
  languages: [en]
limits:
  max_audio_s: 6
batching:
  batch_size: 32
  buckets: 4
  reference_frames: 96
pipeline:
  workers: auto
  cache:
    path: $work/cache.sqlite
training:
  max_steps: $steps
  schedule:
    name: warmup_cosine
    warmup_steps: $((steps < 1000 ? steps / 5 : 200))
  log_every: $((steps < 200 ? 1 : steps / 200))
  validate_every: $(((steps + 3) / 4))
  checkpoint_every: $steps
  eval_every: $steps
  keep_checkpoints: 1
EOF

train() { # name precision seed [steps]
  local t=$(date +%s%N) rc
  $x train --config "$work/precision.yaml" --output "$work/runs/$1" --backend "$backend" --json \
    --set "training.precision=$2" --set "training.seed=$3" ${4:+--max-steps "$4"} \
    >"$work/runs/$1.json" 2>"$work/runs/$1.log"
  rc=$?
  log "$1 rc=$rc in $((($(date +%s%N) - t) / 1000000)) ms"
}
train fill fp32 1 1
mv "$work/runs/fill.json" "$work/runs/fill.log" "$work/" && rm -rf "$work/runs/fill"
export -f train log elapsed_s
export x backend work start
for precision in fp32 mixed_fp16; do
  for seed in $seeds; do echo "$precision-$seed $precision $seed"; done
done | xargs -P "$jobs" -L 1 bash -c 'train "$0" "$1" "$2"'
log "runs done"
python3 "$here/precision-summary.py" "$work/runs" "$steps" | tee -a "$work/summary.txt"
log "total"
pack
