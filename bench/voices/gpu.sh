#!/usr/bin/env bash
# The GPU half of the voices benchmark (bench/voices/README.md), on a GPU host with the bundle and the runtime
# folder beside the checkout (npm run bundle && npm run gpu-runtime), run from the checkout's root:
#
#   bash bench/voices/gpu.sh OUT [MINUTES]
#
# 1. The corpus: espeak-ng (all cores) speaks the training sentences of VOICES_DATA (default bench/voices/data, 3,600
#    from prepare.sh; bench/intelligibility/data has 1,200), round-robin over the 12 seen voices of voices.tsv (300
#    or 100 clips each; metadata id|text|text|speaker). The 3
#    unseen voices never speak a training clip. Training-only voices (VOICES_EXTRA, default extra-voices.tsv:
#    42 voices; none: without them) speak VOICES_EXTRA_CLIPS (50) clips each; they are neither cloned nor scored.
# 2. The clips: one of about 6 s per voice, all 15 (clips.py: held-out sentences that are not evaluation
#    texts), and the evaluation texts: the first VOICES_TEXTS (20) held-out sentences.
# 3. Training: voices.yaml for at most MINUTES (default 5.5), a cosine schedule sized to what fits in that
#    time (fit_steps: an 80-step calibration run measures the mean step; VOICES_STEPS fixes it instead).
#    VOICES_VOCODER_MINUTES (default 0: none) also trains xtts's neural vocoder (bench/vocoder/heldout.yaml,
#    vocoder-small) on the same corpus, beside the acoustic model on the same GPU from the calibration on
#    (VOICES_VOCODER_BESIDE=0: alone, before it), for at most that many minutes (a schedule of
#    VOICES_VOCODER_STEPS, default 2,400 a minute; VOICES_VOCODER_CACHE=DIR reuses one trained by an earlier run
#    of the same recipe, below; VOICES_VOCODER_ONLY=1 stops once it is kept there); then VOICES_FINETUNE_STEPS
#    (default 0: none) fine-tune it on the trained model's teacher-forced mels of the seen voices' first
#    VOICES_FINETUNE_CLIPS (100) clips each (vocoder.finetune_acoustic, at 3e-4), HiFi-GAN's second stage.
# 4. Synthesis of the evaluation texts, batch 32: for every voice cloned from its clip (--reference; the unseen
#    voices first, so that a run cut short by the deadline still has them), through
#    the fine-tuned and the plain neural vocoder too where they were trained (spoken/finetuned, spoken/neural;
#    VOICES_GRIFFIN_LIM=0: through them alone; VOICES_PLAIN_VOCODER=0: the plain one only where no fine-tuned one
#    was made, so that more texts fit the time), for every seen voice also by name (--speaker, Griffin-Lim;
#    VOICES_BY_NAME=0: not); VOICES_JOBS (4) calls at a time; a call not started VOICES_DEADLINE_S (540) seconds
#    after the script's start is skipped (and logged) so that the whole fits in one 10-minute command. The WAVs
#    are rewritten at 16 kHz (shrink.py).
# 5. VOICES_COPY="neural finetuned" (or either): the vocoders' ceiling: espeak-ng's renderings of the evaluation
#    texts in every voice through log-mel and those vocoders (xtts vocode; spoken/copy-neural, copy-finetuned).
# Everything comes back as one archive, OUT/voices.tar (WAVs, the trainer's and synthesiser's JSON and logs,
# the clips and texts, summary.txt with each phase's timing, host.txt, nvidia-smi's log), split into 15 MiB
# parts voices.tar.0, .1, … when larger (a file comes back from a GPU host only under 16 MiB), and the
# model's weights (no optimizer state) as OUT/voices-checkpoint.tar.gz. The archive is rewritten after each
# phase and on SIGTERM/SIGINT, so a run cut short still leaves what finished. Score with score.sh.
#
# Rehearsal on a CPU: XTTS_CLI="node src/cli/run.js" XTTS_BENCH_BACKEND=wasm VOICES_STEPS=30 VOICES_TEXTS=4
# VOICES_EXTRA_CLIPS=2 VOICES_ARGS="--set batching.batch_size=8 --set training.precision=fp32" (small at batch 32
# passes wasm's 4 GiB heap; mixed_fp16 trains on webgpu only)
# (no .gpu-runtime/: espeak-ng and node come from PATH; no nvidia-smi: none is logged).
set -u
start=$(date +%s%N)
out=${1:?usage: gpu.sh OUT [MINUTES]}
minutes=${2:-5.5}
here=$(cd "$(dirname "$0")" && pwd)
data=${VOICES_DATA:-$here/data}
texts=${VOICES_TEXTS:-20}
parallel=${VOICES_JOBS:-4}
deadline_s=${VOICES_DEADLINE_S:-540}
max_seconds=${VOICES_MAX_SECONDS:-8}
extra=${VOICES_EXTRA:-$here/extra-voices.tsv} # "none": the scored voices alone
[[ $extra == none ]] && extra=
extra_clips=${VOICES_EXTRA_CLIPS:-50}
by_name=${VOICES_BY_NAME:-1}
vocoder_minutes=${VOICES_VOCODER_MINUTES:-0}
finetune_steps=${VOICES_FINETUNE_STEPS:-0}
finetune_clips=${VOICES_FINETUNE_CLIPS:-100}
if ! [[ $finetune_clips =~ ^[1-9][0-9]*$ ]]; then
  echo "gpu.sh: VOICES_FINETUNE_CLIPS must be a whole number of clips, at least 1, not '$finetune_clips'" >&2
  exit 2
