#!/usr/bin/env bash
# The GPU half of the multilingual benchmark (bench/languages/README.md), on a GPU host with the bundle
# and the runtime folder beside the checkout (npm run bundle && npm run gpu-runtime) and
# bench/languages/data made by bench/languages/prepare.sh:
#
#   bash bench/languages/gpu.sh OUT [MINUTES]
#
# espeak-ng speaks the 700 English (en-us), 700 German (de) and 700 Spanish (es) training sentences (each
# as xtts's cleaner reads it: the .spoken.tsv files; all at -s 165, all cores) into one dataset whose
# metadata gives each row its language (id|text|text|espeak-LANG|LANG, the written text with its digits);
# languages.yaml (the tiny model, phonemes) trains on it for at most MINUTES (default 6), its cosine
# schedule sized to what fits in that time (fit_steps below); then each language's held-out sentences are
# spoken with --language L, and, as the voice, --reference the language's first training clip of 3 to 5
# seconds (espeak-ng's voice for that language; references.txt names it). 7.1 minutes on an H200 with
# MINUTES 5.5 (2026-11-29).
# The evidence comes back as one archive, OUT/languages.tar: per language a compressed archive of the WAVs
# (line-NNNN.wav for the NNNNth held-out sentence) and synthesis.json, the run (minus checkpoints, with
# the trainer's and calibration's JSON and logs), the held-out TSVs that were spoken, summary.txt (each
# phase's time), host.txt and nvidia-smi's log; the model's weights (no optimizer moments) lie beside it
# in OUT/languages-checkpoint.tar.gz (a file comes back from a GPU host only under 16 MiB: should
# languages.tar be larger, it is split into languages.tar.00, .01, ...; score.sh joins them).
# Environment: XTTS_CLI (default node bundle/xtts.cjs), XTTS_BENCH_BACKEND (default webgpu; wasm: a CPU
# rehearsal), LANGUAGES_STEPS (the schedule's length, no calibration run), LANGUAGES_CALIBRATION_STEPS
# (default 60), LANGUAGES_HELDOUT (speak only the first N held-out sentences of each language),
# LANGUAGES_ARGS (extra --set overrides). Score with score.sh.
set -u
start=$(date +%s%N)
out=${1:?usage: gpu.sh OUT [MINUTES]}
minutes=${2:-6}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
config=$here/languages.yaml
languages=(en de es)
declare -A voice=([en]=en-us [de]=de [es]=es)
rate=165
source "$here/../gpu-host.sh"
gpu_setup
since() { echo "$((($(date +%s%N) - $1) / 1000000))"; }
for lang in "${languages[@]}"; do
  for f in "$lang-train.spoken.tsv" "$lang-train.tsv" "$lang-heldout.tsv" "$lang-heldout.spoken.tsv"; do
    [[ -f $data/$f ]] || { echo "gpu.sh: $data/$f is missing: run bench/languages/prepare.sh first" >&2; exit 2; }
  done
done
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; espeak-ng --version; } \
  >"$work/host.txt" 2>&1
smi_sample "$work/smi.csv" 500

# The dataset: espeak-ng speaks what the cleaner reads (spoken.tsv), the metadata holds the written text.
t0=$(date +%s%N)
mkdir -p "$work/data/wavs"
for lang in "${languages[@]}"; do
  tr '\n' '\0' <"$data/$lang-train.spoken.tsv" | xargs -0 -P "$(nproc)" -n 1 sh -c \
    'espeak-ng -v "$1" -s "$2" -w "$0/${3%%	*}.wav" "${3#*	}"' "$work/data/wavs" "${voice[$lang]}" "$rate"
  awk -F'\t' -v l="$lang" '{print $1 "|" $2 "|" $2 "|espeak-" l "|" l}' "$data/$lang-train.tsv" \
    >>"$work/data/metadata.csv"
done
echo "dataset: $(ls "$work/data/wavs" | wc -l) clips spoken in $(since "$t0") ms" >>"$work/summary.txt"

# The held-out texts (the first LANGUAGES_HELDOUT of each language) and each language's voice reference: its
# first training clip of 3 to 5 s (espeak-ng's 16-bit 22,050 Hz mono: 44,100 bytes a second).
for lang in "${languages[@]}"; do
  head -n "${LANGUAGES_HELDOUT:-1000000}" "$data/$lang-heldout.tsv" >"$work/$lang-heldout.tsv"
  head -n "${LANGUAGES_HELDOUT:-1000000}" "$data/$lang-heldout.spoken.tsv" >"$work/$lang-heldout.spoken.tsv"
  cut -f2 "$work/$lang-heldout.tsv" >"$work/$lang-heldout.txt"
  ref=$(cut -f1 "$data/$lang-train.tsv" | while read -r id; do
    bytes=$(stat -c %s "$work/data/wavs/$id.wav")
    if ((bytes >= 3 * 44100 && bytes <= 5 * 44100)); then echo "$id"; break; fi
  done)
  echo "$lang ${ref:-$lang-0001}.wav" >>"$work/references.txt"
done

