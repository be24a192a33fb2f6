# What bench/vocoder's GPU scripts share (sourced, after `out`, `here` and `config` are set): the runtime,
# the CLI, the host's description, the sentences' folder, and espeak-ng speaking a TSV of them.
data=${VOCODER_DATA:-$here/../intelligibility/data}
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
x="node bundle/xtts.cjs"
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