fi
griffin_lim=${VOICES_GRIFFIN_LIM:-1}
plain_vocoder=${VOICES_PLAIN_VOCODER:-1}
copy=${VOICES_COPY:-}
for mode in $copy; do
  if [[ $mode != neural && $mode != finetuned ]]; then
    echo "gpu.sh: VOICES_COPY names vocoders to copy-synthesise through: neural, finetuned or both, not '$mode'" >&2
    exit 2
  fi
done
vocoder_on=0 # a neural vocoder is trained (VOICES_VOCODER_MINUTES above 0)
awk -v m="$vocoder_minutes" 'BEGIN { exit !(m > 0) }' && vocoder_on=1
vocoder_only=${VOICES_VOCODER_ONLY:-0}
if [[ $vocoder_only == 1 ]] &&
  ! [[ $vocoder_on == 1 && ${VOICES_VOCODER_BESIDE:-1} == 0 && -n ${VOICES_VOCODER_CACHE:-} ]]; then
  echo "gpu.sh: VOICES_VOCODER_ONLY=1 trains the vocoder alone for the calls after it: it needs" \
    "VOICES_VOCODER_MINUTES above 0, VOICES_VOCODER_BESIDE=0 and VOICES_VOCODER_CACHE=DIR" >&2
  exit 2
fi
for flag in griffin_lim plain_vocoder by_name vocoder_only; do
  if [[ ${!flag} != [01] ]]; then
    echo "gpu.sh: VOICES_${flag^^} must be 0 or 1, not '${!flag}'" >&2
    exit 2
  fi
