#!/usr/bin/env bash
# The connected machine's half after the GPU run: score what came back.
#   bash bench/intelligibility/score.sh OUT_DIR [WORK]        (OUT_DIR: the folder gpu.sh wrote into)
# Speaks the same sentences with espeak-ng (the reference, as the training audio was made), passes the
# references through xtts's log-mel and Griffin-Lim (the vocoder's ceiling), runs the ASR on all of
# them and prints word error rates and duration ratios side by side (summary.json in WORK).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=${1:?usage: score.sh OUT_DIR [WORK]}
work=${2:-$(mktemp -d)}
py=$here/.venv/bin/python
[[ -x $py ]] || { echo "score.sh: run bench/intelligibility/prepare.sh first (it makes the ASR's environment)" >&2; exit 3; }
mkdir -p "$work/run" "$work/archives"
# gpu.sh's one archive (intelligibility.tar) holds a .tar.gz per run; a run's .tar.gz may also lie loose
# in OUT_DIR (a GPU run cut short leaves the finished runs' archives).
for archive in "$results"/*.tar; do [[ -f $archive ]] && tar -xf "$archive" -C "$work/archives"; done
for archive in "$results"/*.tar.gz "$work/archives"/*.tar.gz; do [[ -f $archive ]] && tar -xzf "$archive" -C "$work/run"; done
[[ -n $(ls "$work/run") ]] || { echo "score.sh: $results holds no intelligibility.tar or run archive from gpu.sh" >&2; exit 2; }
# The overfit set: the quickstart's own sentences, as its metadata has them.
awk -F'|' '{print $1 "\t" $3}' "$repo/configs/quickstart/metadata.csv" >"$work/overfit.tsv"
cp "$here/data/heldout.tsv" "$work/heldout.tsv"
for set in overfit heldout; do
  mkdir -p "$work/$set-espeak"
  while IFS=$'\t' read -r id text; do espeak-ng -v en-us -s 165 -w "$work/$set-espeak/$id.wav" "$text"; done <"$work/$set.tsv"
  (cd "$repo" && node --import tsx bench/intelligibility/vocode.ts "$work/$set-espeak" "$work/$set-espeak-gl")
  systems=("espeak-ng=$work/$set-espeak" "espeak-ng-griffin-lim=$work/$set-espeak-gl")
  [[ -d $work/run/$set-spoken ]] && systems+=("xtts=$work/run/$set-spoken")
  "$py" "$here/asr.py" "$work/$set.tsv" "${systems[@]}" --json "$work/$set-asr.json"
done
"$py" - "$work" <<'PY'
import json, statistics, sys
work = sys.argv[1]
summary = {}
for name in ('overfit', 'heldout'):
    r = json.load(open(f'{work}/{name}-asr.json'))
    s = r['systems']
    row = {k: {'wer': v['wer'], 'utterances': v['utterances']} for k, v in s.items()}
    if 'xtts' in s:
        ref = s['espeak-ng']['per']
        ratios = [p['seconds'] / ref[i]['seconds'] for i, p in s['xtts']['per'].items() if ref.get(i, {}).get('seconds')]
        row['xtts']['duration_ratio_median'] = statistics.median(ratios)
        row['xtts']['duration_within_20pct'] = sum(abs(x - 1) <= 0.2 for x in ratios) / len(ratios)
        row['xtts']['duration_ratio_p10_p90'] = [statistics.quantiles(ratios, n=10)[0], statistics.quantiles(ratios, n=10)[-1]] if len(ratios) > 1 else None
    summary[name] = {'sentences': r['sentences'], 'vocabulary': r['vocabulary'], **row}
    print(f"{name}: {r['sentences']} sentences, ASR vocabulary {r['vocabulary']} words")
    for k, v in row.items():
        extra = ''
        if 'duration_ratio_median' in v:
            extra = f", duration ratio median {v['duration_ratio_median']:.2f} (p10-p90 {v['duration_ratio_p10_p90'][0]:.2f}-{v['duration_ratio_p10_p90'][1]:.2f}), within ±20%: {v['duration_within_20pct'] * 100:.0f}%"
        print(f"  {k:24s} WER {v['wer']:.3f} over {v['utterances']} utterances{extra}")
json.dump(summary, open(f'{work}/summary.json', 'w'), indent=1)
PY
echo "details: $work/{overfit,heldout}-asr.json, $work/summary.json"
