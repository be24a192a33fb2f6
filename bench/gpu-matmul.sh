#!/usr/bin/env bash
# xtts's matmul programs beside cuBLAS on one GPU host, shape by shape, in one call (issue 35's kernel gap):
# bundle/matmul-bench.cjs (bench/matmul.bench.ts: VARIANTS of xtts's programs, default "f16,tfjs", device
# timestamps) and bench/twin/gemm.py (torch.matmul in DTYPES, default "fp16,bf16,fp32", CUDA events) on the
# same shapes (SHAPES, M×N×K[:tA][:tB][:bB] comma-separated; default matmul.bench.ts's list, which gemm.py
# reads from it: a normal step's largest matmuls). PEAK (default 989, an H100 or H200 SXM's dense f16 tensor
# peak in TFLOP/s) gives cuBLAS's share of it.
#
#   bash bench/gpu-matmul.sh OUT [SHAPES]         (VARIANTS=… DTYPES=… REPS=20 PEAK=989 in the environment;
#                                                 TUNINGS=… builds of the f16 program beside its default:
#                                                 matmul.bench.ts's --tunings)
#
# Needs: npm run gpu-runtime && npm run bundle here; python3 with torch there. Writes OUT/matmul.txt and
# OUT/matmul.tar.gz (both benches' JSON lines and logs, the host).
set -u
out=${1:?usage: gpu-matmul.sh OUT [SHAPES]}
shapes=${2:-}
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  nproc
  python3 -c 'import torch; print("torch", torch.__version__)'
} >"$work/host.txt" 2>&1
shape_args=()
if [[ -n $shapes ]]; then shape_args=(--shapes "$shapes"); fi
tuning_args=()
if [[ -n ${TUNINGS:-} ]]; then tuning_args=(--tunings "$TUNINGS"); fi
timeout 300 node bundle/matmul-bench.cjs --variants "${VARIANTS:-f16,tfjs}" --reps "${REPS:-20}" "${shape_args[@]}" \
  "${tuning_args[@]}" >"$work/xtts.txt" 2>&1
echo "matmul-bench rc=$?" >>"$work/host.txt"
timeout 200 python3 bench/twin/gemm.py --dtypes "${DTYPES:-fp16,bf16,fp32}" --reps "${REPS:-20}" --peak "${PEAK:-989}" \
  "${shape_args[@]}" >"$work/cublas.jsonl" 2>"$work/cublas.txt"
echo "gemm.py rc=$?" >>"$work/host.txt"
{ cat "$work/host.txt"; grep -v '^BENCH_JSON' "$work/xtts.txt"; cat "$work/cublas.txt"; } >"$out/matmul.txt"
tar -czf "$out/matmul.tar.gz" -C "$work" .
cat "$out/matmul.txt"