done
source "$here/../gpu-host.sh"
gpu_setup
mkdir -p "$work/logs"
since() { echo "$((($(date +%s%N) - $1) / 1000000))"; }
elapsed_s() { echo "$((($(date +%s%N) - start) / 1000000000))"; }
log() { echo "$*" >>"$work/summary.txt"; echo "gpu.sh [$(elapsed_s) s] $*" >&2; }
# The deadline is kept by the phases too, not by skipping synthesis alone: the acoustic model's training and the
# fine-tuning stop in time to leave VOICES_SYNTH_RESERVE_S (70) seconds for synthesis, and the training also
# VOICES_FINETUNE_RESERVE_S (80) for the fine-tuning. On a slow host (every phase 1.4-1.8x X's) the runs before
# this ran their full minutes and the deadline then skipped most of the synthesis.
synth_reserve_s=${VOICES_SYNTH_RESERVE_S:-70}
finetune_reserve_s=0
((finetune_steps > 0)) && finetune_reserve_s=${VOICES_FINETUNE_RESERVE_S:-80}
# within MINUTES RESERVE_S: MINUTES, or fewer where they would not end RESERVE_S before the deadline (20 s of a
# run's start-up, before its minutes count, left out; 0.1 at the least).
within() {
  awk -v m="$1" -v d="$deadline_s" -v e="$(elapsed_s)" -v r="$2" \
    'BEGIN { left = (d - e - r - 20) / 60; if (left > m) left = m; printf "%.2f", (left < 0.1 ? 0.1 : left) }'
}
{
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  else
    echo "no nvidia-smi"
  fi
  nproc
  espeak-ng --version
  echo "backend $backend; cli $x; minutes $minutes; texts $texts; jobs $parallel; by name $by_name"
  echo "extra voices: ${extra:-none}${extra:+, $extra_clips clips each}; args: ${VOICES_ARGS:-none}"
  echo "neural vocoder: $vocoder_minutes minutes${VOICES_VOCODER_STEPS:+, $VOICES_VOCODER_STEPS steps}," \
    "beside the acoustic model ${VOICES_VOCODER_BESIDE:-1};" \
    "fine-tuned $finetune_steps steps; Griffin-Lim clones $griffin_lim; plain vocoder clones $plain_vocoder;" \
    "copy synthesis through: ${copy:-none}"
} >"$work/host.txt" 2>&1
if [[ ! -f $data/train.tsv || ! -f $data/heldout.tsv ]]; then
  echo "gpu.sh: $data/train.tsv and heldout.tsv are missing: run bench/voices/prepare.sh first" >&2
  exit 2
fi
smi_sample "$work/smi.csv" 500

# The archive, rewritten whole (small things first, so that part 0 holds the logs), and the weights.
pack() {
  local t=$(date +%s%N) items=() i
  cp "$here/voices.tsv" "$work/voices.tsv"
  [[ -n $extra ]] && cp "$extra" "$work/extra-voices.tsv"
  for i in summary.txt host.txt runtime.txt smi.csv voices.tsv extra-voices.tsv eval.tsv clips/clips.tsv logs \
    voices-list.json data/metadata.csv voices vocoder finetuned clips spoken; do
    [[ -e $work/$i ]] && items+=("$i")
  done
  rm -f "$out"/voices.tar "$out"/voices.tar.[0-9]*
  (cd "$work" && tar -cf "$out/voices.tar.tmp" --exclude='*/checkpoints' "${items[@]}")
  if (($(stat -c %s "$out/voices.tar.tmp") > 15 * 1048576)); then
    split -b 15M -d -a 1 "$out/voices.tar.tmp" "$out/voices.tar." && rm -f "$out/voices.tar.tmp"
  else
    mv "$out/voices.tar.tmp" "$out/voices.tar"
  fi
  if [[ -d $work/voices/checkpoints && ! -f $out/voices-checkpoint.tar.gz ]]; then
    (cd "$work" && tar -czf "$out/voices-checkpoint.tar.gz" --exclude='*/optimizer.*' voices/checkpoints)
  fi
  echo "packed in $(since "$t") ms" >&2
}
stopped() {
  log "stopped by a signal at $(elapsed_s) s"
  for p in ${running[@]+"${running[@]}"} ${vocoder_pid:-}; do kill "$p" 2>/dev/null; done
  smi_stop
  pack
  exit 143
}
running=()
trap stopped TERM INT

