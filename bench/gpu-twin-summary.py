"""Summary of bench/gpu-twin.sh's work folder: per preset, xtts (eager and replayed) against the
PyTorch twin on the same bucket shape. Plain python3 (json, sqlite3, statistics).

    python3 bench/gpu-twin-summary.py WORK PRESET...
"""
import json
import os
import sqlite3
import statistics
import sys


def bench_json(path):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("BENCH_JSON "):
                    return json.loads(line[len("BENCH_JSON "):])
    except OSError:
        pass
    return None


def twin_lines(path):
    rows = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    r = json.loads(line)
                    rows[r.get("variant")] = r
    except OSError:
        pass
    return rows


# NVML's utilisation is the share of its own sample period (about 1/6 s) in which a kernel ran; the
# trainer samples it 10 times a second. Over a span shorter than this the mean is a few samples that
# straddle the span's edges, and says little.
BUSY_SPAN_S = 2.0


def busy_share(db_path):
    """NVML utilisation (mean of the samples) over the replayed steps' span, that span's steps, its samples and seconds, and the mean period of those steps (ms)."""
    if not os.path.exists(db_path):
        return None, 0, 0, 0.0, None
    db = sqlite3.connect(db_path)
    try:
        steps = db.execute("SELECT start_ms, wall_ms FROM steps WHERE replayed = 1 ORDER BY step").fetchall()
        if len(steps) < 3:
            return None, len(steps), 0, 0.0, None
        t0, t1 = steps[1][0], steps[-1][0] + steps[-1][1]
        util = [u for (u,) in db.execute("SELECT utilization_pct FROM device_samples WHERE t_ms >= ? AND t_ms <= ? AND utilization_pct IS NOT NULL", (t0, t1))]
        return (statistics.mean(util) if util else None), len(steps), len(util), (t1 - t0) / 1000, (t1 - t0) / (len(steps) - 1)
    finally:
        db.close()


def device_spans(db_path):
    """The replayed steps' device spans the run recorded (timestamps at their passes' edges): (step, alignment), each a dict or None."""
    if not os.path.exists(db_path):
        return None, None
    db = sqlite3.connect(db_path)
    try:
        row = db.execute("SELECT v FROM meta WHERE k = 'stepCapture'").fetchone()
    finally:
        db.close()
    c = json.loads(row[0]) if row else {}
    step = c.get("deviceSpans")
    align = (c.get("alignment") or {}).get("deviceSpans")
    return (step if step and step.get("available") else None), (align if align and align.get("available") else None)


def fmt(x, unit="", digits=1):
    return "n/a" if x is None else f"{x:.{digits}f}{unit}"


def ratio(a, b):
    return None if a is None or not b else a / b