cache=(--set pipeline.cache.path="$work/cache.sqlite")
train_args=(--config "$config" --dataset "$work/data" "${cache[@]}")
# Steps that fit MINUTES of training: a 60-step run of the same config measures the median step, and the
# schedule gets 92% of MINUTES at that pace (the rest: start-up and the eager steps that record the step
# capture's replay), as in bench/intelligibility/gpu.sh. The calibration run also fills the feature cache
# (phonemes, log-mels) that the training run then reads.
fit_steps() {
  local t=$(date +%s%N) ms
  # shellcheck disable=SC2086 # LANGUAGES_ARGS: extra --set overrides
  $x train "${train_args[@]}" --output "$work/calibration" \
    --max-steps "${LANGUAGES_CALIBRATION_STEPS:-60}" --backend "$backend" --json \
    --set training.eval_every=1000000 --set training.validate_every=1000000 \
    --set training.checkpoint_every=1000000 ${LANGUAGES_ARGS:-} \
    >"$work/calibration.json" 2>"$work/calibration.log"
  ms=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["timing"]["stepMsMedian"])' \
    "$work/calibration.json" 2>/dev/null)
  echo "calibration: median step ${ms:-unknown} ms in $(since "$t") ms" >>"$work/summary.txt"
  rm -rf "$work/calibration"
  [[ -n $ms ]] && awk -v m="$minutes" -v ms="$ms" 'BEGIN { printf "%d", 0.92 * m * 60000 / ms }'
}
steps=${LANGUAGES_STEPS:-$(fit_steps)}
steps=${steps:-$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 380 }')}
echo "schedule: $steps steps" >>"$work/summary.txt"

t0=$(date +%s%N)
# shellcheck disable=SC2086
$x train "${train_args[@]}" --output "$work/languages" --max-minutes "$minutes" --backend "$backend" --json \
  --set training.max_steps="$steps" --set training.eval_every="$steps" --set training.checkpoint_every="$steps" \
  ${LANGUAGES_ARGS:-} >"$work/train.json" 2>"$work/train.log"
rc=$?
echo "train rc=$rc in $(since "$t0") ms" >>"$work/summary.txt"
python3 - "$work/train.json" >>"$work/summary.txt" 2>/dev/null <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))['result']
print(f"trained {r['steps']} steps, stopped by {r['stoppedBy']}, median step {r['timing']['stepMsMedian']:.1f} ms")
PY

for lang in "${languages[@]}"; do
  t0=$(date +%s%N)
  mkdir -p "$work/$lang-spoken"
  ref=$(awk -v l="$lang" '$1 == l {print $2}' "$work/references.txt")
  $x synthesize --checkpoint "$work/languages" --language "$lang" --texts "$work/$lang-heldout.txt" \
    --out-dir "$work/$lang-spoken" --reference "$work/data/wavs/$ref" --backend "$backend" --batch-size 32 --json \
    >"$work/$lang-synthesize.json" 2>"$work/$lang-synthesize.log"
  echo "$lang synthesize rc=$? ($(ls "$work/$lang-spoken" | grep -c '\.wav$') WAVs, reference $ref)" \
    "in $(since "$t0") ms" >>"$work/summary.txt"
done
smi_stop

# One archive: each language's WAVs and the run compressed (xz where there is one), the rest as it is.
t0=$(date +%s%N)
if command -v xz >/dev/null; then zip=(xz -T0 -6) ext=xz; else zip=(gzip -6) ext=gz; fi
pack=$work/pack
mkdir -p "$pack"
for lang in "${languages[@]}"; do
  (cd "$work" && tar -cf - "$lang-spoken" "$lang-synthesize.json" "$lang-synthesize.log" | "${zip[@]}" \
    >"$pack/$lang-spoken.tar.$ext")
  cp "$work/$lang-heldout.tsv" "$work/$lang-heldout.spoken.tsv" "$pack/"
done
(cd "$work" && tar -cf - --exclude=languages/checkpoints languages train.json train.log \
  $(ls calibration.json calibration.log 2>/dev/null) | "${zip[@]}" >"$pack/run.tar.$ext")
(cd "$work" && tar -czf "$out/languages-checkpoint.tar.gz" --exclude='*/optimizer.*' languages/checkpoints \
  2>/dev/null)
echo "packed in $(since "$t0") ms" >>"$work/summary.txt"
echo "total $(since "$start") ms" >>"$work/summary.txt"
cp "$work/summary.txt" "$work/host.txt" "$work/smi.csv" "$work/references.txt" "$pack/"
rm -f "$out"/languages.tar "$out"/languages.tar.[0-9][0-9]
(cd "$pack" && tar -cf "$out/languages.tar" ./*)
if (($(stat -c %s "$out/languages.tar") > 15 * 1024 * 1024)); then
  split -b 15m -d "$out/languages.tar" "$out/languages.tar." && rm "$out/languages.tar"
fi
cat "$work/host.txt" "$work/references.txt" "$work/summary.txt"
tail -n 3 "$work/train.log" "$work/en-synthesize.log"
ls -la "$out"
