#!/usr/bin/env bash
# Does a cloned voice keep its pace? Two espeak-ng voices that differ in nothing but their rate (en-us at SLOW and
# FAST words a minute, default 110 and 230) speak the first 2·CLIPS (120) training sentences of
# bench/intelligibility/data alternately; the tiny model trains on them twice for at most MINUTES each (default 9),
# with model.speaker_rate alone (`latent`: the pace read through the conditioning latents) and with reference_rate
# too (`measured`: the clip's measured rate moves every duration), on BACKEND (default wasm: this runs on a CPU); then
# each run speaks the last 3 held-out sentences cloned from a clip of each voice and of a third, unseen one at MID
# words a minute (default 160; the slow voice's reference sentence), and the script prints the seconds each voice
# took and where the unseen voice's pace falls between the two (0: the fast voice's, 1: the slow one's) beside
# espeak-ng's own (whose renderings keep their edge silences, which training trims).
#
# PACE_SLOW_VOICE, PACE_FAST_VOICE and PACE_MID_VOICE (espeak-ng voices, default en-us) give the voices timbres of their
# own: an unseen voice with the slow voice's timbre at the fast voice's rate is one the conditioning encoder takes
# for the slow voice.
#
#   bash bench/voices/pace.sh OUT [MINUTES]  (env: PACE_BACKEND, PACE_SLOW, PACE_MID, PACE_FAST, PACE_CLIPS, XTTS_CLI,
#                                            PACE_SLOW_VOICE, PACE_MID_VOICE, PACE_FAST_VOICE)
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
mid=${PACE_MID:-160}
clips=${PACE_CLIPS:-60}
declare -A timbre=([slow]=${PACE_SLOW_VOICE:-en-us} [mid]=${PACE_MID_VOICE:-en-us} [fast]=${PACE_FAST_VOICE:-en-us})
if [[ ! -f $data/train.tsv ]]; then
  echo "pace.sh: $data/train.tsv is missing: run bench/intelligibility/prepare.sh first" >&2
  exit 2
fi
mkdir -p "$out/data/wavs"
out=$(cd "$out" && pwd)
head -n $((2 * clips)) "$data/train.tsv" | awk -F'\t' -v s="$slow" -v f="$fast" \
  '{ print $1 "\t" (NR % 2 ? "slow" : "fast") "\t" (NR % 2 ? s : f) "\t" $2 }' >"$out/tasks.tsv"
while IFS=$'\t' read -r id voice rate text; do
  espeak-ng -v "${timbre[$voice]}" -s "$rate" -w "$out/data/wavs/$id.wav" "$text"
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
for rate in latent measured; do
  flag=(--set model.speaker_rate=true)
  [[ $rate == measured ]] && flag+=(--set model.reference_rate=true)
  $x train --config "$out/pace.yaml" --output "$out/run-$rate" --backend "$backend" --max-minutes "$minutes" \
    "${flag[@]}" --json >"$out/train-$rate.json" 2>"$out/train-$rate.log" &
done
wait
# The references: the third and fourth clips (one of each voice; not among the texts spoken), and the third clip's
# sentence spoken by the unseen voice.
ref_of() { awk -F'|' -v v="$1" '$4 == v { n++; if (n == 2) { print $1; exit } }' "$out/data/metadata.csv"; }
mid_text=$(awk -F'|' -v id="$(ref_of slow)" '$1 == id { print $2 }' "$out/data/metadata.csv")
espeak-ng -v "${timbre[mid]}" -s "$mid" -w "$out/mid-reference.wav" "$mid_text"
for rate in latent measured; do
  for voice in slow mid fast; do
    ref=$out/mid-reference.wav
    [[ $voice != mid ]] && ref=$out/data/wavs/$(ref_of "$voice").wav
    mkdir -p "$out/spoken-$rate-$voice"
    $x synthesize --checkpoint "$out/run-$rate" --texts "$out/texts.txt" --reference "$ref" \
      --out-dir "$out/spoken-$rate-$voice" --backend "$backend" --json >"$out/synth-$rate-$voice.json" \
      2>"$out/synth-$rate-$voice.log"
  done
done
{
  for voice in slow mid fast; do
    rate=$([[ $voice == slow ]] && echo "$slow" || ([[ $voice == mid ]] && echo "$mid" || echo "$fast"))
    total=0
    while read -r text; do
      espeak-ng -v "${timbre[$voice]}" -s "$rate" -w "$out/espeak.wav" "$text"
      total=$(awk -v a="$total" -v b="$(soxi -D "$out/espeak.wav")" 'BEGIN { print a + b }')
    done <"$out/texts.txt"
    echo "espeak-ng $voice (${timbre[$voice]}, $rate words a minute): $total s"
  done | tee "$out/espeak.txt"
  python3 - "$out" <<'PY'
import json, math, re, sys
out = sys.argv[1]
def between(secs):
    # Where the unseen voice's pace falls between the fast voice's (0) and the slow one's (1), in log seconds.
    return math.log(secs['mid'] / secs['fast']) / math.log(secs['slow'] / secs['fast'])
espeak = {m[1]: float(m[2]) for m in re.finditer(r'espeak-ng (\w+) .*: ([\d.]+) s', open(f'{out}/espeak.txt').read())}
print(f"espeak-ng: slow / fast {espeak['slow'] / espeak['fast']:.2f}, unseen voice at {between(espeak):.2f}")
for rate in ('latent', 'measured'):
    train = json.load(open(f'{out}/train-{rate}.json'))['result']
    secs = {}
    for voice in ('slow', 'mid', 'fast'):
        r = json.load(open(f'{out}/synth-{rate}-{voice}.json'))['result']
        secs[voice] = sum(u['durationS'] for u in r['utterances'])
    print(f"{rate:8} ({train['steps']} steps, {train['stoppedBy']}): slow {secs['slow']:.2f} s, "
          f"unseen {secs['mid']:.2f} s, fast {secs['fast']:.2f} s; slow / fast {secs['slow'] / secs['fast']:.2f}, "
          f"unseen at {between(secs):.2f}")
PY
} | tee "$out/pace.txt"
