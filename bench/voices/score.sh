#!/usr/bin/env bash
# The connected machine's half of the voices benchmark (bench/voices/README.md): score what gpu.sh brought back.
#   bash bench/voices/score.sh OUT_DIR [WORK]        (OUT_DIR: the folder gpu.sh wrote into)
# espeak-ng speaks the evaluation texts in each of the 15 voices (the F0 targets and the ASR's reference) and
# VOICES_ENROL (36) training sentences in each (the speaker model's enrolment; none is an evaluation text);
# speaker.py enrols its speaker model, reports its own accuracy on espeak-ng's renderings of the evaluation
# texts, then the share of xtts's WAVs it gives to the right voice and their median F0; the intelligibility
# benchmark's ASR (asr.py) scores every voice's espeak-ng and xtts WAVs. One table and WORK/summary.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=${1:?usage: score.sh OUT_DIR [WORK]}
work=${2:-$(mktemp -d)}
enrol_n=${VOICES_ENROL:-36}
py=$here/../intelligibility/.venv/bin/python
if [[ ! -x $py ]]; then
  echo "score.sh: run bench/voices/prepare.sh first (it makes the ASR's environment)" >&2
  exit 3
fi
data=${VOICES_DATA:-$here/data} # the enrolment sentences: its first 36 training sentences
if [[ ! -f $data/train.tsv ]]; then
  echo "score.sh: $data/train.tsv is missing: run bench/voices/prepare.sh first (or give gpu.sh's VOICES_DATA)" >&2
  exit 3
fi
mkdir -p "$work/run"
# voices.tar, or its parts voices.tar.0, .1, … (gpu.sh splits an archive over 15 MiB).
if [[ -f $results/voices.tar ]]; then
  tar -xf "$results/voices.tar" -C "$work/run"
elif [[ -f $results/voices.tar.0 ]]; then
  cat "$results"/voices.tar.[0-9] | tar -xf - -C "$work/run" # split -a 1: at most 10 parts, in glob order
else
  echo "score.sh: $results holds no voices.tar from gpu.sh" >&2
  exit 2
fi
if [[ ! -f $work/run/eval.tsv ]]; then
  echo "score.sh: the archive has no eval.tsv: gpu.sh stopped before its texts" >&2
  exit 2
fi
voices=$work/run/voices.tsv
[[ -f $voices ]] || voices=$here/voices.tsv
cat "$work/run/summary.txt" 2>/dev/null | sed 's/^/gpu.sh: /' || true

