#!/usr/bin/env bash
# Vocoder steps replayed (device.step_capture auto) against eager ones (off), side by side in one command on a
# GPU host (the bundle, the runtime folder and bench/intelligibility/data beside the checkout, as gpu.sh):
#
#   bash bench/vocoder/gpu-capture.sh OUT [STEPS] [CONFIG]
#
# Both train STEPS steps (default 300) of CONFIG (default heldout.yaml: vocoder-small, batch 32; VOCODER_ARGS adds
# --set overrides) on the 1,200 espeak-ng clips, capture first; prints each run's median step, the ratio and the
# programs a replayed step dispatches (the mean step with its readbacks is the throughput), and returns the
# runs' JSON and logs as OUT/vocoder-capture.tar.gz.
set -u
out=${1:?usage: gpu-capture.sh OUT [STEPS] [CONFIG]}
steps=${2:-300}
here=$(cd "$(dirname "$0")" && pwd)
config=${3:-$here/heldout.yaml}
# shellcheck source=lib.sh
source "$here/lib.sh"
speak_training_set
for capture in auto off; do
  # shellcheck disable=SC2086
  $x train --config "$config" --dataset "$work/train-data" --output "$work/$capture" --max-steps "$steps" \
    --backend "$backend" --set device.step_capture=$capture --set training.log_every=50 ${VOCODER_ARGS:-} --json \
    >"$work/$capture.json" 2>"$work/$capture.log"
  echo "step_capture $capture: rc=$?" >>"$work/summary.txt"
done
python3 - "$work" >>"$work/summary.txt" <<'PY'
import json, sqlite3, sys
w = sys.argv[1]
ms = {}
mean = {}
for c in ("auto", "off"):
    r = json.load(open(f"{w}/{c}.json"))["result"]
    ms[c] = r["timing"]["stepMsMedian"]
    db = sqlite3.connect(f"{w}/{c}/run.sqlite")
    replayed, programs = db.execute("SELECT SUM(replayed = 1), MAX(programs) FROM steps").fetchone()
    # The median step is the host's issuing time when steps run ahead of the GPU; the mean over steps 21 on,
    # with the readbacks every log_every steps that wait for the GPU, is the throughput.
    first = min(20, r["steps"] // 2)  # a short rehearsal has fewer than 20 steps
    mean[c] = db.execute("SELECT AVG(wall_ms) FROM steps WHERE step > ?", (first,)).fetchone()[0]
    print(f"{c}: {r['steps']} steps, median {ms[c]:.1f} ms, "
          f"mean with its readbacks (steps {first + 1} on) {mean[c]:.1f} ms, "
          f"replayed steps {replayed or 0}, programs a step {programs}")
print(f"replayed / eager: median step {ms['auto'] / ms['off']:.3f}, mean step {mean['auto'] / mean['off']:.3f}")
PY
(cd "$work" && tar -czf "$out/vocoder-capture.tar.gz" --exclude='*.safetensors' auto off auto.json off.json \
  auto.log off.log summary.txt host.txt 2>/dev/null)
cat "$work/host.txt" "$work/summary.txt"
