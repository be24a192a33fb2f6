#!/usr/bin/env bash
# Scores what bench/vocoder/gpu-gan.sh brought back: the continued vocoder trained on the reconstruction
# losses (`plain`), the one trained against the discriminators (`adversarial`) and Griffin-Lim, against the
# processed recordings (LSD, MCD, F0 RMSE, V/UV; whole band and up to 8 kHz) and through the ASR.
#
#   bash bench/vocoder/score-gan.sh OUT [WORK]      (OUT: gpu-gan.sh's folder, holding vocoder-gan.tar.gz.NN)
set -euo pipefail
out=${1:?usage: score-gan.sh OUT [WORK]}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cat "$out"/vocoder-gan.tar.gz.* | tar -xzf - -C "$work"
cat "$work/host.txt" "$work/summary.txt"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
for name in ("base", "plain", "adversarial"):
    t = json.load(open(f"{w}/{name}.json"))["result"]
    tm = t["timing"]
    adv = t.get("adversarial") or {}
    print(f"{name}: {t['steps']} steps ({t['stoppedBy']}), mean step {tm['stepMsMean']:.1f} ms, "
          f"last validation {t['validation'][-1] if t['validation'] else None}, "
          f"discriminators {adv.get('discriminators', [])}")
PY
folders=(gl="$work/griffin-lim" plain="$work/wav-plain" adversarial="$work/wav-adversarial")
node --import tsx "$here/score.ts" "$work/real" "${folders[@]}" --json "$work/scores.json"
node --import tsx "$here/score.ts" "$work/real" "${folders[@]}" --fmax 8000 --json "$work/scores-8k.json"
py=$here/../intelligibility/.venv/bin/python
data=$here/../intelligibility/data
if [[ -x $py && -f $data/heldout.tsv ]]; then
  "$py" "$here/../intelligibility/asr.py" "$data/heldout.tsv" real="$work/real" "${folders[@]}" --json "$work/asr.json"
else
  echo "score-gan.sh: no ASR (run bench/intelligibility/prepare.sh for its .venv and data)"
fi
echo "scores in $work (scores.json, scores-8k.json, asr.json)"