# 1. The corpus: the seen voices round-robin over the training sentences. A task line is
# folder<TAB>id<TAB>voice<TAB>pitch<TAB>rate<TAB>text.
speak_tasks() { # TASKS: each line spoken by espeak-ng, all cores
  tr '\n' '\0' <"$1" | xargs -0 -P "$(nproc)" -n 1 sh -c \
    'set -f; IFS="	"; set -- $0; exec espeak-ng -v "$3" -p "$4" -s "$5" -w "$1/$2.wav" "$6"'
}
t=$(date +%s%N)
mkdir -p "$work/data/wavs"
awk -F'\t' -v OFS='\t' -v dir="$work/data/wavs" -v tasks="$work/corpus-tasks.tsv" -v meta="$work/data/metadata.csv" '
  NR == FNR && $1 != "name" && $1 !~ /^#/ && $5 == "seen" { n++; name[n] = $1; v[n] = $2; p[n] = $3; r[n] = $4 }
  NR == FNR { next }
  { k = (FNR - 1) % n + 1; print dir, $1, v[k], p[k], r[k], $2 > tasks; print $1 "|" $2 "|" $2 "|" name[k] > meta }
' "$here/voices.tsv" "$data/train.tsv"
# Training-only voices (VOICES_EXTRA, voices.tsv's columns): voice k speaks VOICES_EXTRA_CLIPS training sentences
# from sentence k·VOICES_EXTRA_CLIPS on (wrapping), ids prefixed with its name. Never evaluated or enrolled.
if [[ -n $extra ]]; then
  awk -F'\t' -v OFS='\t' -v dir="$work/data/wavs" -v tasks="$work/corpus-tasks.tsv" -v meta="$work/data/metadata.csv" \
    -v clips="$extra_clips" '
    NR == FNR && $1 != "name" && $1 !~ /^#/ && NF >= 4 { n++; name[n] = $1; v[n] = $2; p[n] = $3; r[n] = $4 }
    NR == FNR { next }
    { m++; id[m] = $1; text[m] = $2 }
    END {
      for (k = 1; k <= n; k++) for (i = 0; i < clips && i < m; i++) {
        j = ((k - 1) * clips + i) % m + 1; x = name[k] "-" id[j]
        print dir, x, v[k], p[k], r[k], text[j] >> tasks; print x "|" text[j] "|" text[j] "|" name[k] >> meta
      }
    }' "$extra" "$data/train.tsv"
fi
speak_tasks "$work/corpus-tasks.tsv"
log "corpus: $(ls "$work/data/wavs" | wc -l) clips of $(cut -d'|' -f4 "$work/data/metadata.csv" | sort -u | wc -l)" \
  "voices spoken in $(since "$t") ms"

# 2. The clips and the evaluation texts.
t=$(date +%s%N)
head -n "$texts" "$data/heldout.tsv" >"$work/eval.tsv"
cut -f2 "$work/eval.tsv" >"$work/eval.txt"
python3 "$here/clips.py" "$here/voices.tsv" "$data/heldout.tsv" "$texts" "$work/clips" 2>>"$work/logs/clips.log"
log "clips: $(ls "$work/clips"/*.wav 2>/dev/null | wc -l) reference clips" \
  "($(awk -F'\t' '{ s += $2 } END { if (NR) printf "%.1f", s / NR }' "$work/clips/clips.tsv") s on average)" \
  "and $(wc -l <"$work/eval.tsv") evaluation texts in $(since "$t") ms"
pack

