#!/usr/bin/env bash
# The connected machine's half before the GPU run: the ASR (a Python virtual environment with
# pocketsphinx, in bench/intelligibility/.venv) and the sentences (bench/intelligibility/data).
#   bash bench/intelligibility/prepare.sh        (needs: apt-get install wordnet-base espeak-ng sox)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for tool in espeak-ng sox python3; do command -v $tool >/dev/null || { echo "prepare.sh: $tool is missing: apt-get install espeak-ng sox python3-venv wordnet-base" >&2; exit 3; }; done
[[ -d /usr/share/wordnet ]] || { echo "prepare.sh: WordNet's data is missing: apt-get install wordnet-base" >&2; exit 3; }
if [[ ! -x $here/.venv/bin/python ]]; then
  # The system's numpy is seen (python3-numpy); only pocketsphinx is installed.
  python3 -m venv --system-site-packages "$here/.venv"
  "$here/.venv/bin/python" -c 'import numpy' 2>/dev/null || "$here/.venv/bin/pip" install -q numpy
  "$here/.venv/bin/pip" install -q pocketsphinx==5.1.1
fi
"$here/.venv/bin/python" "$here/corpus.py" "$here/data"