def main():
    work, presets = sys.argv[1], sys.argv[2:]
    figures = []
    for p in presets:
        x = bench_json(os.path.join(work, f"{p}.txt"))
        if x is None:
            print(f"== {p}: the xtts runs gave no figures (see {p}.txt)")
            continue
        t = twin_lines(os.path.join(work, f"{p}-twin.jsonl"))
        eager = (t.get("fp32") or {}).get("step_ms_median")
        graphs = (t.get("graphs") or t.get("graphs_fp32") or {}).get("step_ms_median")
        timed = {v: r["step_ms_median"] for v, r in t.items() if r.get("step_ms_median") is not None}
        best = min(timed, key=timed.get) if timed else None
        busy, replayed, samples, span, period = busy_share(os.path.join(work, p, "run-auto", "run.sqlite"))
        busy_note = f"{samples} NVML samples over {span:.1f} s" + ("" if span >= BUSY_SPAN_S else ": too short a span to trust, run more steps")
        per_program = None if not x.get("replayPrograms") else x["replayHostMs"] * 1000 / x["replayPrograms"]
        spans, align = device_spans(os.path.join(work, p, "run-auto", "run.sqlite"))
        cycle = None if not spans or spans.get("betweenMs") is None else spans["spanMs"] + spans["betweenMs"]
        pace = x["replayStepMs"] if cycle is None else max(x["replayStepMs"], cycle)
        # The device's own busy share: its kernels' passes (the step's and the alignment forward's,
        # medians by timestamps) over the host's mean period between replayed steps. NVML's samples
        # of the same runs scatter by ±5 points between runs of one bundle; these do not.
        kernels_ms = None if not spans else spans["insideMs"] + ((align or {}).get("insideMs") or 0)
        device_busy = None if kernels_ms is None or not period else min(100.0, 100 * kernels_ms / period)
        row = {
            "preset": p, "device": x.get("device"), "shape": x.get("shape"), "xttsParameters": x.get("parameters"),
            "twinParameters": next((r.get("params") for r in t.values() if r.get("params")), None),
            "twinVariants": {v: {k: r.get(k) for k in ("step_ms_median", "first_step_s", "peak_mb", "search_ms_median", "loss_last", "error")} for v, r in t.items()},
            "twinBestVariant": best, "twinBestMs": timed.get(best), "replayOverTwinBest": ratio(x["replayStepMs"], timed.get(best)), "eagerStepMs": x["eagerStepMs"], "replayStepMs": x["replayStepMs"],
            "twinEagerFp32Ms": eager, "twinGraphsFp32Ms": graphs, "replayOverTwinEager": ratio(x["replayStepMs"], eager),
            "eagerOverTwinEager": ratio(x["eagerStepMs"], eager), "replayOverTwinGraphs": ratio(x["replayStepMs"], graphs),
            "eagerPrograms": x.get("eagerPrograms"), "replayPrograms": x.get("replayPrograms"), "replayHostMs": x.get("replayHostMs"),
            "hostUsPerReplayedProgram": per_program, "encodeUsPerProgram": x.get("replayEncodeUsPerProgram"), "submitUsPerProgram": x.get("replaySubmitUsPerProgram"),
            "replayedShare": x.get("replayedShare"), "gpuBusyPctReplayed": busy, "gpuBusySamples": samples, "gpuBusySpanS": span, "replayedStepsInDb": replayed,
            "sameLosses": x.get("sameLosses"),
            "deviceStepPassesMs": spans and spans["insideMs"], "deviceStepSpanMs": spans and spans["spanMs"], "deviceBetweenStepsMs": spans and spans["betweenMs"],
            "deviceAlignmentMs": align and align["insideMs"], "deviceCycleMs": cycle, "deviceCycleOverTwinGraphs": ratio(cycle, graphs),
            "deviceCycleOverTwinBest": ratio(cycle, timed.get(best)),
            "meanStepPeriodMs": period, "deviceBusyPctByTimestamps": device_busy, "hostGc": x.get("replayHostGc"),
            # The run's pace: the trainer's median replayed step, or the device's cycle where that is longer (a
            # short run of a device-bound preset, where the host runs two steps ahead and the median misses its waits).
            "paceMs": pace, "paceOverTwinBest": ratio(pace, timed.get(best)),
        }
        figures.append(row)
        print(f"== {p} on {row['device']}, bucket {row['shape']} (xtts {row['xttsParameters']} parameters, twin {row['twinParameters']})")
        print(f"  xtts eager {fmt(row['eagerStepMs'], ' ms')} ({row['eagerPrograms']} programs), replayed {fmt(row['replayStepMs'], ' ms')} ({row['replayPrograms']} programs, host {fmt(per_program, ' µs')} per program, encode {fmt(row['encodeUsPerProgram'], ' µs', 2)}, submit {fmt(row['submitUsPerProgram'], ' µs', 2)}; {fmt((row['replayedShare'] or 0) * 100, '%', 0)} of measured steps replayed; GPU busy {fmt(busy, '%', 0)} over the replayed steps, {busy_note})")
        if device_busy is not None:
            print(f"  device busy by its timestamps {fmt(device_busy, '%', 1)}: the step's and the alignment forward's passes, {fmt(kernels_ms, ' ms', 2)}, in a mean period of {fmt(period, ' ms', 2)} between replayed steps")
        g = row["hostGc"]
        if g:
            print(f"  the trainer's thread collecting garbage in the replayed run: {fmt(g['share'] * 100, '%', 1)} of its wall, {g['full']['count']} full collections (longest {fmt(g['full']['longestMs'], ' ms', 1)}), {g['minor']['count']} young ({fmt(g['minor']['ms'], ' ms', 0)})")
        if spans:
            print(f"  device (timestamps at the replayed passes' edges, {spans['steps']} steps): the step's passes {fmt(spans['insideMs'], ' ms', 2)}, span {fmt(spans['spanMs'], ' ms', 2)}, alignment forward {fmt(align and align['insideMs'], ' ms', 2)}, between steps {fmt(spans['betweenMs'], ' ms', 2)}: a cycle of {fmt(cycle, ' ms', 2)}, {fmt(row['deviceCycleOverTwinBest'], '×', 2)} the twin's best step ({best})")
        else:
            print("  device spans: not recorded (no timestamp queries, or an xtts that did not measure them)")
        for v, r in t.items():
            what = f"error {r['error']}" if r.get("error") else f"{fmt(r.get('step_ms_median'), ' ms', 2)} (first step {fmt(r.get('first_step_s'), ' s', 1)}, peak {fmt(r.get('peak_mb'), ' MB', 0)}, host alignment search {fmt(r.get('search_ms_median'), ' ms', 2)} beside the steps)"
            print(f"  twin {v}: {what}")
        print(f"  ratios: replayed / twin eager fp32 {fmt(row['replayOverTwinEager'], '×', 2)}, "
              f"eager / twin eager fp32 {fmt(row['eagerOverTwinEager'], '×', 2)}, "
              f"replayed / twin's best ({best}) {fmt(row['replayOverTwinBest'], '×', 2)}, "
              f"the run's pace (the longer of the replayed median and the device cycle, {fmt(pace, ' ms', 2)}) "
              f"/ twin's best {fmt(row['paceOverTwinBest'], '×', 2)}; "
              f"losses eager vs replayed {'identical' if row['sameLosses'] else 'DIFFER'}")
    print("BENCH_JSON " + json.dumps({"bench": "gpu-twin", "presets": figures}))


main()
