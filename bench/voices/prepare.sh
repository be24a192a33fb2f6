#!/usr/bin/env bash
# The voices benchmark's sentences (bench/voices/data): the intelligibility benchmark's ASR environment and
# sentences first (bench/intelligibility/prepare.sh), then VOICES_SENTENCES (default 3,600) training sentences from
# the same WordNet pool and seed, so that the held-out sentences (the evaluation texts and the reference clips'
# sentences) and the first 1,200 training sentences are the intelligibility benchmark's own; the rest are new.
#   bash bench/voices/prepare.sh          (needs: apt-get install wordnet-base espeak-ng sox python3-venv)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sentences=${VOICES_SENTENCES:-3600}
if ! [[ $sentences =~ ^[0-9]+$ ]] || ((sentences < 100)); then
  echo "prepare.sh: VOICES_SENTENCES must be a whole number of at least 100, not '$sentences'" >&2
  exit 2
fi
bash "$here/../intelligibility/prepare.sh"
"$here/../intelligibility/.venv/bin/python" "$here/../intelligibility/corpus.py" "$here/data" --train "$sentences"
# The held-out sentences must be the intelligibility benchmark's (the same pool and seed): else the evaluation texts
# of earlier runs and of this one differ.
cmp -s "$here/data/heldout.tsv" "$here/../intelligibility/data/heldout.tsv" || {
  echo "prepare.sh: bench/voices/data/heldout.tsv differs from bench/intelligibility/data's" >&2
  exit 1
}
