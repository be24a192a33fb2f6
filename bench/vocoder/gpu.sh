#!/usr/bin/env bash
# The vocoder benchmark's GPU half (bench/vocoder/README.md), on a GPU host with the bundle and the runtime
# folder beside the checkout (npm run bundle && npm run gpu-runtime) and bench/intelligibility/data made
# by bench/intelligibility/prepare.sh:
#
#   bash bench/vocoder/gpu.sh OUT [MINUTES] [CONFIG]
#
# espeak-ng speaks the intelligibility benchmark's 1,200 training sentences (the training set) and its 100
# held-out sentences (the test set); a vocoder trains for at most MINUTES (default 7) on the first, its
# cosine schedule sized by an 80-step calibration run (lib.sh calibrated_steps); then the held-out
# clips' ground-truth mels are vocoded by it (batches of 32, its real-time factor printed) and by Griffin-Lim,
# beside the processed recordings. The evidence comes back as one archive split in parts under 15 MiB:
# OUT/vocoder.tar.gz.NN
# (WAVs of the three, the run's JSON, log, run.sqlite, TensorBoard file and checkpoint states, the host, nvidia-smi's
# log). Score it with bench/vocoder/score.sh. VOCODER_ARGS adds --set overrides to the vocoder's runs;
# VOCODER_STEPS fixes the schedule's length; VOCODER_DATA names another folder of the two TSVs.
set -u
start=$(date +%s%N)
out=${1:?usage: gpu.sh OUT [MINUTES] [CONFIG]}
minutes=${2:-7}
here=$(cd "$(dirname "$0")" && pwd)
config=${3:-$here/heldout.yaml}
# shellcheck source=lib.sh
source "$here/lib.sh"

t0=$(date +%s%N)
speak_training_set
speak "$data/heldout.tsv" "$work/heldout"
echo "spoken: $(ls "$work/train-data/wavs" | wc -l) training and $(ls "$work/heldout" | wc -l) held-out clips" \
  "in $(since "$t0") ms" >>"$work/summary.txt"

nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 \
  >"$work/smi.csv" 2>/dev/null &
smi=$!
# shellcheck disable=SC2086 # VOCODER_ARGS: extra --set overrides for both runs (experiments)
steps=${VOCODER_STEPS:-$(calibrated_steps vocoder "$minutes" 200 --config "$config" --dataset "$work/train-data" \
  ${VOCODER_ARGS:-})}

t0=$(date +%s%N)
$x train --config "$config" --dataset "$work/train-data" --output "$work/vocoder" --max-minutes "$minutes" \
  --backend "$backend" \
  --set training.max_steps="$steps" ${VOCODER_ARGS:-} --json >"$work/train.json" 2>"$work/train.log"
echo "train rc=$? in $(since "$t0") ms" >>"$work/summary.txt"
kill $smi 2>/dev/null

t0=$(date +%s%N)
$x vocode --vocoder "$work/vocoder" --in "$work/heldout" --out-dir "$work/neural" --reference-dir "$work/real" \
  --backend "$backend" \
  --batch-size 32 --json >"$work/vocode-neural.json" 2>"$work/vocode-neural.log"
echo "vocode neural rc=$? in $(since "$t0") ms" >>"$work/summary.txt"
t0=$(date +%s%N)
$x vocode --config "$config" --in "$work/heldout" --out-dir "$work/griffin-lim" --json \
  >"$work/vocode-gl.json" 2>"$work/vocode-gl.log"
echo "vocode griffin-lim rc=$? in $(since "$t0") ms" >>"$work/summary.txt"
echo "total $(since "$start") ms" >>"$work/summary.txt"

# One archive, split: everything but the optimizer's moments.
(cd "$work" && tar -czf - --exclude='*.safetensors' real neural griffin-lim vocoder train.json train.log \
  vocoder-calibration.json vocoder-calibration.log vocode-neural.json vocode-neural.log vocode-gl.json vocode-gl.log \
  summary.txt host.txt smi.csv 2>/dev/null) |
  split -b 15m -d - "$out/vocoder.tar.gz."
cat "$work/host.txt" "$work/summary.txt"
tail -n 3 "$work/train.log" "$work/vocode-neural.log" "$work/vocode-gl.log"
ls -la "$out"
