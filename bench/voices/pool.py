"""Pool several scored voices runs (score.sh's WORK folders) voice by voice: one run's WER gap is one seed's and
rests on the run's texts (12 of about 85 words in all: a 95% interval of +-0.08 to +-0.20; 36: about +-0.06); runs
of other seeds on the same texts and reference clips pool to a figure that is no one seed's. Its interval is the
texts' and narrows only with more texts (three seeds on the same 12 left it as wide as one run's).

    python3 bench/voices/pool.py WORK1 WORK2 ... [--json OUT.json]

For each voice and system (ref, voc, ft, spk): each run's WER gap over espeak-ng's in that voice, the pooled gap
(every run's errors over every run's words, minus espeak-ng's the same way), and its 95% interval by a paired
bootstrap over the texts (one draw of texts applied to every run and to espeak-ng alike). The interval counts
the texts' sampling, not the seeds': the runs' own gaps are printed beside it for that. A gap is "pass" when
its interval lies under the line (+0.10), "fail" when over it, "open" when it straddles it. The speaker match
is pooled over every run's WAVs; the F0 error is the worst run's.
Refused: a folder without score.sh's summary.json and asr.json, and runs whose evaluation texts differ.
"""

import argparse
import json
import os
import random
import sys

WER_GAP = 0.10
TARGETS = {'seen': {'match': 0.95, 'f0': 0.10}, 'unseen': {'match': 0.80, 'f0': 0.15}}
SHORT = {'reference': 'ref', 'neural': 'voc', 'finetuned': 'ft', 'speaker': 'spk'}


def load(work):
    out = {}
    for name in ('summary.json', 'asr.json'):
        path = os.path.join(work, name)
        if not os.path.isfile(path):
            sys.exit(f'pool.py: {path} is missing: score the run first (bash bench/voices/score.sh OUT_DIR {work})')
        with open(path, encoding='utf-8') as f:
            out[name] = json.load(f)
    texts = os.path.join(work, 'run', 'eval.tsv')
    if not os.path.isfile(texts):
        sys.exit(f"pool.py: {texts} is missing: {work} is not a folder score.sh scored into")
    with open(texts, encoding='utf-8') as f:
        out['texts'] = f.read()
    return out


def errors(systems, key, ids):
    """One run's (errors, words) of asr.py's system KEY for each text of ids; None where it spoke no WAV."""
    per = systems.get(key, {}).get('per', {})
    return [(per[i]['errors'], per[i]['words']) if i in per else None for i in ids]


def gap(ours, theirs, pick):
    """Pooled WER gap over the runs for the texts in pick (indices, repeats allowed); None when a side has no
    words (a run that spoke none of them)."""
    e_o = w_o = e_t = w_t = 0
    for run_ours, run_theirs in zip(ours, theirs):
        for j in pick:
            if run_ours[j] is None or run_theirs[j] is None:
                continue
            e_o, w_o = e_o + run_ours[j][0], w_o + run_ours[j][1]
            e_t, w_t = e_t + run_theirs[j][0], w_t + run_theirs[j][1]
    return e_o / w_o - e_t / w_t if w_o and w_t else None


def interval(ours, theirs, n, draws=2000):
    """95% interval of the pooled gap: draw n texts with replacement, the same draw for every run and both
    sides (score.sh calls it with one run)."""
    rng = random.Random(0)
    gaps = []
    for _ in range(draws):
        g = gap(ours, theirs, [rng.randrange(n) for _ in range(n)])
        if g is not None:
            gaps.append(g)
    gaps.sort()
    return [gaps[int(0.025 * len(gaps))], gaps[int(0.975 * len(gaps)) - 1]] if len(gaps) > 20 else None


