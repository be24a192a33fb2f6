"""bench/precision.sh's summary: does mixed_fp16 end where float32 ends?

    python3 bench/precision-summary.py RUNS_DIR STEPS

RUNS_DIR holds NAME.json (`xtts train --json`) for NAME = fp32-SEED and mixed_fp16-SEED. Per run: the final
validation loss and the mean training loss over the last 10% of the steps. Per precision: the mean and the
range over its seeds. The verdict compares the mixed runs' mean with the float32 runs' mean against the float32
runs' spread (max - min: what changing the seed alone moves), for both losses, and counts the mixed runs that lie
inside the float32 runs' range. Exit 0 when every run trained; 1 when a run failed (its error is printed).
"""

import json
import os
import sys
from statistics import mean


def read(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"status": "error", "error": {"message": f"not JSON: {text[:200]!r}"}}


def figures(result, steps):
    tail = [p["loss"] for p in result.get("lossCurve", []) if p["step"] > steps * 0.9]
    validation = result.get("validation") or []
    return {
        "steps": result.get("steps"),
        "train": mean(tail) if tail else None,
        "val": validation[-1]["loss"] if validation else None,
        "val_step": validation[-1]["step"] if validation else None,
        "nonfinite": result.get("nonFiniteSteps"),
    }


def main():
    runs_dir, steps = sys.argv[1], int(sys.argv[2])
    runs = {}
    failed = []
    for name in sorted(os.listdir(runs_dir)):
        if not name.endswith(".json"):
            continue
        stem = name[: -len(".json")]
        precision, _, seed = stem.rpartition("-")
        doc = read(os.path.join(runs_dir, name))
        if doc.get("status") != "success":
            message = (doc.get("error") or {}).get("message", "no result")
            failed.append(stem)
            print(f"{stem}: failed: {message.splitlines()[0] if message else ''}")
            continue
        runs.setdefault(precision, {})[seed] = figures(doc["result"], steps)

    print(f"{'run':<16} {'steps':>6} {'train (last 10%)':>17} {'validation':>11} {'at step':>8} {'non-finite':>11}")
    for precision in sorted(runs):
        for seed, f in sorted(runs[precision].items()):
            train = f"{f['train']:.4f}" if f["train"] is not None else "-"
            val = f"{f['val']:.4f}" if f["val"] is not None else "-"
            print(f"{precision + '-' + seed:<16} {f['steps']:>6} {train:>17} {val:>11} {f['val_step'] or '-':>8} "
                  f"{f['nonfinite'] if f['nonfinite'] is not None else '-':>11}")

    base, mixed = runs.get("fp32", {}), runs.get("mixed_fp16", {})
    for key, label in (("val", "validation loss"), ("train", "training loss (last 10%)")):
        a = [f[key] for f in base.values() if f[key] is not None]
        b = [f[key] for f in mixed.values() if f[key] is not None]
        if len(a) < 2 or not b:
            print(f"{label}: needs two fp32 runs and a mixed_fp16 run with it ({len(a)} and {len(b)})")
            continue
        spread = max(a) - min(a)
        gap = mean(b) - mean(a)
        inside = sum(min(a) <= v <= max(a) for v in b)
        pairs = [(mixed[s][key], base[s][key]) for s in mixed if s in base]
        same_seed = [m - f for m, f in pairs if m is not None and f is not None]
        verdict = "PASS" if abs(gap) <= spread else "FAIL"
        print(
            f"{label}: fp32 mean {mean(a):.4f} (range {min(a):.4f}-{max(a):.4f}, spread {spread:.4f}); mixed_fp16 mean "
            f"{mean(b):.4f} (range {min(b):.4f}-{max(b):.4f}); mixed - fp32 {gap:+.4f} "
            f"({'within' if abs(gap) <= spread else 'outside'} the fp32 spread) {verdict}; "
            f"{inside} of {len(b)} mixed runs inside the fp32 range; "
            f"same seed, mixed - fp32: {', '.join(f'{d:+.4f}' for d in same_seed) or '-'}"
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
