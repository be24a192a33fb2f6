#!/usr/bin/env bash
# The connected machine's half before the GPU run (bench/languages/README.md): the sentences and what
# espeak-ng is to speak for them, in bench/languages/data:
#   {en,de,es}-{train,heldout}.tsv          id<TAB>sentence, as written (digits and all: what the model reads)
#   {en,de,es}-{train,heldout}.spoken.tsv   id<TAB>the sentence as xtts's multilingual cleaner reads it
#                                           (numbers, dates, times and prices spelled out: what espeak-ng says)
#   bash bench/languages/prepare.sh [SENTENCES_ARGS...]   (e.g. --train 700 --heldout 40 --seed 1)
# Needs python3 and the checkout's node_modules (npm ci): spoken.ts runs the repository's cleaner.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python3 "$here/sentences.py" "$here/data" "$@"
for lang in en de es; do
  for set in train heldout; do
    (cd "$repo" && node --import tsx bench/languages/spoken.ts "$lang" "$here/data/$lang-$set.tsv" \
      "$here/data/$lang-$set.spoken.tsv")
  done
done
wc -l "$here"/data/*.tsv | sed 's|'"$here"'/||'
