#!/usr/bin/env bash
# Does adversarial training make the vocoder sound closer to the recording than the reconstruction losses
# alone, for the same GPU time? On a GPU host (the bundle, the runtime folder and bench/intelligibility/data
# beside the checkout, as gpu.sh), in one command:
#
#   bash bench/vocoder/gpu-gan.sh OUT [BASE_MINUTES] [MINUTES]
#
# A vocoder trains BASE_MINUTES (default 2) on the reconstruction losses (the base); two runs then start from
# its weights (vocoder.init_from) for MINUTES each (default 2) at learning rate 3e-4: one on the same losses
# (`plain`), one against the discriminators (`adversarial`: ADVERSARIAL_ARGS, default the period discriminators
# alone, `resolution_channels=0`: gpu-adversarial.sh measures what each set costs a step). Each schedule is
# BASE_STEPS / PLAIN_STEPS / GAN_STEPS steps when set, else sized to its minutes by an 80-step calibration run.
# The held-out clips' ground-truth mels are vocoded by both and by Griffin-Lim; the evidence comes back as
# OUT/vocoder-gan.tar.gz.NN (split under 15 MiB); score it with bench/vocoder/score-gan.sh.
set -u
start=$(date +%s%N)
out=${1:?usage: gpu-gan.sh OUT [BASE_MINUTES] [MINUTES]}
base_minutes=${2:-2}
minutes=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
config=$here/heldout.yaml
# shellcheck source=lib.sh
source "$here/lib.sh"
speak_training_set
speak "$data/heldout.tsv" "$work/heldout"
gan=${ADVERSARIAL_ARGS:-"--set vocoder.adversarial.enabled=true --set vocoder.adversarial.resolution_channels=0"}
common=(--config "$config" --dataset "$work/train-data" --backend "$backend")

train() { # NAME MINUTES STEPS args...
  local name=$1 m=$2 steps=$3 t0=$(date +%s%N)
  shift 3
  # shellcheck disable=SC2086 # VOCODER_ARGS: --set overrides
  [[ -n $steps ]] || steps=$(calibrated_steps "$name" "$m" 100 "${common[@]}" ${VOCODER_ARGS:-} "$@")
  # shellcheck disable=SC2086
  $x train "${common[@]}" --output "$work/$name" --max-minutes "$m" --set training.max_steps="$steps" \
    ${VOCODER_ARGS:-} "$@" --json >"$work/$name.json" 2>"$work/$name.log"
  echo "$name: rc=$? ($steps steps scheduled) in $(since "$t0") ms" >>"$work/summary.txt"
}
train base "$base_minutes" "${BASE_STEPS:-}"
continued=(--set vocoder.init_from="$work/base" --set training.learning_rate=3e-4)
train plain "$minutes" "${PLAIN_STEPS:-}" "${continued[@]}"
# shellcheck disable=SC2086 # gan: --set overrides
train adversarial "$minutes" "${GAN_STEPS:-}" "${continued[@]}" $gan

for name in plain adversarial; do
  t0=$(date +%s%N)
  $x vocode --vocoder "$work/$name" --in "$work/heldout" --out-dir "$work/wav-$name" --reference-dir "$work/real" \
    --backend "$backend" --batch-size 32 --overwrite --json >"$work/vocode-$name.json" 2>"$work/vocode-$name.log"
  echo "vocode $name rc=$? in $(since "$t0") ms" >>"$work/summary.txt"
done
t0=$(date +%s%N)
$x vocode --config "$config" --in "$work/heldout" --out-dir "$work/griffin-lim" --json \
  >"$work/vocode-gl.json" 2>"$work/vocode-gl.log"
echo "vocode griffin-lim rc=$? in $(since "$t0") ms; total $(since "$start") ms" >>"$work/summary.txt"
(cd "$work" && tar -czf - --exclude='*.safetensors' real wav-plain wav-adversarial griffin-lim base plain adversarial \
  ./*.json ./*.log summary.txt host.txt 2>/dev/null) | split -b 15m -d - "$out/vocoder-gan.tar.gz."
cat "$work/host.txt" "$work/summary.txt"
ls -la "$out"