# 3. Training. The neural vocoder first (VOICES_VOCODER_MINUTES): in the background (VOICES_VOCODER_BESIDE=1, the
# default), where the calibration below then measures the acoustic model's pace with the GPU shared, as its training
# will have it; or alone before the acoustic model (VOICES_VOCODER_BESIDE=0).
vocoder_pid=
vocoder_run() { # NAME DATASET STEPS args...: a vocoder-small run into $work/NAME, its JSON and log in logs/
  local name=$1 dataset=$2 steps=$3
  shift 3
  $x train --config "$here/../vocoder/heldout.yaml" --dataset "$dataset" --output "$work/$name" \
    --backend "$backend" --json --set dataset.format=ljspeech_multispeaker \
    --set training.max_steps="$steps" --set training.checkpoint_every="$steps" "$@" \
    >"$work/logs/$name-train.json" 2>"$work/logs/$name-train.log"
}
# VOICES_VOCODER_CACHE=DIR: the vocoder's training is the same in every run of one recipe (the corpus, the configs,
# the CLI, its steps and minutes; runs W1-W3 ended at the same validation loss, 1.0323), and it took 168-173 s of
# each: a vocoder kept in DIR (DIR/run, DIR/recipe) with this run's recipe is used instead of training one, and one
# trained here is kept there for the next run (on a GPU host, a git-ignored folder of the checkout survives between
# the calls of one warm machine: bench/voices/.vocoder-cache is ignored). gpu.sh writes only DIR/run, DIR/logs and
# DIR/recipe. The recipe hashes the CLI's file (the bundle); with XTTS_CLI="node src/cli/run.js", that file alone.
vocoder_cache=${VOICES_VOCODER_CACHE:-}
vocoder_recipe() {
  local w
  {
    cat "$data/train.tsv" "$here/voices.tsv" "$here/../vocoder/heldout.yaml" "$here"/../../configs/vocoder-*.yaml
    [[ -n $extra ]] && cat "$extra"
    for w in $x; do [[ -f $w ]] && cat "$w"; done # the CLI's script or bundle
    echo "extra clips $extra_clips; steps $vocoder_steps; minutes $vocoder_minutes; backend $backend"
    echo "beside ${VOICES_VOCODER_BESIDE:-1}"
  } | sha256sum | cut -c1-16
}
train_vocoder() {
  local t=$(date +%s%N) recipe= rc kept=
  [[ -n $vocoder_cache ]] && recipe=$(vocoder_recipe) # hashes the bundle and the corpus: only where it is used
  [[ -n $vocoder_cache && -d $vocoder_cache/run/checkpoints ]] && kept=$(cat "$vocoder_cache/recipe" 2>/dev/null)
  if [[ -n $kept && $kept == "$recipe" ]]; then
    if cp -a "$vocoder_cache/run" "$work/vocoder" && cp "$vocoder_cache"/logs/vocoder-train.* "$work/logs/"; then
      log "vocoder reused from $vocoder_cache (recipe $recipe; its training: $(cat "$vocoder_cache/logs/summary"))," \
        "in $(since "$t") ms"
      return
    fi
    rm -rf "$work/vocoder"
    log "vocoder in $vocoder_cache could not be copied: training one"
  fi
  vocoder_run vocoder "$work/data" "$vocoder_steps" --max-minutes "$vocoder_minutes"
  rc=$?
  log "vocoder train rc=$rc, schedule $vocoder_steps steps, in $(since "$t") ms"
  if [[ -n $vocoder_cache ]] && ((rc == 0)) && [[ -d $work/vocoder/checkpoints ]]; then
    rm -rf "$vocoder_cache/recipe" "$vocoder_cache/run" "$vocoder_cache/logs" # the recipe last, once the rest is whole
    mkdir -p "$vocoder_cache/logs" && cp -a "$work/vocoder" "$vocoder_cache/run" &&
      cp "$work"/logs/vocoder-train.* "$vocoder_cache/logs/" &&
      echo "rc $rc, schedule $vocoder_steps steps, in $(since "$t") ms" >"$vocoder_cache/logs/summary" &&
      echo "$recipe" >"$vocoder_cache/recipe" &&
      log "vocoder kept in $vocoder_cache for the next run (recipe $recipe)" ||
      log "vocoder not kept: $vocoder_cache could not be written"
  fi
}
if ((vocoder_on)); then
  vocoder_steps=${VOICES_VOCODER_STEPS:-$(awk -v m="$vocoder_minutes" 'BEGIN { printf "%d", m * 2400 }')}
  if [[ ${VOICES_VOCODER_BESIDE:-1} == 1 ]]; then
    train_vocoder &
    vocoder_pid=$!
  else
    train_vocoder
    pack
  fi
