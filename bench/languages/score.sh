#!/usr/bin/env bash
# The connected machine's half after the GPU run (bench/languages/README.md): score what came back.
#   bash bench/languages/score.sh OUT_DIR [WORK]     (OUT_DIR: the folder gpu.sh wrote into)
# For each language, espeak-ng speaks the held-out sentences that were synthesised (as the cleaner reads
# them, with the training's voice and rate: the reference), xtts's WAVs (line-NNNN.wav for the NNNNth
# sentence) are copied to the reference's names, and bench/vocoder/score.ts scores them by mel-cepstral
# distortion along a DTW path (xtts's durations are its own); the references passed through xtts's log-mel
# and Griffin-Lim (bench/intelligibility/vocode.ts) are scored the same way, as the ceiling that the
# vocoder sets. MCD is taken up to the features' fmax_hz (8 kHz, LANGUAGES_FMAX): above it Griffin-Lim has
# nothing to invert and writes silence, which would dominate a full-band figure and make every language look
# alike (the full band is scored too, as context, in summary.json). Prints each language's DTW-MCD (median
# and mean), its ratio to English's and whether it is within 10% of English's; writes WORK/summary.json
# (and WORK/LANG-scores.json, WORK/LANG-scores-full.json: every clip's figures).
# Needs espeak-ng, python3 and the checkout's node_modules (npm ci).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=${1:?usage: score.sh OUT_DIR [WORK]}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
languages=(en de es)
declare -A voice=([en]=en-us [de]=de [es]=es)
rate=165
fmax=${LANGUAGES_FMAX:-8000} # languages.yaml's audio.fmax_hz (tiny's default)
mkdir -p "$work/archive" "$work/run"
# gpu.sh's one archive, or its parts when it was split (languages.tar.00, .01, ...).
if [[ -f $results/languages.tar ]]; then
  tar -xf "$results/languages.tar" -C "$work/archive"
elif [[ -f $results/languages.tar.00 ]]; then
  cat "$results"/languages.tar.[0-9][0-9] | tar -xf - -C "$work/archive"
else
  echo "score.sh: $results holds no languages.tar (or languages.tar.00, ...) from gpu.sh" >&2
  exit 2
