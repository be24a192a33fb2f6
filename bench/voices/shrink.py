#!/usr/bin/env python3
"""Rewrite WAVs in place as 16 kHz mono 16-bit (numpy only: an FFT resampling of the whole clip), so that
what gpu.sh brings back fits under the GPU host's 16 MiB a file. The scorers read 16 kHz anyway (asr.py and
speaker.py resample with sox), and xtts's mels stop at 8 kHz, so nothing they measure is lost.

usage: shrink.py WAV..."""
import sys
import wave

import numpy as np

RATE = 16000


def shrink(path):
    with wave.open(path) as w:
        rate, width, channels, n = w.getframerate(), w.getsampwidth(), w.getnchannels(), w.getnframes()
        raw = w.readframes(n)
    if rate == RATE and width == 2 and channels == 1:
        return
    x = np.frombuffer(raw, dtype={1: np.uint8, 2: np.int16, 4: np.int32}[width]).astype(np.float64)
    if width == 1:
        x = (x - 128) * 256
    elif width == 4:
        x = x / 65536
    x = x.reshape(-1, channels).mean(axis=1)
    m = int(round(len(x) * RATE / rate))
    if m > 0 and len(x) > 1:
        spectrum = np.fft.rfft(x)
        keep = m // 2 + 1
        spectrum = spectrum[:keep] if keep <= len(spectrum) else np.pad(spectrum, (0, keep - len(spectrum)))
        x = np.fft.irfft(spectrum, m) * (m / len(x))
    y = np.clip(np.round(x), -32768, 32767).astype('<i2')
    with wave.open(path, 'wb') as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(y.tobytes())


if __name__ == '__main__':
    for p in sys.argv[1:]:
        shrink(p)
