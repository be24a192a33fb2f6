#!/usr/bin/env python3
"""The voices benchmark's reference clips: for each voice of voices.tsv one clip of about 6 s, espeak-ng
speaking held-out sentences in that voice (joined with a full stop until the clip lasts at least MIN_S
seconds, at most 4 sentences). The sentences come from the held-out rows after the first TEXTS (those are
the evaluation texts), a different stretch of them for each voice; none is a training sentence.

usage: clips.py VOICES.tsv HELDOUT.tsv TEXTS OUT_DIR [MIN_S]
Writes OUT_DIR/<voice>.wav and OUT_DIR/clips.tsv (voice, seconds, sentence ids, text). Standard library
only (the GPU host's python3 runs it)."""
import os
import subprocess
import sys
import wave


def main():
    voices_tsv, heldout_tsv, texts, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    min_s = float(sys.argv[5]) if len(sys.argv) > 5 else 5.2
    voices = [line.rstrip('\n').split('\t') for line in open(voices_tsv, encoding='utf-8')]
    voices = [v for v in voices if len(v) >= 5 and v[0] != 'name' and not v[0].startswith('#')]
    rows = [line.rstrip('\n').split('\t', 1) for line in open(heldout_tsv, encoding='utf-8') if line.strip()]
    pool = rows[texts:]
    if not pool:
        sys.exit(f'clips.py: {heldout_tsv} has no sentences after the first {texts} (the evaluation texts)')
    os.makedirs(out, exist_ok=True)
    table = []
    for k, (name, voice, pitch, rate, _split) in enumerate(voices):
        start = (3 * k) % len(pool)
        chosen = []
        wav = os.path.join(out, f'{name}.wav')
        seconds = 0.0
        while seconds < min_s and len(chosen) < min(4, len(pool)):
            chosen.append(pool[(start + len(chosen)) % len(pool)])
            text = '. '.join(s for _, s in chosen)
            subprocess.run(['espeak-ng', '-v', voice, '-p', pitch, '-s', rate, '-w', wav, text], check=True)
            with wave.open(wav) as w:
                seconds = w.getnframes() / w.getframerate()
        table.append(f"{name}\t{seconds:.2f}\t{','.join(i for i, _ in chosen)}\t{text}")
    with open(os.path.join(out, 'clips.tsv'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(table) + '\n')


if __name__ == '__main__':
    main()
