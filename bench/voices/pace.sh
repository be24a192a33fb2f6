#!/usr/bin/env bash
# Does a cloned voice keep its pace? Two espeak-ng voices that differ in nothing but their rate (en-us at SLOW and
# FAST words a minute, default 110 and 230) speak the first 2·CLIPS (120) training sentences of
# bench/intelligibility/data alternately; the tiny model trains on them twice for at most MINUTES each (default 9),
# with model.speaker_rate and without, on BACKEND (default wasm: this runs on a CPU); then each run speaks the last
# 3 held-out sentences cloned from a clip of each voice, and the script prints the seconds each voice took and
# their ratio beside espeak-ng's own (whose renderings keep their edge silences, which training trims).
#
#   bash bench/voices/pace.sh OUT [MINUTES]        (env: PACE_BACKEND, PACE_SLOW, PACE_FAST, PACE_CLIPS, XTTS_CLI)
#
# Both runs train at once (one process each). Needs espeak-ng and sox (soxi); writes OUT/pace.txt and leaves the
# runs and WAVs in OUT.
set -euo pipefail
out=${1:?usage: pace.sh OUT [MINUTES]}
minutes=${2:-9}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../intelligibility/data
x=${XTTS_CLI:-node $here/../../src/cli/run.js}
backend=${PACE_BACKEND:-wasm}
slow=${PACE_SLOW:-110}
fast=${PACE_FAST:-230}
clips=${PACE_CLIPS:-60}
if [[ ! -f $data/train.tsv ]]; then
  echo "pace.sh: $data/train.tsv is missing: run bench/intelligibility/prepare.sh first" >&2
  exit 2
fi
mkdir -p "$out/data/wavs"
out=$(cd "$out" && pwd)
head -n $((2 * clips)) "$data/train.tsv" | awk -F'\t' -v s="$slow" -v f="$fast" \
  '{ print $1 "\t" (NR % 2 ? "slow" : "fast") "\t" (NR % 2 ? s : f) "\t" $2 }' >"$out/tasks.tsv"
while IFS=$'\t' read -r id voice rate text; do
  espeak-ng -v en-us -s "$rate" -w "$out/data/wavs/$id.wav" "$text"
  echo "$id|$text|$text|$voice"
done <"$out/tasks.tsv" >"$out/data/metadata.csv"
tail -n 3 "$data/heldout.tsv" | cut -f2 >"$out/texts.txt"
cat >"$out/pace.yaml" <<YAML
extends: $here/../../configs/tiny.yaml
dataset:
  path: data
  format: ljspeech_multispeaker
  validation_fraction: 0.05
batching:
  batch_size: 8
  buckets: 2
  reference_frames: 64
training:
  learning_rate: 2e-3
  max_steps: 500
  schedule:
    name: warmup_cosine
    warmup_steps: 50
  log_every: 50
  validate_every: 100000
  checkpoint_every: 500
  eval_every: 100000
YAML
for rate in on off; do
  flag=()
  [[ $rate == on ]] && flag=(--set model.speaker_rate=true)
  $x train --config "$out/pace.yaml" --output "$out/run-$rate" --backend "$backend" --max-minutes "$minutes" \
    ${flag[@]+"${flag[@]}"} --json >"$out/train-$rate.json" 2>"$out/train-$rate.log" &
done
wait
# The references: the third and fourth clips (one of each voice; not among the texts spoken).
for rate in on off; do
  for voice in slow fast; do
    ref=$(awk -F'|' -v v="$voice" '$4 == v { n++; if (n == 2) { print $1; exit } }' "$out/data/metadata.csv")
    mkdir -p "$out/spoken-$rate-$voice"
    $x synthesize --checkpoint "$out/run-$rate" --texts "$out/texts.txt" --reference "$out/data/wavs/$ref.wav" \
      --out-dir "$out/spoken-$rate-$voice" --backend "$backend" --json >"$out/synth-$rate-$voice.json" \
      2>"$out/synth-$rate-$voice.log"
  done
done
{
  for voice in slow fast; do
    rate=$([[ $voice == slow ]] && echo "$slow" || echo "$fast")
    total=0
    while read -r text; do
      espeak-ng -v en-us -s "$rate" -w "$out/espeak.wav" "$text"
      total=$(awk -v a="$total" -v b="$(soxi -D "$out/espeak.wav")" 'BEGIN { print a + b }')
    done <"$out/texts.txt"
    echo "espeak-ng $voice ($rate words a minute): $total s"
  done
  python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for rate in ('on', 'off'):
    train = json.load(open(f'{out}/train-{rate}.json'))['result']
    secs = {}
    for voice in ('slow', 'fast'):
        r = json.load(open(f'{out}/synth-{rate}-{voice}.json'))['result']
        secs[voice] = sum(u['durationS'] for u in r['utterances'])
    print(f"speaker_rate {rate:3} ({train['steps']} steps, {train['stoppedBy']}): slow voice {secs['slow']:.2f} s, "
          f"fast voice {secs['fast']:.2f} s, ratio {secs['slow'] / secs['fast']:.2f}")
PY
} | tee "$out/pace.txt"