fi
# VOICES_VOCODER_ONLY=1: the vocoder alone (with VOICES_VOCODER_CACHE, for the calls after it on one warm machine: a
# recipe whose acoustic model, vocoder, fine-tuning and synthesis exceed one command trains its vocoder in a call of
# its own).
if [[ $vocoder_only == 1 ]]; then
  smi_stop
  kept=0 # the cache holds this recipe's vocoder (one of another recipe's stays where this one's training failed)
  [[ $(cat "$vocoder_cache/recipe" 2>/dev/null) == "$(vocoder_recipe)" ]] && kept=1
  ((kept)) || log "no vocoder kept in $vocoder_cache: its training failed (logs/vocoder-train.log)"
  log "total $(since "$start") ms"
  pack
  cat "$work/host.txt" "$work/summary.txt"
  exit $((1 - kept))
fi
# fit_steps: the steps that fit MINUTES, from an 80-step calibration run's mean step from the 31st (92% of
# the minutes at that pace: the rest is start-up and the eager steps that record the replays).
fit_steps() { # minutes args...
  local minutes=$1 t=$(date +%s%N) ms
  shift
  $x train --output "$work/calibration" --max-steps 80 --backend "$backend" --json "$@" \
    --set training.eval_every=1000000 --set training.validate_every=1000000 --set training.checkpoint_every=1000000 \
    >"$work/logs/calibration.json" 2>"$work/logs/calibration.log"
  # The mean step from the 31st, readbacks included: with step capture the median is only the host's issuing
  # time, and the GPU's part is paid at the readbacks. Steps 21-30 still record replays (a bucket's first replayed
  # step, 170-230 ms): from the 21st, run W's calibration read 18.2 ms a step where its run took 12.0, and its
  # schedule ended at 64% of the minutes (bench/voices/README.md).
  ms=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(
    "SELECT AVG(wall_ms) FROM steps WHERE step > 30").fetchone()[0])' "$work/calibration/run.sqlite" 2>/dev/null)
  log "calibration: mean step ${ms:-unknown} ms in $(since "$t") ms"
  rm -rf "$work/calibration"
  [[ -n $ms ]] && awk -v m="$minutes" -v ms="$ms" 'BEGIN { printf "%d", 0.92 * m * 60000 / ms }'
}
# shellcheck disable=SC2206
train_args=(--config "$here/voices.yaml" --dataset "$work/data" ${VOICES_ARGS:-})
steps=${VOICES_STEPS:-$(fit_steps "$minutes" "${train_args[@]}")}
steps=${steps:-$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 380 }')}
train_minutes=$(within "$minutes" $((synth_reserve_s + finetune_reserve_s)))
[[ $train_minutes != "$(awk -v m="$minutes" 'BEGIN { printf "%.2f", m }')" ]] &&
  log "training cut to $train_minutes minutes (of $minutes) to leave the fine-tuning and synthesis their time"
t=$(date +%s%N)
$x train --output "$work/voices" --max-minutes "$train_minutes" --backend "$backend" --json "${train_args[@]}" \
  --set training.max_steps="$steps" --set training.eval_every="$steps" --set training.checkpoint_every="$steps" \
  >"$work/logs/train.json" 2>"$work/logs/train.log"
rc=$?
log "train rc=$rc, schedule $steps steps, in $(since "$t") ms"
$x voices --checkpoint "$work/voices" --json >"$work/voices-list.json" 2>"$work/logs/voices.log"
log "checkpoint voices: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["result"]
print("step", r["step"], "with", " ".join(s["name"] for s in r["speakers"] if s["voice"]))' \
  "$work/voices-list.json" 2>/dev/null)"
pack

if [[ -n $vocoder_pid ]]; then
  wait "$vocoder_pid"
  vocoder_pid=
  pack
fi
# The fine-tuning: on the seen voices' clips alone (the training-only voices' would triple the mels to predict), the
# first VOICES_FINETUNE_CLIPS of each: its teacher-forced mels are predicted before its first step, outside its time
# cap (run G1: 3,600 clips, 146 s against 51 s for 1,200, which left 16 of 45 synthesis calls before the deadline).
finetune_minutes=$(within 1000 "$synth_reserve_s")
if ((finetune_steps > 0)) && awk -v m="$finetune_minutes" 'BEGIN { exit !(m < 0.3) }'; then
  log "vocoder fine-tuning skipped: $finetune_minutes minutes are left before synthesis's time"
