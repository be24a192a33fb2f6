#!/usr/bin/env bash
# profile-bottleneck's verdicts on a GPU host and a multi-bucket dataset (issue 36's targets), through the
# bundle (npm run gpu-runtime && npm run bundle here; python3 and espeak-ng from the runtime there):
#
#   bash bench/gpu-profile.sh OUT [CLIPS] [SHORT] [LONG]
#
# CLIPS (default 600) espeak-ng clips of one to three quickstart sentences each, so that their lengths fill the
# tiny preset's default buckets (4). Profiles of the tiny preset on webgpu, warm-up 10: SHORT (default 40) and
# LONG (default 200) measured steps must give the same verdicts; then SHORT steps with step capture off (really
# host-bound), with a starved input (one loader worker, no feature cache, a prefetch ring of 1), and with a planted
# leak (bundle/planted-leak-bench.cjs: a callback keeps 3 tensors a step; the same run without it); and the normal
# preset in float32 and in mixed_fp16 (MFU against the tensor cores' peak). Prints each profile's verdicts (id:
# grade), its step-time median and p95, the new-shape phase, the top kernels with a matmul's TFLOP/s; packs every
# JSON result, log and profiled run's run.sqlite into OUT/profile.tar.gz.
set -u
out=${1:?usage: gpu-profile.sh OUT [CLIPS] [SHORT] [LONG]}
clips=${2:-600}
short=${3:-40}
long=${4:-200}
work=$(mktemp -d)
mkdir -p "$out"
source .gpu-runtime/setup.sh >"$work/runtime.txt" 2>&1 || { cat "$work/runtime.txt"; exit 3; }
x="node bundle/xtts.cjs"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; } >"$work/host.txt" 2>&1
mkdir -p "$work/data/wavs"
python3 - "$work/data" "$clips" bundle/configs/quickstart/metadata.csv <<'PY'
import random, sys
data, n, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
texts = [line.split('|')[1] for line in open(source, encoding='utf-8') if line.strip()]
rng = random.Random(7)
with open(f'{data}/metadata.csv', 'w', encoding='utf-8') as meta, open(f'{data}/say.tsv', 'w', encoding='utf-8') as say:
    for i in range(n):
        text = ' '.join(rng.sample(texts, rng.randint(1, 3)))
        meta.write(f'P{i:05d}|{text}|{text}\n')
        say.write(f'P{i:05d}\t{text}\n')
PY
say='espeak-ng -v en-us -s 165 -w "$0/${1%%	*}.wav" "${1#*	}"' # $1: id<TAB>text
tr '\n' '\0' <"$work/data/say.tsv" | xargs -0 -P "$(nproc)" -n 1 sh -c "$say" "$work/data/wavs"
echo "dataset: $(ls "$work/data/wavs" | wc -l) clips" | tee "$work/summary.txt"

profile() { # name, then profile-bottleneck flags
  local name=$1
  shift
  timeout 280 $x profile-bottleneck --config "bundle/configs/${preset:-tiny}.yaml" --dataset "$work/data" \
    --backend webgpu --warmup 10 --set pipeline.cache.path="$work/cache.sqlite" --output "$work/run-$name" "$@" --json \
    >"$work/$name.json" 2>"$work/$name.log"
  echo "$name: rc=$?" >>"$work/phases.txt"
}
profile "steps-$short" --steps "$short"
profile "steps-$long" --steps "$long"
profile capture-off --steps "$short" --set device.step_capture=off
profile starved --steps "$short" --set pipeline.workers=1 --set pipeline.cache.enabled=false \
  --set pipeline.prefetch_depth=1
# The normal preset in float32 and in mixed_fp16, whose MFU is against the tensor cores' peak (issues 35 and 36).
preset=normal profile normal-fp32 --steps 80
preset=normal profile normal-mixed --steps 80 --set training.precision=mixed_fp16
# A leak planted in the same run (a callback keeps 3 tensors a step), and the run without it: the CLI cannot plant one.
# Carried gzipped where a call to a GPU host carries at most 64 MiB.
[ -f bundle/planted-leak-bench.cjs ] || gunzip -k bundle/planted-leak-bench.cjs.gz
timeout 280 node bundle/planted-leak-bench.cjs --config bundle/configs/tiny.yaml --dataset "$work/data" \
  --backend webgpu --warmup 10 --steps "$short" --set pipeline.cache.path="$work/cache.sqlite" --out "$work/leak" \
  >"$work/leak.log" 2>&1
echo "planted-leak: rc=$?" >>"$work/phases.txt"

python3 - "$work" "$short" "$long" >>"$work/summary.txt" <<'PY'
import json, sys
work, short, long_ = sys.argv[1], sys.argv[2], sys.argv[3]
grades = {}
for name in (f'steps-{short}', f'steps-{long_}', 'capture-off', 'starved', 'normal-fp32', 'normal-mixed'):
    try:
        r = json.load(open(f'{work}/{name}.json'))['result']
    except Exception as e:
        print(f'{name}: no result ({e})')
        continue
    g = {v['id']: v['grade'] for v in r['verdicts']}
    grades[name] = {k: v for k, v in g.items() if k != 'new-shapes'}
    w = r['breakdown']['wallMs']
    shapes = r.get('newShapes')
    phase = (f"new shapes: steps {shapes['steps'][:12]} ({len(shapes['shapes'])} shapes, {shapes['ms']:.0f} ms, "
             f"{100 * shapes['wallShare']:.0f}% of the wall)" if shapes else 'new shapes: none after the warm-up')
    print(f"{name} on {r.get('device')}: median {w['p50']:.1f} ms, p95 {w['p95']:.1f} ms; "
          + ', '.join(f'{k}: {v}' for k, v in g.items()) + f'; {phase}')
    compute = next((v for v in r['verdicts'] if v['id'] == 'compute-bound'), None)
    if compute and compute['grade'] != 'ok':
        print(f"  {compute['title']}: {compute['evidence']}")
    for k in r.get('topKernels', [])[:5]:
        known = k.get('peakShare') is not None
        rate = f", {k['tflops']:.2f} TFLOP/s ({100 * k['peakShare']:.0f}% of peak)" if known else ''
        print(f"  {k['name']} {k['shape'] or ''}: {k['ms']:.2f} ms ({100 * k['share']:.0f}%){rate}")
a, b = grades.get(f'steps-{short}'), grades.get(f'steps-{long_}')
print(f'verdicts at --steps {short} and {long_}: ' + ('the same' if a and a == b else f'DIFFER: {a} vs {b}'))
PY
grep -E '^(leak|clean|planted leak)' "$work/leak.log" >>"$work/summary.txt"
cat "$work/phases.txt" "$work/summary.txt"
rm -rf "$work/data/wavs" "$work/cache.sqlite" "$work/leak"/*/checkpoints
tar czf "$out/profile.tar.gz" -C "$work" .
cp "$work/summary.txt" "$out/summary.txt"
