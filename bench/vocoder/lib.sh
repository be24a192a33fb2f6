# What bench/vocoder's GPU scripts share (sourced, after `out`, `here` and `config` are set): the runtime,
# the CLI, the host's description, the sentences' folder, and espeak-ng speaking a TSV of them.
data=${VOCODER_DATA:-$here/../intelligibility/data}
work=$(mktemp -d)
mkdir -p "$out"
# XTTS_CLI (e.g. "node src/cli/run.js", with XTTS_BENCH_BACKEND=wasm) rehearses a script on a machine without
# the runtime folder or a GPU.
if [[ -z ${XTTS_CLI:-} ]]; then
  source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
fi
x=${XTTS_CLI:-node bundle/xtts.cjs}
backend=${XTTS_BENCH_BACKEND:-webgpu} # wasm: a CPU rehearsal
since() { echo "$((($(date +%s%N) - $1) / 1000000))"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } >"$work/host.txt" 2>&1
if [[ ! -f $data/train.tsv || ! -f $data/heldout.tsv ]]; then
  echo "$(basename "$0"): $data/*.tsv are missing: run bench/intelligibility/prepare.sh" >&2
  exit 2
fi

speak() { # TSV FOLDER: each id<TAB>sentence as FOLDER/id.wav, all cores
  mkdir -p "$2"
  tr '\n' '\0' <"$1" | xargs -0 -P "$(nproc)" -n 1 sh -c 'espeak-ng -v en-us -s 165 -w "$0/${1%%	*}.wav" "${1#*	}"' "$2"
}

speak_training_set() { # the 1,200 training sentences as a dataset in $work/train-data
  speak "$data/train.tsv" "$work/train-data/wavs"
  awk -F'\t' '{print $1 "|" $2 "|" $2}' "$data/train.tsv" >"$work/train-data/metadata.csv"
}

# The schedule's length for MINUTES of training: an 80-step run of the same config measures the mean step of
# steps 41-80 with the readbacks that end them (with step capture the median is only the host's issuing
# time; the GPU's part is paid at the readbacks; and the first steps of each bucket shape record the replay:
# with 4 buckets, steps 21-40 still held some, and the H200 chain run's schedules ended at 60% of their
# minutes), and the schedule gets 92% of MINUTES at that pace.
#   calibrated_steps NAME MINUTES FALLBACK_MS train-args...   (prints the steps; logs to summary.txt)
calibrated_steps() {
  local name=$1 minutes=$2 fallback=$3 t0=$(date +%s%N) ms
  shift 3
  # shellcheck disable=SC2086 # VOCODER_ARGS: extra --set overrides (experiments)
  $x train "$@" --output "$work/$name-calibration" --max-steps 80 --backend "$backend" --json \
    --set training.eval_every=1000000 --set training.validate_every=1000000 --set training.checkpoint_every=1000000 \
    >"$work/$name-calibration.json" 2>"$work/$name-calibration.log"
  ms=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(
    "SELECT AVG(wall_ms) FROM steps WHERE step > 40").fetchone()[0])' "$work/$name-calibration/run.sqlite" 2>/dev/null)
  rm -rf "$work/$name-calibration"
  local steps
  steps=$(awk -v m="$minutes" -v ms="${ms:-$fallback}" 'BEGIN { printf "%d", 0.92 * m * 60000 / ms }')
  echo "$name calibration: mean step ${ms:-unknown} ms in $(since "$t0") ms; schedule of $steps steps" \
    >>"$work/summary.txt"
  echo "$steps"
}
