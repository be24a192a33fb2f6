#!/usr/bin/env bash
# The vocoder benchmark's connected half: unpack what bench/vocoder/gpu.sh brought back and score it —
# LSD, MCD, F0 RMSE and V/UV error of the neural vocoder and of Griffin-Lim against the processed
# recordings, over the whole band and up to the features' fmax (8 kHz), and the word error rate of each
# through the intelligibility benchmark's ASR (bench/intelligibility/prepare.sh made its .venv).
#
#   bash bench/vocoder/score.sh OUT [WORK]      (OUT: gpu.sh's folder, holding vocoder.tar.gz.NN)
set -euo pipefail
out=${1:?usage: score.sh OUT [WORK]}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cat "$out"/vocoder.tar.gz.* | tar -xzf - -C "$work"
cat "$work/host.txt" "$work/summary.txt"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
t = json.load(open(f"{w}/train.json"))["result"]
timing = t["timing"]
# stepMsMean (readbacks included) is the throughput's step; archives from before it had the median only.
step = f"mean step {timing['stepMsMean']:.1f} ms, " if "stepMsMean" in timing else ""
print(f"vocoder: {t['parameters']:,} parameters, {t['steps']} steps ({t['stoppedBy']}), {step}median step "
      f"{timing['stepMsMedian']:.1f} ms, {timing['audioSecondsPerS']:.0f} s of audio/s; "
      f"last validation {t['validation'][-1]}")
for name in ("neural", "gl"):
    r = json.load(open(f"{w}/vocode-{name}.json"))["result"]
    print(f"{name}: {r['audioS']:.1f} s vocoded at {r['realTimeFactor']:.1f}x real time (batches of {r['batchSize']}, "
          f"{r['backend'] or 'host'})")
PY
node --import tsx "$here/score.ts" "$work/real" gl="$work/griffin-lim" neural="$work/neural" --json "$work/scores.json"
node --import tsx "$here/score.ts" "$work/real" gl="$work/griffin-lim" neural="$work/neural" --fmax 8000 \
  --json "$work/scores-8k.json"
py=$here/../intelligibility/.venv/bin/python
data=$here/../intelligibility/data
if [[ -x $py && -f $data/heldout.tsv ]]; then
  "$py" "$here/../intelligibility/asr.py" "$data/heldout.tsv" real="$work/real" gl="$work/griffin-lim" \
    neural="$work/neural" --json "$work/asr.json"
else
  echo "score.sh: no ASR (run bench/intelligibility/prepare.sh for its .venv and data)"
fi
echo "scores in $work (scores.json, scores-8k.json, asr.json)"
