#!/usr/bin/env bash
# The whole chain, text to WAV, with xtts's own neural vocoder: what a user hears from a trained model. On a
# GPU host with the bundle and the runtime folder beside the checkout (npm run bundle && npm run gpu-runtime)
# and bench/intelligibility/data made by bench/intelligibility/prepare.sh:
#
#   bash bench/vocoder/chain.sh OUT [ACOUSTIC_MINUTES] [VOCODER_MINUTES]
#
# espeak-ng speaks the intelligibility benchmark's 1,200 training sentences; a vocoder
# (bench/vocoder/heldout.yaml, vocoder-small) trains on them for VOCODER_MINUTES (default 2.5), then the
# acoustic model (bench/intelligibility/heldout.yaml: tiny, phonemes) for ACOUSTIC_MINUTES (default 4.5),
# each alone on the GPU with a cosine schedule sized by a calibration run (lib.sh calibrated_steps). The
# acoustic model then speaks the 100 held-out sentences through Griffin-Lim, through the vocoder
# (synthesize --vocoder) and through the vocoder fine-tuned on its predicted mels (CHAIN_FINETUNE_STEPS,
# default 1,500; 0 leaves it out). The evidence comes back as one archive split in parts under 15 MiB,
# OUT/chain.tar.gz.NN (the WAVs, both runs' JSON, logs and run.sqlite, the host, nvidia-smi's log). Score it
# with bench/vocoder/chain-score.sh. CHAIN_ACOUSTIC_STEPS and CHAIN_VOCODER_STEPS fix the schedules.
set -u
start=$(date +%s%N)
out=${1:?usage: chain.sh OUT [ACOUSTIC_MINUTES] [VOCODER_MINUTES]}
acoustic_minutes=${2:-4.5}
vocoder_minutes=${3:-2.5}
here=$(cd "$(dirname "$0")" && pwd)
acoustic_config=$here/../intelligibility/heldout.yaml
vocoder_config=$here/heldout.yaml
# shellcheck source=lib.sh
source "$here/lib.sh"

t0=$(date +%s%N)
speak_training_set
echo "spoken: $(ls "$work/train-data/wavs" | wc -l) training clips in $(since "$t0") ms" >>"$work/summary.txt"
cut -f2 "$data/heldout.tsv" >"$work/heldout.txt"

nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500 \
  >"$work/smi.csv" 2>/dev/null &
smi=$!
train() { # NAME CONFIG MINUTES STEPS [train args...]
  local t0=$(date +%s%N)
  $x train --config "$2" --dataset "$work/train-data" --output "$work/$1" --max-minutes "$3" --backend "$backend" \
    --set training.max_steps="$4" --set training.checkpoint_every="$4" --set training.eval_every=100000000 \
    "${@:5}" --json >"$work/$1-train.json" 2>"$work/$1-train.log"
  echo "$1 train rc=$? in $(since "$t0") ms" >>"$work/summary.txt"
}
steps=${CHAIN_VOCODER_STEPS:-$(calibrated_steps vocoder "$vocoder_minutes" 20 --config "$vocoder_config" \
  --dataset "$work/train-data")}
train vocoder "$vocoder_config" "$vocoder_minutes" "$steps"
steps=${CHAIN_ACOUSTIC_STEPS:-$(calibrated_steps acoustic "$acoustic_minutes" 150 --config "$acoustic_config" \
  --dataset "$work/train-data")}
train acoustic "$acoustic_config" "$acoustic_minutes" "$steps"
# Fine-tuning (HiFi-GAN's second stage): the vocoder's weights, trained on the acoustic model's teacher-forced
# mels of the same clips for CHAIN_FINETUNE_STEPS steps (0: none) at a lower learning rate.
finetune_steps=${CHAIN_FINETUNE_STEPS:-1500}
if ((finetune_steps > 0)); then
  train finetuned "$vocoder_config" 2 "$finetune_steps" --set vocoder.init_from="$work/vocoder" \
    --set vocoder.finetune_acoustic="$work/acoustic" --set training.learning_rate=3e-4 \
    --set training.schedule.warmup_steps=50
fi
speak_with() { # NAME [synthesize args...]
  local name=$1 t0=$(date +%s%N)
  shift
  mkdir -p "$work/$name"
  $x synthesize --checkpoint "$work/acoustic" --texts "$work/heldout.txt" --out-dir "$work/$name" \
    --backend "$backend" --batch-size 32 --json "$@" >"$work/$name-synthesize.json" 2>"$work/$name-synthesize.log"
  echo "$name synthesize rc=$? in $(since "$t0") ms" >>"$work/summary.txt"
}
speak_with griffin-lim
speak_with neural --vocoder "$work/vocoder"
((finetune_steps > 0)) && speak_with finetuned --vocoder "$work/finetuned"
kill $smi 2>/dev/null
echo "total $(since "$start") ms" >>"$work/summary.txt"

# One archive, split: everything but the weights and the optimizer's moments.
(cd "$work" && tar -czf - --exclude='*.safetensors' --exclude='*.tfevents.*' griffin-lim neural finetuned \
  acoustic/run.sqlite vocoder/run.sqlite finetuned/run.sqlite ./*-train.json ./*-train.log \
  ./*-calibration.json ./*-calibration.log \
  ./*-synthesize.json ./*-synthesize.log summary.txt host.txt smi.csv 2>/dev/null) |
  split -b 15m -d - "$out/chain.tar.gz."
cat "$work/host.txt" "$work/summary.txt"
tail -n 2 "$work/acoustic-train.log" "$work/vocoder-train.log" "$work/neural-synthesize.log"
ls -la "$out"
