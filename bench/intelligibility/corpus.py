#!/usr/bin/env python3
"""Sentences for the intelligibility benchmark, from text that ships with Debian: the example
sentences of WordNet 3.0's glosses (package wordnet-base, /usr/share/wordnet/data.*), e.g.
"the oceans are teeming with life". Kept: 5 to 12 words of plain lower-case English (letters,
apostrophes, commas), every word in the ASR's pronouncing dictionary (so that a miss is the voice's
fault, not the dictionary's), no duplicates, none of the evaluation sentences of configs/. A seeded
shuffle splits them into training and held-out sentences.

usage: corpus.py OUT_DIR [--train 1200] [--heldout 100] [--seed 1]
writes OUT_DIR/train.tsv and OUT_DIR/heldout.tsv (id<TAB>sentence)."""
import argparse
import glob
import os
import random
import re
import sys

WORDNET = '/usr/share/wordnet'


def dictionary_words():
    from pocketsphinx import get_model_path
    words = set()
    with open(os.path.join(get_model_path(), 'en-us', 'cmudict-en-us.dict'), encoding='utf-8') as f:
        for line in f:
            w = line.split(' ', 1)[0]
            words.add(re.sub(r'\(\d+\)$', '', w))
    return words


def eval_sentences(repo):
    found = set()
    for path in glob.glob(os.path.join(repo, 'configs', '**', '*.yaml'), recursive=True) + glob.glob(os.path.join(repo, 'configs', '**', 'metadata.csv'), recursive=True):
        with open(path, encoding='utf-8') as f:
            for line in f:
                m = re.search(r'text:\s*(.+)$', line) or (re.match(r'[^|]+\|([^|]+)', line) if path.endswith('.csv') else None)
                if m:
                    found.add(normalise(m.group(1)))
    return found


def normalise(s):
    return re.sub(r'\s+', ' ', s.strip().strip('"').rstrip('.?!').lower()).strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out')
    ap.add_argument('--train', type=int, default=1200)
    ap.add_argument('--heldout', type=int, default=100)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(WORDNET, 'data.*')))
    if not files:
        sys.exit(f'corpus.py: no WordNet data in {WORDNET}: apt-get install wordnet-base')
    known = dictionary_words()
    excluded = eval_sentences(os.path.join(os.path.dirname(__file__), '..', '..'))
    sentences = set()
    for path in files:
        with open(path, encoding='latin-1') as f:
            for line in f:
                for quoted in re.findall(r'"([^"]+)"', line):
                    s = normalise(quoted)
                    if not re.fullmatch(r"[a-z][a-z ',]*[a-z]", s) or "''" in s or ',,' in s:
                        continue
                    words = re.findall(r"[a-z']+", s)
                    if not 5 <= len(words) <= 12 or any(w not in known for w in words) or s in excluded:
                        continue
                    sentences.add(s)
    pool = sorted(sentences)
    random.Random(a.seed).shuffle(pool)
    need = a.train + a.heldout
    if len(pool) < need:
        sys.exit(f'corpus.py: only {len(pool)} usable sentences for {need}')
    os.makedirs(a.out, exist_ok=True)
    for name, part, prefix in (('heldout', pool[:a.heldout], 'H'), ('train', pool[a.heldout:need], 'T')):
        with open(os.path.join(a.out, f'{name}.tsv'), 'w', encoding='utf-8') as f:
            for i, s in enumerate(part):
                f.write(f'{prefix}{i + 1:04d}\t{s}\n')
    print(f'{len(pool)} usable WordNet example sentences; wrote {a.train} training and {a.heldout} held-out to {a.out}')


if __name__ == '__main__':
    main()