elif ((finetune_steps > 0)) && [[ -d $work/vocoder/checkpoints && -d $work/voices/checkpoints ]]; then
  t=$(date +%s%N)
  mkdir -p "$work/seen-data"
  cp -al "$work/data/wavs" "$work/seen-data/wavs" # hard links: the same clips, no copy
  awk -F'|' -v seen="$(awk -F'\t' '$5 == "seen" { printf "%s ", $1 }' "$here/voices.tsv")" -v most="$finetune_clips" \
    'BEGIN { n = split(seen, s, " "); for (i = 1; i <= n; i++) keep[s[i]] = 1 } keep[$4] && taken[$4]++ < most' \
    "$work/data/metadata.csv" >"$work/seen-data/metadata.csv"
  vocoder_run finetuned "$work/seen-data" "$finetune_steps" --set vocoder.init_from="$work/vocoder" \
    --set vocoder.finetune_acoustic="$work/voices" --set training.learning_rate=3e-4 \
    --set training.schedule.warmup_steps=50 --max-minutes "$finetune_minutes"
  log "vocoder fine-tuning rc=$?, $finetune_steps steps (at most $finetune_minutes minutes) on" \
    "$(wc -l <"$work/seen-data/metadata.csv") clips, in $(since "$t") ms"
  pack
fi

