# Sourced by the GPU benchmarks that also rehearse on a CPU (bench/precision.sh, bench/voices/gpu.sh,
# bench/languages/gpu.sh): the runtime folder and the nvidia-smi log, each only where it exists.

# gpu_runtime WORK: source .gpu-runtime/setup.sh (node, espeak-ng and Dawn's libraries of the GPU host kit)
# unless XTTS_CLI names another CLI (a CPU rehearsal) or there is no kit; its output goes to WORK/runtime.txt,
# and a kit that fails prints it and exits 3. Sets x (the CLI: XTTS_CLI, or the bundle) and backend
# (XTTS_BENCH_BACKEND, or webgpu; wasm for a rehearsal).
gpu_runtime() {
  x=${XTTS_CLI:-node bundle/xtts.cjs}
  backend=${XTTS_BENCH_BACKEND:-webgpu}
  if [[ -z ${XTTS_CLI:-} && -f .gpu-runtime/setup.sh ]]; then
    # shellcheck disable=SC1091
    source .gpu-runtime/setup.sh >"$1/runtime.txt" 2>&1 || { cat "$1/runtime.txt"; exit 3; }
  else
    echo "no .gpu-runtime/setup.sh or XTTS_CLI set: espeak-ng and node from PATH" >"$1/runtime.txt"
  fi
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
