"""cuBLAS on the matmuls bench/matmul.bench.ts times in xtts: what PyTorch gets from the tensor cores there.

    python3 bench/twin/gemm.py [--dtypes bf16,fp16,tf32,fp32] [--reps 50] [--shapes M×N×K[:tA][:tB][:bB],...]
        [--peak TFLOPS]

The default shapes are matmul.bench.ts's NORMAL list, read from that file (a normal step's largest matmuls
at batch 32 over one bucket of 80 tokens × 376 frames); `M×N×K` is C[M×N] = A[M×K]·B[K×N], `tA` A stored
transposed (K×M), `tB` B stored transposed (N×K), `bB` B such products at once. Each dtype's median device
time (CUDA events around one matmul, REPS times after 5 untimed) and TFLOP/s, and with --peak (the device's
dense f16 tensor peak, e.g. 989 for an H100 or H200 SXM) the share of it. fp32 runs with TF32 off (xtts's
float32 arithmetic), tf32 with it on. One JSON line per shape, then a table on stderr. Needs torch with
CUDA.
"""
import argparse
import json
import os
import re
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def normal_shapes():
    """matmul.bench.ts's NORMAL list, read from that file, so the two benches time the same shapes."""
    path = os.path.join(HERE, "..", "matmul.bench.ts")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    block = re.search(r"const NORMAL: Shape\[\] = \[(.*?)\]\.map", source, re.S)
    shapes = re.findall(r"\['([^']+)', '([^']+)'\]", block.group(1)) if block else []
    if not shapes:
        sys.exit(f"gemm.py: no NORMAL shape list in {path}; name the shapes with --shapes")
    return shapes


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}


def parse(spec):
    dims, *flags = spec.split(":")
    m, n, k = (int(v) for v in dims.replace("x", "×").split("×"))
    batch = next((int(f[1:]) for f in flags if f.startswith("b")), 1)
    return m, n, k, "tA" in flags, "tB" in flags, batch


def operands(m, n, k, ta, tb, batch, dtype):
    """A and B as the shape stores them; the product reads them through transposed views where flagged."""
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(batch, *((k, m) if ta else (m, k)), generator=g, device="cuda", dtype=dtype) * 2 - 1
    b = torch.rand(batch, *((n, k) if tb else (k, n)), generator=g, device="cuda", dtype=dtype) * 2 - 1
    return (a.transpose(1, 2) if ta else a), (b.transpose(1, 2) if tb else b)


def time_ms(fn, reps):
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", default="bf16,fp16,tf32,fp32")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--shapes", default=None)
    parser.add_argument("--peak", type=float, default=None, help="the device's dense f16 tensor peak, TFLOP/s")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gemm.py: no CUDA device (this benchmark times cuBLAS on a GPU)")
    shapes = [(s, s) for s in args.shapes.split(",")] if args.shapes else normal_shapes()
    dtypes = args.dtypes.split(",")
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        sys.exit(f"gemm.py: --dtypes: unknown {', '.join(unknown)} (known: {', '.join(DTYPES)})")
    device = torch.cuda.get_device_name()
    lines = []
    for spec, label in shapes:
        m, n, k, ta, tb, batch = parse(spec)
        row = {"shape": spec, "label": label, "device": device, "torch": torch.__version__}
        for name in dtypes:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
            a, b = operands(m, n, k, ta, tb, batch, DTYPES[name])
            ms = time_ms(lambda: torch.matmul(a, b), args.reps)
            tflops = 2 * m * n * k * batch / (ms * 1e-3) / 1e12
            row[f"{name}_ms"], row[f"{name}_tflops"] = round(ms, 4), round(tflops, 1)
            if args.peak:
                row[f"{name}_peak_share"] = round(tflops / args.peak, 3)
            del a, b
        print(json.dumps(row), flush=True)
        cells = [f"{d} {row[f'{d}_ms']:.3f} ms {row[f'{d}_tflops']} TFLOP/s" for d in dtypes]
        lines.append(f"{spec:>22} {label:<30} " + " | ".join(cells))
    print(f"cuBLAS on {device} (torch {torch.__version__}), medians of {args.reps}:", file=sys.stderr)
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