# 4. Synthesis: every voice from its clip (through the fine-tuned vocoder, the plain one, then Griffin-Lim), then
# every seen voice by name; VOICES_JOBS calls at a time.
synth() { # mode voice args...
  local mode=$1 name=$2 t=$(date +%s%N) rc dir="$work/spoken/$1/$2"
  shift 2
  mkdir -p "$dir"
  $x synthesize --checkpoint "$work/voices" --texts "$work/eval.txt" --out-dir "$dir" --backend "$backend" \
    --batch-size 32 --max-seconds "$max_seconds" --json "$@" \
    >"$work/logs/synthesize-$mode-$name.json" 2>"$work/logs/synthesize-$mode-$name.log"
  rc=$?
  local spoke=$(since "$t")
  ls "$dir"/*.wav >/dev/null 2>&1 && python3 "$here/shrink.py" "$dir"/*.wav
  echo "synthesize $mode $name rc=$rc: $(ls "$dir"/*.wav 2>/dev/null | wc -l) WAVs in $spoke ms" \
    "(started at $((($t - start) / 1000000000)) s)" >"$work/logs/time-$mode-$name.txt"
}
jobs_list=()
speakers=()
# The unseen voices first: a run cut short by the deadline still scores them (their match is the hardest target).
while IFS=$'\t' read -r name _ _ _ split; do
  [[ $name == name || $name == \#* || -z $name ]] && continue
  [[ -d $work/finetuned/checkpoints ]] &&
    jobs_list+=("finetuned $name --reference $work/clips/$name.wav --vocoder $work/finetuned")
  [[ -d $work/vocoder/checkpoints && ($plain_vocoder == 1 || ! -d $work/finetuned/checkpoints) ]] &&
    jobs_list+=("neural $name --reference $work/clips/$name.wav --vocoder $work/vocoder")
  [[ $griffin_lim == 1 || ! -d $work/vocoder/checkpoints ]] &&
    jobs_list+=("reference $name --reference $work/clips/$name.wav")
  [[ $split == seen && $by_name == 1 ]] && speakers+=("speaker $name --speaker $name")
done < <(awk -F'\t' '$5 == "unseen"' "$here/voices.tsv"; awk -F'\t' '$5 != "unseen"' "$here/voices.tsv")
jobs_list+=(${speakers[@]+"${speakers[@]}"})
t=$(date +%s%N)
skipped=0
launched=0
for job in "${jobs_list[@]}"; do
  while :; do
    alive=()
    for p in ${running[@]+"${running[@]}"}; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    running=(${alive[@]+"${alive[@]}"})
    ((${#running[@]} < parallel)) && break
    sleep 0.2
  done
  if (($(elapsed_s) >= deadline_s)); then
    log "skipped (past ${deadline_s} s): synthesize ${job%% --*}"
    skipped=$((skipped + 1))
    continue
  fi
  # shellcheck disable=SC2086
  synth $job &
  running+=($!)
  launched=$((launched + 1))
  ((launched % 6 == 0)) && pack # what has finished so far, should the command be cut short
done
for p in ${running[@]+"${running[@]}"}; do wait "$p"; done
running=()
cat "$work"/logs/time-*.txt >>"$work/summary.txt" 2>/dev/null
log "synthesis: ${#jobs_list[@]} calls ($skipped skipped), $parallel at a time, in $(since "$t") ms"

# 5. The vocoders' ceiling (VOICES_COPY): espeak-ng's renderings of the evaluation texts in all 15 voices (the
# ones score.sh makes: the same espeak-ng, voices and texts) through xtts's log-mel and the neural vocoders it
# names that were made here (copy synthesis, xtts vocode), into spoken/copy-neural and spoken/copy-finetuned: what
# the vocoder alone costs a voice's WER, beside what the clones lose (each adds as many WAVs as a clone system, 38
# MiB with 36 texts: with the clones, more than the 64 MiB a GPU host returns a call; the README says how the rest
# comes back). One vocode call a vocoder (its WAVs named voice--id, then moved into a folder a voice); skipped
# when it would start less than 10 s before the deadline.
if [[ -n $copy ]] && (($(elapsed_s) > deadline_s - 10)); then
  log "copy synthesis skipped: $(elapsed_s) s have gone (deadline $deadline_s s)"
elif [[ -n $copy ]]; then
  t=$(date +%s%N)
  mkdir -p "$work/copy/espeak"
  awk -F'\t' -v OFS='\t' -v dir="$work/copy/espeak" '
    NR == FNR && $1 != "name" && $1 !~ /^#/ && NF >= 5 { n++; name[n] = $1; v[n] = $2; p[n] = $3; r[n] = $4 }
    NR == FNR { next }
    { for (k = 1; k <= n; k++) print dir, name[k] "--" $1, v[k], p[k], r[k], $2 }' \
    "$here/voices.tsv" "$work/eval.tsv" >"$work/copy-tasks.tsv"
  speak_tasks "$work/copy-tasks.tsv"
  for mode in $copy; do
    dir=$work/vocoder
    [[ $mode == finetuned ]] && dir=$work/finetuned
    [[ -d $dir/checkpoints ]] || continue
    $x vocode --vocoder "$dir" --in "$work/copy/espeak" --out-dir "$work/copy/$mode" --backend "$backend" --json \
      >"$work/logs/copy-$mode.json" 2>"$work/logs/copy-$mode.log"
    log "copy synthesis through the $mode vocoder rc=$?:" \
      "$(ls "$work/copy/$mode"/*.wav 2>/dev/null | wc -l) WAVs of $(wc -l <"$work/copy-tasks.tsv")"
    for w in "$work/copy/$mode"/*--*.wav; do
      [[ -f $w ]] || continue
      b=${w##*/}
      mkdir -p "$work/spoken/copy-$mode/${b%%--*}" && mv "$w" "$work/spoken/copy-$mode/${b%%--*}/${b#*--}"
    done
    ls "$work/spoken/copy-$mode"/*/*.wav >/dev/null 2>&1 && python3 "$here/shrink.py" "$work/spoken/copy-$mode"/*/*.wav
  done
  rm -rf "$work/copy"
  log "copy synthesis in $(since "$t") ms"
fi
smi_stop
log "total $(since "$start") ms"
pack
cat "$work/host.txt" "$work/summary.txt"
ls -la "$out"