def text_ids(eval_tsv):
    """The evaluation texts' ids in a fixed order (sorted), so that a draw picks the same texts every time."""
    return sorted(line.split('\t', 1)[0] for line in eval_tsv.splitlines() if line.strip())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('works', nargs='+', help="score.sh's WORK folders")
    ap.add_argument('--json', help='write the pooled figures here')
    a = ap.parse_args()
    if len(a.works) < 2:
        sys.exit('pool.py: give at least two scored runs (one run is what score.sh already prints)')
    runs = [load(w) for w in a.works]
    for w, r in zip(a.works[1:], runs[1:]):
        if r['texts'] != runs[0]['texts']:
            sys.exit(f'pool.py: {w}/run/eval.tsv differs from {a.works[0]}/run/eval.tsv: pool runs of the same '
                     'evaluation texts (gpu.sh with the same VOICES_TEXTS and data)')
    ids = text_ids(runs[0]['texts'])
    voices = [(v['voice'], v['split']) for v in runs[0]['summary.json']['voices']]
    modes = [m for m in SHORT if any(m in v['systems'] for r in runs for v in r['summary.json']['voices'])]
    rows = []
    for name, split in voices:
        row = {'voice': name, 'split': split, 'systems': {}}
        for m in modes:
            per_run = [next((v['systems'].get(m) for v in r['summary.json']['voices'] if v['voice'] == name), None)
                       for r in runs]
            spoke = [(r, s) for r, s in zip(runs, per_run) if s]
            if not spoke:
                continue
            ours = [errors(r['asr.json']['systems'], f'{m}:{name}', ids) for r, _ in spoke]
            theirs = [errors(r['asr.json']['systems'], f'espeak-ng:{name}', ids) for r, _ in spoke]
            g, ci = gap(ours, theirs, range(len(ids))), interval(ours, theirs, len(ids))
            utterances = sum(s['utterances'] for _, s in spoke)
            f0_errors = [s['f0_error'] for _, s in spoke if s['f0_error'] is not None]
            verdict = None if g is None or ci is None else (
                'pass' if ci[1] <= WER_GAP else 'fail' if ci[0] > WER_GAP else 'open')
            row['systems'][m] = {
                'runs': len(spoke), 'run_gaps': [s['wer_gap'] for _, s in spoke], 'wer_gap': g, 'wer_gap_95': ci,
                'wer_verdict': verdict,
                'match': sum(s['match'] * s['utterances'] for _, s in spoke) / utterances if utterances else None,
                'utterances': utterances, 'f0_error_worst': max(f0_errors) if f0_errors else None}
        rows.append(row)
    report(rows, modes, len(runs))
    if a.json:
        with open(a.json, 'w', encoding='utf-8') as f:
            json.dump({'runs': a.works, 'texts': len(ids), 'line': WER_GAP, 'voices': rows}, f, indent=1)


def fmt_pct(x):
    return '-' if x is None else f'{x * 100:.1f}%'


def report(rows, modes, n_runs):
    print(f'{n_runs} runs pooled; WER gap over espeak-ng: each run\'s, pooled [95% over the texts] and the verdict '
          f'against +{WER_GAP:.2f}\n(pass: the interval under the line; fail: over it; open: across it)')
    for m in modes:
        print(f'\n{m} ({SHORT[m]})')
        print(f"{'voice':6} {'split':6} {'runs':>4} {'each run':>24} {'pooled':>7} {'95%':>15} {'WER':>5}"
              f" {'match':>6} {'F0 worst':>8}")
        for r in rows:
            s = r['systems'].get(m)
            if not s:
                continue
            each = ' '.join('-' if x is None else f'{x:+.3f}' for x in s['run_gaps'])
            ci = '-' if s['wer_gap_95'] is None else f"[{s['wer_gap_95'][0]:+.2f}, {s['wer_gap_95'][1]:+.2f}]"
            f0 = '-' if s['f0_error_worst'] is None else f"{s['f0_error_worst'] * 100:.0f}%"
            g = '-' if s['wer_gap'] is None else f"{s['wer_gap']:+.3f}"
            print(f"{r['voice']:6} {r['split']:6} {s['runs']:>4} {each:>24} {g:>7} {ci:>15} "
                  f"{s['wer_verdict'] or '-':>5} {fmt_pct(s['match']):>6} {f0:>8}")
        for split in ('seen', 'unseen'):
            group = [r['systems'][m] for r in rows if r['split'] == split and m in r['systems']]
            if not group:
                continue
            t = TARGETS[split]
            n = sum(s['utterances'] for s in group)
            match = sum(s['match'] * s['utterances'] for s in group if s['match'] is not None) / n if n else 0.0
            f0_ok = sum(s['f0_error_worst'] is not None and s['f0_error_worst'] <= t['f0'] for s in group)
            under = sum(s['wer_gap'] is not None and s['wer_gap'] <= WER_GAP for s in group)
            verdicts = {v: sum(s['wer_verdict'] == v for s in group) for v in ('pass', 'open', 'fail')}
            print(f"  {split:6} ({len(group):2} voices): match {match * 100:5.1f}% (target {t['match'] * 100:.0f}%); "
                  f"F0 within {t['f0'] * 100:.0f}% in every run {f0_ok}/{len(group)}; pooled WER gap within "
                  f"+{WER_GAP:.2f} {under}/{len(group)} (pass {verdicts['pass']}, open {verdicts['open']}, "
                  f"fail {verdicts['fail']})")


if __name__ == '__main__':
    main()
