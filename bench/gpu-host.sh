# Sourced by the GPU benchmarks that also rehearse on a CPU (bench/precision.sh, bench/voices/gpu.sh,
# bench/languages/gpu.sh): their folders, the runtime folder and the nvidia-smi log, each only where it exists;
# and the espeak-ng corpus of a sentence list (also bench/intelligibility/gpu.sh).

# gpu_setup: a scratch folder in $work and $out made and made absolute; then .gpu-runtime/setup.sh (node,
# espeak-ng and Dawn's libraries of the GPU host kit) sourced unless XTTS_CLI names another CLI (a CPU rehearsal)
# or there is no kit; its output goes to $work/runtime.txt, and a kit that fails prints it and exits 3. Sets x
# (the CLI: XTTS_CLI, or the bundle) and backend (XTTS_BENCH_BACKEND, or webgpu; wasm for a rehearsal).
gpu_setup() {
  work=$(mktemp -d)
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  x=${XTTS_CLI:-node bundle/xtts.cjs}
  backend=${XTTS_BENCH_BACKEND:-webgpu}
  if [[ -z ${XTTS_CLI:-} && -f .gpu-runtime/setup.sh ]]; then
    # shellcheck disable=SC1091
    source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
  else
    echo "no .gpu-runtime/setup.sh or XTTS_CLI set: espeak-ng and node from PATH" >"$work/runtime.txt"
  fi
}

# speak_sentences TSV DIR: espeak-ng (en-us, 165 words a minute, all cores) speaks each id<TAB>text line of TSV
# into DIR/wavs/ID.wav, as the quickstart's clips were spoken; DIR/metadata.csv lists them (id|text|text).
speak_sentences() {
  mkdir -p "$2/wavs"
  tr '\n' '\0' <"$1" | xargs -0 -P "$(nproc)" -n 1 sh -c \
    'espeak-ng -v en-us -s 165 -w "$0/${1%%	*}.wav" "${1#*	}"' "$2/wavs"
  awk -F'\t' '{print $1 "|" $2 "|" $2}' "$1" >"$2/metadata.csv"
}

# smi_sample FILE MS: nvidia-smi's utilisation and memory every MS milliseconds into FILE, in the background,
# its process id in $smi (empty, and FILE empty, where there is no nvidia-smi); stop it with smi_stop.
smi_sample() {
  smi=
  : >"$1"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms "$2" \
      >"$1" 2>/dev/null &
    smi=$!
  fi
}
smi_stop() { [[ -n ${smi:-} ]] && kill "$smi" 2>/dev/null; smi=; }