fi
for archive in "$work"/archive/*.tar.*; do tar -xf "$archive" -C "$work/run"; done
[[ -f $work/archive/summary.txt ]] && cat "$work/archive/summary.txt"

for lang in "${languages[@]}"; do
  # The sentences that were spoken: the archive's copies (the first LANGUAGES_HELDOUT rows), else data/.
  tsv=$work/archive/$lang-heldout.tsv spoken=$work/archive/$lang-heldout.spoken.tsv
  [[ -f $tsv ]] || tsv=$here/data/$lang-heldout.tsv spoken=$here/data/$lang-heldout.spoken.tsv
  rm -rf "$work/$lang-espeak" "$work/$lang-xtts" "$work/$lang-griffin-lim"
  mkdir -p "$work/$lang-espeak" "$work/$lang-xtts"
  tr '\n' '\0' <"$spoken" | xargs -0 -P "$(nproc)" -n 1 sh -c \
    'espeak-ng -v "$1" -s "$2" -w "$0/${3%%	*}.wav" "${3#*	}"' "$work/$lang-espeak" "${voice[$lang]}" "$rate"
  # xtts's line-NNNN.wav is the NNNNth line of the texts file, which was the TSV's second column.
  n=0
  while IFS=$'\t' read -r id _; do
    n=$((n + 1))
    wav=$work/run/$lang-spoken/line-$(printf %04d "$n").wav
    [[ -f $wav ]] && cp "$wav" "$work/$lang-xtts/$id.wav"
  done <"$tsv"
  (cd "$repo" && node --import tsx bench/intelligibility/vocode.ts "$work/$lang-espeak" "$work/$lang-griffin-lim" \
    "$here/languages.yaml")
  systems=("griffin-lim=$work/$lang-griffin-lim")
  [[ -n $(ls "$work/$lang-xtts") ]] && systems=("xtts=$work/$lang-xtts" "${systems[@]}")
  echo "== $lang: $(wc -l <"$tsv") held-out sentences, $(ls "$work/$lang-xtts" | wc -l) spoken by xtts"
  (cd "$repo" && node --import tsx bench/vocoder/score.ts "$work/$lang-espeak" "${systems[@]}" --align dtw \
    --fmax "$fmax" --json "$work/$lang-scores.json")
  (cd "$repo" && node --import tsx bench/vocoder/score.ts "$work/$lang-espeak" "${systems[@]}" --align dtw \
    --json "$work/$lang-scores-full.json" >/dev/null)
done

python3 - "$work" "$fmax" "${languages[@]}" <<'PY'
import json, statistics, sys, wave

work, fmax, languages = sys.argv[1], sys.argv[2], sys.argv[3:]
TOLERANCE = 0.10  # each language's DTW-MCD within 10% of English's


def seconds(path):
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


scores = {lang: json.load(open(f'{work}/{lang}-scores.json')) for lang in languages}
full = {lang: json.load(open(f'{work}/{lang}-scores-full.json')) for lang in languages}
summary = {'metric': f'MCD in dB up to {fmax} Hz along a DTW path against espeak-ng '
           f'(bench/vocoder/score.ts --align dtw --fmax {fmax}); *_full: over the whole band',
           'tolerance': TOLERANCE, 'languages': {}}
english = scores['en'].get('xtts')
for lang in languages:
    row = {}
    for system, s in scores[lang].items():
        f = full[lang][system]
        row[system] = {'clips': s['clips'], 'mcd_median': s['median']['mcdDb'], 'mcd_mean': s['mean']['mcdDb'],
                       'mcd_median_full': f['median']['mcdDb'], 'mcd_mean_full': f['mean']['mcdDb']}
    x = scores[lang].get('xtts')
    if x:
        ratios = [seconds(f'{work}/{lang}-xtts/{clip}') / seconds(f'{work}/{lang}-espeak/{clip}')
                  for clip in x['perClip']]
        row['xtts']['duration_ratio_median'] = statistics.median(ratios)
        if english:
            for stat in ('median', 'mean'):
                row['xtts'][f'ratio_to_english_{stat}'] = x[stat]['mcdDb'] / english[stat]['mcdDb']
            r = row['xtts']['ratio_to_english_median']
            row['xtts']['pass'] = abs(r - 1) <= TOLERANCE
    summary['languages'][lang] = row
json.dump(summary, open(f'{work}/summary.json', 'w'), indent=1)

print(f'\nDTW-MCD (dB, up to {fmax} Hz) against espeak-ng, per language; '
      'target: each within 10% of English (median)')
print(f"{'lang':4}  {'clips':>5}  {'xtts median':>11}  {'mean':>6}  {'ratio to en':>15}  {'verdict':7}  "
      f"{'durations':>9}  {'Griffin-Lim ceiling':>19}")
for lang in languages:
    row = summary['languages'][lang]
    gl = row['griffin-lim']
    ceiling = f"{gl['mcd_median']:.2f} / {gl['mcd_mean']:.2f}"
    x = row.get('xtts')
    if not x:
        print(f"{lang:4}  {0:>5}  {'—':>11}  {'—':>6}  {'—':>15}  {'—':7}  {'—':>9}  {ceiling:>19}")
        continue
    ratio = (f"{x['ratio_to_english_median']:.3f} ({x['ratio_to_english_mean']:.3f})"
             if 'ratio_to_english_median' in x else '—')
    verdict = ('pass' if x['pass'] else 'FAIL') if 'pass' in x else '—'
    print(f"{lang:4}  {x['clips']:>5}  {x['mcd_median']:>11.2f}  {x['mcd_mean']:>6.2f}  {ratio:>15}  {verdict:7}  "
          f"{x['duration_ratio_median']:>9.2f}  {ceiling:>19}")
print('ratio to en: of the medians (of the means); durations: median of xtts / espeak-ng; '
      'Griffin-Lim ceiling: espeak-ng through log-mel and Griffin-Lim, median / mean')
verdicts = [r['xtts']['pass'] for r in summary['languages'].values() if 'pass' in r.get('xtts', {})]
if verdicts:
    print('target ' + ('met' if all(verdicts) else 'NOT met') + ': every language within 10% of English')
PY
echo "details: $work/{en,de,es}-scores.json, $work/summary.json"
