#!/usr/bin/env python3
"""Speaker identification and median F0 for the voices benchmark (bench/voices/README.md), numpy only and
independent of xtts: nothing here comes from xtts's model, features or code.

Speaker model: per utterance, 20 MFCCs (16 kHz, 25 ms Hann frames, 10 ms hop, 40 mel bands to 7.6 kHz) of
the frames within 40 dB of the utterance's loudest; the utterance's vector is their means and standard
deviations, the standard deviations of their deltas, and its voiced frames' log-F0 median and spread
(pitch is part of a voice, as a listener hears it). Enrolled on espeak-ng renderings of sentences in every
voice (none of them evaluation texts), the vectors are standardised and projected by linear discriminant
analysis (numpy: within-class scatter whitened with shrinkage, then the between-class scatter's leading
eigenvectors); an utterance is given the voice whose class mean lies nearest by cosine in that space.

Median F0: per 40 ms frame (10 ms hop) the autocorrelation from the power spectrum, normalised by the
window's (Boersma 1993), its shortest-lag strong peak over 50-400 Hz; a frame is voiced when that peak reaches
0.45 and it lies within 30 dB of the loudest. Being computed from magnitudes alone it reads Griffin-Lim's audio
(xtts's vocoder) as it reads espeak-ng's (YIN, a time-domain difference, lost most low voices' frames to
Griffin-Lim's phases). A voice's F0 is the median over the voiced frames of all its utterances pooled.

Speaking time: per utterance, from the first to the last 10 ms frame within 40 dB of its loudest; a voice's is
the sum over its utterances (its pace, against espeak-ng's speaking time for the same texts).

usage:
  speaker.py f0 WAV...                        median F0 of each WAV and of all pooled
  speaker.py score --voices voices.tsv --enrol DIR --espeak DIR [--system NAME=DIR ...] [--json OUT]
DIR holds one folder per voice (by name) of WAVs; --espeak: espeak-ng's renderings of the evaluation texts
(the speaker model's own accuracy and the F0 targets); each --system: xtts's renderings of them."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RATE = 16000


def read_16k(path):
    """Mono float samples at 16 kHz (sox resamples, as bench/intelligibility/asr.py reads; -R: the dither sox adds
    to a resampled 16-bit output from a fixed seed, so that every score of a WAV is the same)."""
    with tempfile.NamedTemporaryFile(suffix='.raw') as tmp:
        subprocess.run(['sox', '-R', path, '-t', 'raw', '-r', str(RATE), '-e', 'signed', '-b', '16', '-c', '1',
                        tmp.name], check=True, stderr=subprocess.DEVNULL)
        return np.frombuffer(open(tmp.name, 'rb').read(), dtype=np.int16).astype(np.float64) / 32768.0


def frames(x, length, hop):
    if len(x) < length:
        x = np.pad(x, (0, length - len(x)))
    return np.lib.stride_tricks.sliding_window_view(x, length)[::hop]


def pitch(x, fmin=50.0, fmax=400.0, window=640, hop=160, voicing=0.45, top_db=30.0, near=0.9):
    """F0 in Hz of each voiced frame; unvoiced frames are left out. Each 40 ms Hann-windowed frame's
    autocorrelation comes from its power spectrum (so it does not depend on the phases, which Griffin-Lim
    only estimates) and is divided by the window's own (Boersma 1993); the frame is voiced when its highest
    peak over fmin..fmax reaches `voicing` and it lies within top_db of the loudest frame; its period is the
    shortest-lag peak within `near` of the highest (against octave-down errors), parabolically interpolated."""
    tmin, tmax = int(RATE / fmax), int(np.ceil(RATE / fmin))
    w = np.hanning(window)
    f = frames(x, window, hop)
    power = (f ** 2).mean(axis=1)
    loud = 10 * np.log10(np.maximum(power, 1e-20)) > 10 * np.log10(max(power.max(), 1e-20)) - top_db
    size = 2048
    spectrum = np.abs(np.fft.rfft((f - f.mean(axis=1, keepdims=True)) * w, size)) ** 2
    r = np.fft.irfft(spectrum, size)[:, :tmax + 2]
    rw = np.fft.irfft(np.abs(np.fft.rfft(w, size)) ** 2, size)[:tmax + 2]
    r = r / np.maximum(r[:, :1], 1e-20) / (rw / rw[0])
    band = r[:, tmin - 1:tmax + 2]  # one lag either side, for the peaks at the ends and the interpolation
    out = []
    for i in np.nonzero(loud)[0]:
        b = band[i]
        peaks = np.nonzero((b[1:-1] > b[:-2]) & (b[1:-1] >= b[2:]))[0] + 1
        if len(peaks) == 0 or b[peaks].max() < voicing:
            continue
        k = peaks[np.nonzero(b[peaks] >= near * b[peaks].max())[0][0]]
        den = b[k - 1] - 2 * b[k] + b[k + 1]
        shift = 0.5 * (b[k - 1] - b[k + 1]) / den if abs(den) > 1e-12 else 0.0
        out.append(RATE / (k + tmin - 1 + float(np.clip(shift, -1, 1))))
    return np.array(out)


def mel_filters(n_fft=512, bands=40, fmin=20.0, fmax=7600.0):
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    hz = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    edges = hz(np.linspace(mel(fmin), mel(fmax), bands + 2))
    bins = np.fft.rfftfreq(n_fft, 1 / RATE)
    fb = np.zeros((bands, len(bins)))
    for m in range(bands):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        fb[m] = np.clip(np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid)), 0, None)
    return fb


FILTERS = mel_filters()
CEPS = 20
DCT = np.cos(np.pi / FILTERS.shape[0] * (np.arange(FILTERS.shape[0]) + 0.5)[None, :] * np.arange(CEPS)[:, None])


def features(x):
    """The utterance's vector: MFCC means and standard deviations, delta standard deviations, log-F0 median
    and spread."""
    x = np.append(x[0], x[1:] - 0.97 * x[:-1])
    f = frames(x, 400, 160) * np.hanning(400)
    power = np.abs(np.fft.rfft(f, 512)) ** 2
    energy = power.sum(axis=1)
    keep = 10 * np.log10(np.maximum(energy, 1e-20)) > 10 * np.log10(max(energy.max(), 1e-20)) - 40
    mfcc = np.log(np.maximum(power @ FILTERS.T, 1e-10)) @ DCT.T
    padded = np.pad(mfcc, ((2, 2), (0, 0)), mode='edge')
    delta = (2 * (padded[4:] - padded[:-4]) + (padded[3:-1] - padded[1:-3])) / 10
    m, dl = mfcc[keep], delta[keep]
    f0 = pitch(x)
    logf0 = np.log(f0) if len(f0) else np.array([np.log(100.0)])
    spread = np.percentile(logf0, 90) - np.percentile(logf0, 10)
    return np.concatenate([m.mean(axis=0)[1:], m.std(axis=0), dl.std(axis=0), [np.median(logf0), spread]])


class LDA:
    """Standardise, whiten the within-class scatter (shrunk towards its diagonal), keep the between-class
    scatter's leading directions; classify by cosine to the class means."""

    def fit(self, X, y, shrink=0.1):
        self.classes = sorted(set(y))
        y = np.array(y)
        self.mu, self.sd = X.mean(axis=0), X.std(axis=0) + 1e-9
        Z = (X - self.mu) / self.sd
        means = np.array([Z[y == c].mean(axis=0) for c in self.classes])
        within = sum(np.cov((Z[y == c] - means[i]).T, bias=True) * (y == c).sum() for i, c in enumerate(self.classes))
        within = within / len(Z)
        within = (1 - shrink) * within + shrink * np.diag(np.diag(within))
        vals, vecs = np.linalg.eigh(within)
        white = vecs / np.sqrt(np.maximum(vals, 1e-9))
        between = (means - Z.mean(axis=0)) @ white
        _, s, vt = np.linalg.svd(between, full_matrices=False)
        k = min(len(self.classes) - 1, int((s > 1e-9 * s.max()).sum()))
        self.proj = white @ vt[:k].T
        self.centre = Z.mean(axis=0) @ self.proj
        self.means = self._unit(means @ self.proj - self.centre)
        return self

    @staticmethod
    def _unit(a):
        return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)

    def predict(self, X):
        z = self._unit(((X - self.mu) / self.sd) @ self.proj - self.centre)
        return [self.classes[i] for i in (z @ self.means.T).argmax(axis=1)]


