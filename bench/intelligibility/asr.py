#!/usr/bin/env python3
"""Word error rate and duration of spoken sentences, by an offline ASR (CMU PocketSphinx 5, pip
package `pocketsphinx`, US English acoustic model and CMUdict that ship inside it).

The language model is a unigram over the words of the scored sentences, all equally likely: the
recogniser knows which words may occur, never in which order, so it cannot complete a sentence from
a few words (a sentence grammar would) and a wrong sound still costs a word. The same recogniser and
language model score every system of one comparison, and each WAV's transcript depends on that WAV alone (not
on the systems or sentences read before it).

Durations are measured after trimming leading and trailing silence as xtts does (frames quieter
than the peak by more than 40 dB, 1024-sample frames, 256-sample hop).

usage: asr.py SENTENCES.tsv NAME=DIR [NAME=DIR ...] [--json OUT]
SENTENCES.tsv: id<TAB>sentence; DIR holds <id>.wav (or line-NNNN.wav for the TSV's row NNNN, as
`xtts synthesize --texts` writes them) for some or all ids. Prints WER per system."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np


def words(s):
    return [w for w in ''.join(c if c.isalpha() or c in "' " else ' ' for c in s.lower()).split() if w]


def edit_distance(ref, hyp):
    d = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, d[0] = d[0], i
        for j, h in enumerate(hyp, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r != h))
    return d[len(hyp)]


def unigram_arpa(vocabulary, path):
    logp = math.log10(1.0 / (len(vocabulary) + 1))
    with open(path, 'w', encoding='utf-8') as f:
        f.write(f'\\data\\\nngram 1={len(vocabulary) + 3}\n\n\\1-grams:\n')
        f.write(f'{logp:.4f} </s>\n-99.0000 <s>\n{logp:.4f} <sil>\n')
        for w in sorted(vocabulary):
            f.write(f'{logp:.4f} {w}\n')
        f.write('\n\\end\\\n')


def read_16k(path):
    """Mono 16-bit 16 kHz samples (sox resamples; -R: its dither from a fixed seed, so that every transcript of a
    WAV is the same. Without any dither espeak-ng's digital silence cost pocketsphinx much: its WER on espeak-ng's
    voices rose by up to 0.25)."""
    with tempfile.NamedTemporaryFile(suffix='.raw') as tmp:
        subprocess.run(['sox', '-R', path, '-t', 'raw', '-r', '16000', '-e', 'signed', '-b', '16', '-c', '1', tmp.name],
                       check=True, stderr=subprocess.DEVNULL)
        return open(tmp.name, 'rb').read()


def trimmed_seconds(path, top_db=40.0, frame=1024, hop=256):
    with wave.open(path) as w:
        rate, n, width, channels = w.getframerate(), w.getnframes(), w.getsampwidth(), w.getnchannels()
        raw = w.readframes(n)
    x = np.frombuffer(raw, dtype={2: np.int16, 4: np.int32}[width]).astype(np.float64)
    x = x.reshape(-1, channels).mean(axis=1)
    if len(x) < frame:
        return len(x) / rate
    frames = np.lib.stride_tricks.sliding_window_view(x, frame)[::hop]
    db = 10 * np.log10(np.maximum((frames ** 2).mean(axis=1), 1e-20))
    loud = np.nonzero(db > db.max() - top_db)[0]
    if len(loud) == 0:
        return 0.0
    start, end = loud[0] * hop, min(len(x), loud[-1] * hop + frame)
    return (end - start) / rate


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('sentences')
    ap.add_argument('systems', nargs='+', help='NAME=DIR')
    ap.add_argument('--json')
    a = ap.parse_args()
    from pocketsphinx import Decoder
    sentences = {}
    with open(a.sentences, encoding='utf-8') as f:
        for line in f:
            if line.strip():
                i, s = line.rstrip('\n').split('\t', 1)
                sentences[i] = s
    vocabulary = {w for s in sentences.values() for w in words(s)}
    lm = tempfile.NamedTemporaryFile(suffix='.arpa', delete=False)
    unigram_arpa(vocabulary, lm.name)
    decoder = Decoder(lm=lm.name, samprate=16000, loglevel='FATAL')
    report = {'sentences': len(sentences), 'vocabulary': len(vocabulary), 'systems': {}}
    for spec in a.systems:
        name, folder = spec.split('=', 1)
        errors = ref_words = 0
        per = {}
        for row, (i, s) in enumerate(sentences.items(), 1):
            # <id>.wav, or line-NNNN.wav as `xtts synthesize --texts` names the WAV of the file's line NNNN.
            wav = os.path.join(folder, f'{i}.wav')
            if not os.path.exists(wav):
                wav = os.path.join(folder, f'line-{row:04d}.wav')
            if not os.path.exists(wav):
                continue
            # A fresh front end (its cepstral mean and the like) for every WAV: the decoder otherwise carries the
            # last utterance's into the next, and a WAV's transcript then hung on the WAVs read before it (espeak-ng's
            # cole read 0.331 after one run's bram and 0.335 after another's; bench/voices, 2026-12-06).
            decoder.reinit_feat()
            decoder.start_utt()
            decoder.process_raw(read_16k(wav), full_utt=True)
            decoder.end_utt()
            hyp = decoder.hyp().hypstr if decoder.hyp() else ''
            ref = words(s)
            e = edit_distance(ref, words(hyp))
            errors += e
            ref_words += len(ref)
            per[i] = {'hyp': hyp, 'errors': e, 'words': len(ref), 'seconds': trimmed_seconds(wav)}
        report['systems'][name] = {'wer': errors / ref_words if ref_words else None, 'utterances': len(per), 'per': per}
        print(f'{name}: WER {errors / max(ref_words, 1):.3f} over {len(per)} utterances ({ref_words} words)',
              file=sys.stderr)
    os.unlink(lm.name)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(report, f, indent=1)


if __name__ == '__main__':
    main()
