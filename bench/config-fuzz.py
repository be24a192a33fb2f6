#!/usr/bin/env python3
"""The config fuzzer's full sweep, part 2 (on a many-core host): every config of SWEEP/jobs.txt
(written by bench/config-fuzz.ts) trained 2 steps on the cpu backend through the bundled CLI, one
process a config, PARALLEL at a time. Prints per outcome the exit code and the envelope's error code,
every INTERNAL in full, each process's peak resident memory (wait4's ru_maxrss), and a BENCH_JSON line.
Targets (issue 31): 0 INTERNAL, 0 runs over 4 GB.

    python3 bench/config-fuzz.py SWEEP XTTS_CJS [PARALLEL=12] [SECONDS]
"""
import json, os, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

sweep, cli = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
parallel = int(sys.argv[3]) if len(sys.argv) > 3 else 12
# Configs not started within this many seconds are reported as not run (the summary still prints).
deadline = time.monotonic() + (float(sys.argv[4]) if len(sys.argv) > 4 else 1e9)
repo = os.getcwd()
for name in os.listdir(sweep):
    if name.endswith('.yaml'):
        p = os.path.join(sweep, name)
        text = open(p).read().replace('{{OUT}}', sweep).replace('{{REPO}}', repo)
        open(p, 'w').write(text)
jobs = [l.split('\t') for l in open(os.path.join(sweep, 'jobs.txt')).read().split('\n') if l.strip()]


def run(job):
    config, output = (os.path.join(sweep, x) for x in job)
    t = time.monotonic()
    if time.monotonic() > deadline:
        return {'config': os.path.basename(config), 'exit': None, 'status': 'not run', 'code': None,
                'message': 'past the deadline', 'seconds': 0, 'maxRssMiB': 0}
    p = subprocess.Popen(['node', cli, 'train', '--config', config, '--backend', 'cpu', '--max-steps', '2',
                          '--output', output, '--json'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    # A config still training after 5 minutes is killed and counted (exit -9): 2 steps take seconds.
    timer = threading.Timer(300, p.kill)
    timer.start()
    out = p.stdout.read()
    p.stdout.close()
    timer.cancel()
    # Reaped here rather than by Popen, for the child's own rusage (ru_maxrss: its peak resident memory).
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    try:
        env = json.loads(out.decode())
    except ValueError:
        env = None
    error = (env or {}).get('error') or {}
    r = {'config': os.path.basename(config), 'exit': p.returncode, 'status': (env or {}).get('status'),
         'code': error.get('code'), 'message': (error.get('message') or '')[:300],
         'seconds': round(time.monotonic() - t, 2), 'maxRssMiB': round(usage.ru_maxrss / 1024, 1)}
    print(json.dumps(r), flush=True)
    return r


t0 = time.monotonic()
with ThreadPoolExecutor(parallel) as pool:
    results = list(pool.map(run, jobs))
wall = time.monotonic() - t0
refused, internal, no_envelope = {}, [], []
not_run = [r for r in results if r['status'] == 'not run']
results = [r for r in results if r['status'] != 'not run']
for r in results:
    if r['status'] is None:
        no_envelope.append(r)
    elif r['exit'] != 0:
        refused[r['code']] = refused.get(r['code'], 0) + 1
        if r['code'] == 'INTERNAL':
            internal.append(r)
peak = max(r['maxRssMiB'] for r in results)
over = [r for r in results if r['maxRssMiB'] * 2**20 > 4e9]
seconds = sorted(r['seconds'] for r in results)
trained = sum(1 for r in results if r['exit'] == 0)
median = seconds[len(seconds) // 2]
print(f"config-fuzz: {len(results)} configs, {trained} trained 2 steps, refused {json.dumps(refused)}; "
      f"INTERNAL {len(internal)}, no JSON envelope {len(no_envelope)}; peak process RSS {peak:.0f} MiB, "
      f"{len(over)} over 4 GB; {len(not_run)} not run (deadline); median {median:.1f} s a config; "
      f"{wall:.0f} s wall at {parallel} at a time")
for r in internal + no_envelope:
    print('  ', json.dumps(r))
print('BENCH_JSON ' + json.dumps({
    'bench': 'config-fuzz', 'configs': len(results), 'trained': trained, 'refused': refused,
    'internal': len(internal), 'noEnvelope': len(no_envelope), 'peakRssMiB': peak, 'over4GB': len(over),
    'medianSeconds': median, 'wallSeconds': round(wall), 'parallel': parallel, 'notRun': len(not_run)}))