def speech_seconds(x, hop=160, top_db=40.0):
    """Seconds from the first to the last 10 ms frame within top_db of the utterance's loudest: its speaking
    time without the silence at either end (what a voice's pace is measured on)."""
    f = frames(x, hop, hop)
    level = 10 * np.log10(np.maximum((f ** 2).mean(axis=1), 1e-12))
    on = np.nonzero(level > level.max() - top_db)[0]
    return float((on[-1] - on[0] + 1) * hop / RATE) if len(on) else 0.0


def wavs(folder):
    return sorted(glob.glob(os.path.join(folder, '*.wav')))


def read_voices(path):
    voices = []
    for line in open(path, encoding='utf-8'):
        cells = line.rstrip('\n').split('\t')
        if line.strip() and not line.startswith('#') and cells[0] != 'name':
            voices.append({'name': cells[0], 'espeak': cells[1], 'pitch': int(cells[2]), 'rate': int(cells[3]),
                           'split': cells[4]})
    return voices


def system_report(model, voices, root):
    """Per voice: the share of its WAVs the model gives to that voice, what it gave them to, their F0s."""
    out = {}
    for v in voices:
        files = wavs(os.path.join(root, v['name']))
        if not files:
            continue
        signals = [read_16k(p) for p in files]
        guesses = model.predict(np.array([features(x) for x in signals]))
        f0 = np.concatenate([pitch(x) for x in signals] + [np.array([])])
        out[v['name']] = {
            'utterances': len(files), 'match': sum(g == v['name'] for g in guesses) / len(files),
            'guesses': {g: guesses.count(g) for g in sorted(set(guesses))},
            'f0_median': float(np.median(f0)) if len(f0) else None, 'voiced_frames': int(len(f0)),
            'speech_s': sum(speech_seconds(x) for x in signals)}
    return out