# espeak-ng's renderings: the evaluation texts (espeak/<voice>/<id>.wav) and the enrolment sentences
# (enrol/<voice>/<id>.wav), all cores. A task line is folder<TAB>id<TAB>voice<TAB>pitch<TAB>rate<TAB>text.
t=$(date +%s)
head -n "$enrol_n" "$data/train.tsv" >"$work/enrol.tsv"
: >"$work/tasks.tsv"
while IFS=$'\t' read -r name voice pitch rate split; do
  [[ $name == name || $name == \#* || -z $name ]] && continue
  mkdir -p "$work/espeak/$name" "$work/enrol/$name"
  awk -F'\t' -v OFS='\t' -v d="$work/espeak/$name" -v v="$voice" -v p="$pitch" -v r="$rate" \
    '{ print d, $1, v, p, r, $2 }' "$work/run/eval.tsv" >>"$work/tasks.tsv"
  awk -F'\t' -v OFS='\t' -v d="$work/enrol/$name" -v v="$voice" -v p="$pitch" -v r="$rate" \
    '{ print d, $1, v, p, r, $2 }' "$work/enrol.tsv" >>"$work/tasks.tsv"
done <"$voices"
tr '\n' '\0' <"$work/tasks.tsv" | xargs -0 -P "$(nproc)" -n 1 sh -c \
  'set -f; IFS="	"; set -- $0; exec espeak-ng -v "$3" -p "$4" -s "$5" -w "$1/$2.wav" "$6"'
echo "score.sh: espeak-ng spoke $(wc -l <"$work/tasks.tsv") utterances in $(($(date +%s) - t)) s" >&2
# The vocoder's ceiling: espeak-ng's renderings of the evaluation texts through xtts's log-mel (voices.yaml's
# audio settings) and Griffin-Lim, as xtts's mels are spoken (bench/intelligibility/vocode.ts).
t=$(date +%s)
ls "$work/espeak" | tr '\n' '\0' | (cd "$repo" && xargs -0 -P "$(nproc)" -n 1 sh -c \
  'node --import tsx bench/intelligibility/vocode.ts "$0/espeak/$1" "$0/griffin-lim/$1" bench/voices/voices.yaml' \
  "$work")
echo "score.sh: Griffin-Lim ceiling in $(($(date +%s) - t)) s" >&2

t=$(date +%s)
systems=(--system "griffin-lim=$work/griffin-lim")
for mode in reference neural finetuned speaker; do
  [[ -d $work/run/spoken/$mode ]] && systems+=(--system "$mode=$work/run/spoken/$mode")
done
"$py" "$here/speaker.py" score --voices "$voices" --enrol "$work/enrol" --espeak "$work/espeak" \
  ${systems[@]+"${systems[@]}"} --json "$work/speaker.json"
echo "score.sh: speaker model and F0 in $(($(date +%s) - t)) s" >&2

t=$(date +%s)
asr=()
while IFS=$'\t' read -r name _ _ _ _; do
  [[ $name == name || $name == \#* || -z $name ]] && continue
  asr+=("espeak-ng:$name=$work/espeak/$name" "griffin-lim:$name=$work/griffin-lim/$name")
  for mode in reference neural finetuned speaker copy-neural copy-finetuned; do
    [[ -d $work/run/spoken/$mode/$name ]] && asr+=("$mode:$name=$work/run/spoken/$mode/$name")
  done
done <"$voices"
"$py" "$here/../intelligibility/asr.py" "$work/run/eval.tsv" "${asr[@]}" --json "$work/asr.json" 2>"$work/asr.log"
echo "score.sh: ASR in $(($(date +%s) - t)) s" >&2

"$py" - "$work" "$here" <<'PY'
import json
import sys

work = sys.argv[1]
sys.path.insert(0, sys.argv[2])
# the targets and the paired bootstrap, one implementation for one run and for pooled runs
from pool import SHORT, TARGETS, WER_GAP, errors, interval, text_ids  # noqa: E402

sp = json.load(open(f'{work}/speaker.json'))
asr = json.load(open(f'{work}/asr.json'))['systems']
modes = [m for m in SHORT if m in sp['systems']]


def fmt(v, spec, none='-'):
    return none if v is None else format(v, spec)


# Each voice's WER gap gets a 95% interval by a paired bootstrap over the texts (pool.py's, with one run): 12 or 36
# texts leave a gap of a few hundredths on either side of the line undecided; this says how far.
ids = text_ids(open(f'{work}/run/eval.tsv', encoding='utf-8').read())
COPIES = ('copy-neural', 'copy-finetuned')  # gpu.sh's VOICES_COPY: espeak-ng's audio through each vocoder


def gap_95(system, name):
    """The 95% interval of SYSTEM's WER gap over espeak-ng's in voice NAME."""
    return interval([errors(asr, f'{system}:{name}', ids)], [errors(asr, f'espeak-ng:{name}', ids)], len(ids))


rows = []
for v in sp['voices']:
    name, split = v['name'], v['split']
    target = sp['espeak'].get(name, {}).get('f0_median')
    espeak_wer = asr.get(f'espeak-ng:{name}', {}).get('wer')
    row = {'voice': name, 'espeak': f"{v['espeak']} -p {v['pitch']} -s {v['rate']}", 'split': split,
           'f0_target': target, 'espeak_wer': espeak_wer,
           'espeak_match': sp['espeak'].get(name, {}).get('match'), 'systems': {}}
    gl = sp['systems'].get('griffin-lim', {}).get(name)
    if gl:  # the vocoder's ceiling: espeak-ng's own audio through log-mel and Griffin-Lim
        f0 = gl['f0_median']
        row['griffin_lim'] = {'f0': f0, 'f0_error': abs(f0 - target) / target if f0 and target else None,
                              'match': gl['match'], 'wer': asr.get(f'griffin-lim:{name}', {}).get('wer')}
    espeak_speech = sp['espeak'].get(name, {})
    for m in modes:
        r = sp['systems'][m].get(name)
        if r is None:
            continue
        # The pace: xtts's speaking time over espeak-ng's for the same texts (only where it spoke them all).
        pace = (r['speech_s'] / espeak_speech['speech_s']
                if r['utterances'] == espeak_speech.get('utterances') and espeak_speech.get('speech_s') else None)
        f0 = r['f0_median']
        err = abs(f0 - target) / target if f0 and target else None
        wer = asr.get(f'{m}:{name}', {}).get('wer')
        gap = wer - espeak_wer if wer is not None and espeak_wer is not None else None
        t = TARGETS[split]
        row['systems'][m] = {
            'utterances': r['utterances'], 'f0': f0, 'f0_error': err, 'match': r['match'], 'guesses': r['guesses'],
            'wer': wer, 'wer_gap': gap, 'pace': pace,
            'wer_gap_95': gap_95(m, name) if gap is not None else None,
            'pass': {'match': r['match'] >= t['match'], 'f0': err is not None and err <= t['f0'],
                     'wer': gap is not None and gap <= WER_GAP}}
    # The neural vocoders' ceiling (gpu.sh's VOICES_COPY): espeak-ng's own renderings through log-mel and
    # each vocoder; the gap over espeak-ng is what the vocoder alone costs this voice's WER.
    for m in COPIES:
        wer = asr.get(f'{m}:{name}', {}).get('wer')
        if wer is not None and espeak_wer is not None:
            row.setdefault('copy', {})[m] = {'wer': wer, 'wer_gap': wer - espeak_wer, 'wer_gap_95': gap_95(m, name)}
    rows.append(row)

confused = {n: r['guesses'] for n, r in sp['espeak'].items() if r['match'] < 1}
print(f"\nspeaker model: {sp['enrolment']['utterances']} enrolment utterances, accuracy on them "
      f"{sp['enrolment']['accuracy'] * 100:.1f}%; on espeak-ng's renderings of the evaluation texts "
      f"{sp['sanity_accuracy'] * 100:.1f}% (the sanity figure){'; confused: ' + str(confused) if confused else ''}")
print(f'targets: seen match >= 95%, F0 error <= 10%; unseen match >= 80% (among all voices), F0 error <= 15%;\n'
      f'  WER <= espeak-ng + {WER_GAP:.2f}. Each cell: {"/".join(SHORT[m] for m in modes)}: ref = cloned from one '
      'clip (--reference) through Griffin-Lim, voc = the same\n  through the neural vocoder, ft = through the '
      'fine-tuned vocoder, spk = by name (--speaker); a failed row names its targets\n  (m: match, f: F0, w: WER); '
      'GL: espeak-ng through log-mel and Griffin-Lim (the Griffin-Lim ceiling); pace: xtts\'s speaking\n  time over '
      "espeak-ng's in that voice for the same texts (no target; 1.00 keeps the voice's pace)\n")
head = (f"{'voice':6} {'split':6} {'F0 target':>9} {'F0 xtts':>9} {'F0 error':>9} {'match':>9} {'WER espeak':>10}"
        f" {'WER xtts':>11} {'pace':>9} {'pass':>9} | {'GL F0 err':>9} {'GL match':>8} {'GL WER':>6}")
print(head)
print('-' * len(head))


def pair(s, k, spec, scale=1, unit=''):
    cell = []
    for m in modes:
        v = s.get(m, {}).get(k)
        cell.append('-' if v is None else format(v * scale, spec) + unit)
    return '/'.join(cell)


def verdict(s):
    cell = []
    for m in modes:
        p = s.get(m, {}).get('pass')
        cell.append('-' if p is None else ('ok' if all(p.values()) else ''.join(k[0] for k, v in p.items() if not v)))
    return '/'.join(cell)


for r in rows:
    s, gl = r['systems'], r.get('griffin_lim', {})
    print(f"{r['voice']:6} {r['split']:6} {fmt(r['f0_target'], '.1f'):>9} {pair(s, 'f0', '.0f'):>9} "
          f"{pair(s, 'f0_error', '.0f', 100, '%'):>9} {pair(s, 'match', '.0f', 100, '%'):>9} "
          f"{fmt(r['espeak_wer'], '.3f'):>10} {pair(s, 'wer', '.3f'):>11} {pair(s, 'pace', '.2f'):>9} "
          f"{verdict(s):>9} | "
          f"{fmt(gl.get('f0_error') and gl['f0_error'] * 100, '.0f') + '%':>9} "
          f"{fmt(gl.get('match') is not None and gl['match'] * 100 or None, '.0f') + '%':>8} "
          f"{fmt(gl.get('wer'), '.3f'):>6}")

summary = {'speaker_model': {'enrolment': sp['enrolment'], 'sanity_accuracy': sp['sanity_accuracy']},
           'voices': rows, 'targets': {}}
print()
for m in modes:
    for split in ('seen', 'unseen'):
        group = [r for r in rows if r['split'] == split and m in r['systems']]
        if not group:
            continue
        n = sum(r['systems'][m]['utterances'] for r in group)
        pooled = sum(r['systems'][m]['match'] * r['systems'][m]['utterances'] for r in group) / n
        t = TARGETS[split]
        f0_ok = sum(r['systems'][m]['pass']['f0'] for r in group)
        wer_ok = sum(r['systems'][m]['pass']['wer'] for r in group)
        res = {'voices': len(group), 'match': pooled, 'match_pass': pooled >= t['match'],
               'f0_pass_voices': f0_ok, 'f0_pass': f0_ok == len(group),
               'wer_pass_voices': wer_ok, 'wer_pass': wer_ok == len(group)}
        summary['targets'][f'{m}:{split}'] = res
        pf = lambda b: 'PASS' if b else 'FAIL'  # noqa: E731
        print(f"{m:9} {split:6} ({len(group):2} voices): match {pooled * 100:5.1f}% (target {t['match'] * 100:.0f}%) "
              f"{pf(res['match_pass'])}; F0 within {t['f0'] * 100:.0f}% {f0_ok}/{len(group)} {pf(res['f0_pass'])}; "
              f"WER within +{WER_GAP:.2f} {wer_ok}/{len(group)} {pf(res['wer_pass'])}")
copies = [m for m in COPIES if any(m in r.get('copy', {}) for r in rows)]
if copies:
    print("\nthe vocoders' ceiling: espeak-ng's renderings through log-mel and the vocoder; WER gap over espeak-ng "
          '[95% over the texts]')
    for r in rows:
        cells = [f"{m} {c['wer_gap']:+.3f}" + ('' if not c['wer_gap_95'] else
                                              f" [{c['wer_gap_95'][0]:+.2f}, {c['wer_gap_95'][1]:+.2f}]")
                 for m in copies if (c := r.get('copy', {}).get(m))]
        print(f"  {r['voice']:6} {r['split']:6} " + '; '.join(cells))
# The WER gaps that fail, or whose interval reaches over the line: how sure each verdict is.
near = [f"{r['voice']} {SHORT[m]} {x['wer_gap']:+.3f} [{x['wer_gap_95'][0]:+.2f}, {x['wer_gap_95'][1]:+.2f}]"
        for r in rows for m in modes if (x := r['systems'].get(m)) and x.get('wer_gap_95')
        and (not x['pass']['wer'] or x['wer_gap_95'][1] > WER_GAP)]
if near:
    print(f"WER gaps failing or undecided (95% paired bootstrap over the texts; line +{WER_GAP:.2f}):")
    for i in range(0, len(near), 4):
        print('  ' + '; '.join(near[i:i + 4]))
json.dump(summary, open(f'{work}/summary.json', 'w'), indent=1)
PY
echo "details: $work/speaker.json, $work/asr.json, $work/summary.json"
