#!/usr/bin/env bash
# What adversarial training costs a vocoder step: the same config trained STEPS steps plainly and with each
# set of discriminators, side by side in one command on a GPU host (the bundle, the runtime folder and
# bench/intelligibility/data beside the checkout, as gpu.sh):
#
#   bash bench/vocoder/gpu-adversarial.sh OUT [STEPS] [CONFIG]
#
# Variants (each a set of --set overrides on top of VOCODER_ARGS): plain; the period discriminators alone;
# periods and resolution discriminators 8 wide; periods and 16 wide (ADVERSARIAL_VARIANTS replaces the list,
# one variant a line, NAME then overrides). Prints each run's median step, its mean step over steps 41 on
# with the readbacks that wait for the GPU (the throughput), its replayed steps and programs a step, and the
# most GPU memory nvidia-smi saw during it; returns the runs' JSON, logs and run.sqlite as
# OUT/vocoder-adversarial.tar.gz. Each run is stopped after VARIANT_TIMEOUT seconds (default 300).
set -u
out=${1:?usage: gpu-adversarial.sh OUT [STEPS] [CONFIG]}
steps=${2:-200}
here=$(cd "$(dirname "$0")" && pwd)
config=${3:-$here/heldout.yaml}
# shellcheck source=lib.sh
source "$here/lib.sh"
speak_training_set
gan="--set vocoder.adversarial.enabled=true"
variants=${ADVERSARIAL_VARIANTS:-"plain
periods $gan --set vocoder.adversarial.resolution_channels=0
periods+res8 $gan --set vocoder.adversarial.resolution_channels=8
periods+res16 $gan --set vocoder.adversarial.resolution_channels=16"}
names=()
while read -r name overrides; do
  [[ -z $name ]] && continue
  names+=("$name")
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 >"$work/$name.smi" 2>/dev/null &
  smi=$!
  # shellcheck disable=SC2086 # overrides and VOCODER_ARGS: --set lists
  timeout "${VARIANT_TIMEOUT:-300}" $x train --config "$config" --dataset "$work/train-data" --output "$work/$name" \
    --max-steps "$steps" \
    --backend "$backend" --set training.log_every=20 --set training.validate_every=100000 \
    --set training.eval_every=100000 --set training.checkpoint_every=100000 ${VOCODER_ARGS:-} $overrides --json \
    >"$work/$name.json" 2>"$work/$name.log"
  echo "$name: rc=$?" >>"$work/summary.txt"
  kill $smi 2>/dev/null
done <<<"$variants"
python3 - "$work" "${names[@]}" >>"$work/summary.txt" <<'PY'
import json, sqlite3, sys
w, names = sys.argv[1], sys.argv[2:]
mean = {}
for n in names:
    try:
        r = json.load(open(f"{w}/{n}.json"))["result"]
    except Exception as e:
        print(f"{n}: no result ({e})")
        continue
    db = sqlite3.connect(f"{w}/{n}/run.sqlite")
    replayed, programs = db.execute("SELECT SUM(replayed = 1), MAX(programs) FROM steps").fetchone()
    first = min(40, r["steps"] // 2)
    mean[n] = db.execute("SELECT AVG(wall_ms) FROM steps WHERE step > ?", (first,)).fetchone()[0]
    smi = [int(x) for x in open(f"{w}/{n}.smi").read().split() if x.isdigit()]
    adv = r.get("adversarial") or {}
    print(f"{n}: {r['steps']} steps, median {r['timing']['stepMsMedian']:.1f} ms, mean (steps {first + 1} on, "
          f"readbacks in) {mean[n]:.1f} ms, replayed {replayed or 0}, programs a step {programs}, "
          f"discriminator parameters {adv.get('parameters', 0)}, GPU memory peak {max(smi, default=0)} MiB")
if "plain" in mean:
    for n, m in mean.items():
        print(f"{n} / plain: mean step {m / mean['plain']:.2f}")
PY
(cd "$work" && tar -czf "$out/vocoder-adversarial.tar.gz" --exclude='*.safetensors' "${names[@]}" \
  ./*.json ./*.log ./*.smi summary.txt host.txt 2>/dev/null)
cat "$work/host.txt" "$work/summary.txt"