def score(a):
    voices = read_voices(a.voices)
    X, y = [], []
    for v in voices:
        files = wavs(os.path.join(a.enrol, v['name']))
        if not files:
            sys.exit(f"speaker.py: no enrolment WAVs for {v['name']} in {a.enrol}")
        X += [features(read_16k(p)) for p in files]
        y += [v['name']] * len(files)
    model = LDA().fit(np.array(X), y)
    train_acc = float(np.mean(np.array(model.predict(np.array(X))) == np.array(y)))
    report = {'voices': voices, 'enrolment': {'utterances': len(y), 'accuracy': train_acc}, 'systems': {}}
    print(f'speaker model: {len(y)} enrolment utterances, {len(voices)} voices, LDA {model.proj.shape[1]} dims; '
          f'accuracy on its enrolment set {train_acc * 100:.1f}%', file=sys.stderr)
    espeak = system_report(model, voices, a.espeak)
    report['espeak'] = espeak
    n = sum(r['utterances'] for r in espeak.values())
    acc = sum(r['match'] * r['utterances'] for r in espeak.values()) / max(n, 1)
    report['sanity_accuracy'] = acc
    print(f'speaker model on espeak-ng renderings of the evaluation texts: {acc * 100:.1f}% of {n}', file=sys.stderr)
    for spec in a.system:
        name, folder = spec.split('=', 1)
        report['systems'][name] = system_report(model, voices, folder)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(report, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='command', required=True)
    p = sub.add_parser('f0')
    p.add_argument('wavs', nargs='+')
    p = sub.add_parser('score')
    p.add_argument('--voices', required=True)
    p.add_argument('--enrol', required=True)
    p.add_argument('--espeak', required=True)
    p.add_argument('--system', action='append', default=[])
    p.add_argument('--json')
    a = ap.parse_args()
    if a.command == 'f0':
        pooled = []
        for path in a.wavs:
            f0 = pitch(read_16k(path))
            pooled.append(f0)
            print(f'{path}\t{np.median(f0) if len(f0) else float("nan"):.1f}\t{len(f0)}')
        allf0 = np.concatenate(pooled)
        print(f'all\t{np.median(allf0) if len(allf0) else float("nan"):.1f}\t{len(allf0)}')
    else:
        score(a)


if __name__ == '__main__':
    main()
