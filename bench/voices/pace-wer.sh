#!/usr/bin/env bash
# Does a voice's pace change what the intelligibility benchmark's ASR reads? espeak-ng speaks the first TEXTS
# held-out sentences in one voice of voices.tsv at several rates (words a minute), and asr.py scores each rate.
#   bash bench/voices/pace-wer.sh VOICE [TEXTS] [RATES]    e.g. pace-wer.sh milo 36 "120 145 170 200"
# A voice cloned slower than it speaks (milo, 1.16-1.17 in runs W1-W3) loses words to its pace only if espeak-ng's
# own rendering at that slower rate reads worse. Needs prepare.sh's data and ASR environment; CPU only (~1 minute).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?usage: pace-wer.sh VOICE [TEXTS] [RATES]}
texts=${2:-36}
rates=${3:-}
py=$here/../intelligibility/.venv/bin/python
data=${VOICES_DATA:-$here/data}
if [[ ! -x $py || ! -f $data/heldout.tsv ]]; then
  echo "pace-wer.sh: run bench/voices/prepare.sh first (the held-out sentences and the ASR's environment)" >&2
  exit 3
fi
if ! [[ $texts =~ ^[1-9][0-9]*$ ]]; then
  echo "pace-wer.sh: TEXTS must be a whole number of sentences, at least 1, not '$texts'" >&2
  exit 2
fi
row=$(awk -F'\t' -v n="$name" 'NR > 1 && $1 == n { print $2 "\t" $3 "\t" $4 }' "$here/voices.tsv")
if [[ -z $row ]]; then
  echo "pace-wer.sh: no voice '$name' in $here/voices.tsv; its voices: $(awk 'NR > 1 { printf "%s ", $1 }' \
    "$here/voices.tsv")" >&2
  exit 2
fi
IFS=$'\t' read -r voice pitch own <<<"$row"
[[ -n $rates ]] || rates="$((own * 85 / 100)) $own"
for r in $rates; do
  if ! [[ $r =~ ^[0-9]+$ ]] || ((r < 80 || r > 450)); then
    echo "pace-wer.sh: a rate is espeak-ng's words a minute, 80 to 450, not '$r'" >&2
    exit 2
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -n "$texts" "$data/heldout.tsv" >"$work/eval.tsv"
systems=()
for r in $rates; do
  mkdir -p "$work/$r"
  while IFS=$'\t' read -r id text; do
    espeak-ng -v "$voice" -p "$pitch" -s "$r" -w "$work/$r/$id.wav" "$text"
  done <"$work/eval.tsv"
  systems+=("$name@$r=$work/$r")
done
echo "pace-wer.sh: $name ($voice -p $pitch, its own rate $own), $(wc -l <"$work/eval.tsv") texts" >&2
"$py" "$here/../intelligibility/asr.py" "$work/eval.tsv" "${systems[@]}"
