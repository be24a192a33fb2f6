#!/usr/bin/env bash
# The chain benchmark's connected half: unpack what bench/vocoder/chain.sh brought back and score the
# acoustic model's held-out sentences through Griffin-Lim, through the neural vocoder and (where chain.sh
# made it) through the vocoder fine-tuned on the model's predicted mels, against espeak-ng's own reading of
# them (the training audio's source): word error rate by the intelligibility benchmark's ASR
# (bench/intelligibility/prepare.sh made its .venv and data), and MCD after DTW alignment (the model's timing
# is its own), over the whole band and up to the features' fmax (8 kHz).
#
#   bash bench/vocoder/chain-score.sh OUT [WORK]      (OUT: chain.sh's folder, holding chain.tar.gz.NN)
set -euo pipefail
out=${1:?usage: chain-score.sh OUT [WORK]}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../intelligibility/data
py=$here/../intelligibility/.venv/bin/python
if [[ ! -x $py || ! -f $data/heldout.tsv ]]; then
  echo "chain-score.sh: run bench/intelligibility/prepare.sh first" >&2
  exit 3
fi
mkdir -p "$work/espeak-ng"
cat "$out"/chain.tar.gz.* | tar -xzf - -C "$work"
cat "$work/host.txt" "$work/summary.txt"
# espeak-ng's reading of each held-out sentence, named as synthesize --texts names its WAVs (line-NNNN.wav).
n=0
while IFS=$'\t' read -r _id text; do
  n=$((n + 1))
  espeak-ng -v en-us -s 165 -w "$work/espeak-ng/line-$(printf %04d "$n").wav" "$text"
done <"$data/heldout.tsv"
# The fine-tuned vocoder's chain where chain.sh made one.
systems=(griffin-lim neural)
[[ -d $work/finetuned ]] && systems+=(finetuned)
python3 - "$work" "${systems[@]}" <<'PY'
import json, os, sys
w = sys.argv[1]
for name in ("vocoder", "acoustic", "finetuned"):
    if not os.path.exists(f"{w}/{name}-train.json"):
        continue
    t = json.load(open(f"{w}/{name}-train.json"))["result"]
    print(f"{name}: {t['parameters']:,} parameters, {t['steps']} steps ({t['stoppedBy']}), "
          f"median step {t['timing']['stepMsMedian']:.1f} ms")
    f = t.get("finetune")
    if f:
        print(f"  trained on {f['predicted']} clips' predicted mels ({f['kept']} kept their own) from "
              f"{f['checkpoint']} (step {f['step']}), predicted in {f['ms'] / 1000:.1f} s, "
              f"mean |prediction - recording| {f['meanAbsError']:.3f}; weights from {t['initFrom']}")
for name in sys.argv[2:]:
    r = json.load(open(f"{w}/{name}-synthesize.json"))["result"]
    print(f"{name}: {len(r['utterances'])} sentences in {r['synthesisMs'] / 1000:.1f} s, vocoder {r['vocoder']}")
PY
for band in full 8k; do
  fmax=()
  [[ $band == 8k ]] && fmax=(--fmax 8000)
  echo "DTW-aligned MCD against espeak-ng ($band band):"
  node --import tsx "$here/score.ts" "$work/espeak-ng" $(for s in "${systems[@]}"; do echo "$s=$work/$s"; done) \
    --align dtw "${fmax[@]}" --json "$work/mcd-$band.json"
done
"$py" "$here/../intelligibility/asr.py" "$data/heldout.tsv" espeak-ng="$work/espeak-ng" \
  $(for s in "${systems[@]}"; do echo "$s=$work/$s"; done) --json "$work/asr.json"
echo "scores: $work/mcd-full.json, $work/mcd-8k.json, $work/asr.json"
