// readAudioFile (data/audio/index.ts): a large WAV whose header says it is longer than a clip may be is refused
// from its first MiB, never read whole (an hour-long recording in a dataset would be read by every worker that meets
// it); a large WAV within the limit, a small one and other formats are read as they are.
import assert from 'node:assert/strict';
import { closeSync, openSync, statSync, ftruncateSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { readAudioFile } from '../../src/core/data/audio/index.js';
import { pcm16Wav, tone } from '../helpers/wav.js';
import { TempDir } from '../helpers/tmp.js';

test('a WAV over 16 MiB that holds more than 600 s is refused from its header; one within is read', () => {
  const tmp = new TempDir('xtts-audio-read-');
  try {
    // An hour of 16-bit mono at 22,050 Hz (159 MB), as a sparse file: the header and one second of samples, then
    // the rest of the declared data as a hole. Reading it whole would take 159 MB.
    const hour = tmp.at('hour.wav');
    const second = pcm16Wav(tone(1, 22050), 22050);
    const dataBytes = 3600 * 22050 * 2;
    second.writeUInt32LE(36 + dataBytes, 4);
    second.writeUInt32LE(dataBytes, 40);
    writeFileSync(hour, second);
    const fd = openSync(hour, 'r+');
    ftruncateSync(fd, 44 + dataBytes);
    closeSync(fd);
    assert.equal(statSync(hour).size, 44 + dataBytes);
    assert.throws(() => readAudioFile(hour), {
      code: 'AUDIO_TOO_LONG',
      message: `${hour}: 3600.0 s of audio; a clip may be at most 600 s (it was not read): cut it into sentences`,
    });
    // 400 s (17.6 MB) is within the limit: read whole, byte for byte.
    const long = tmp.write('long.wav', pcm16Wav(tone(400, 22050), 22050));
    assert.ok(statSync(long).size > 16 << 20);
    assert.equal(readAudioFile(long).length, statSync(long).size);
    // Small files and files that are not WAV are read as they are (their decoders judge them).
    const small = tmp.write('small.wav', pcm16Wav(tone(1, 22050), 22050));
    assert.equal(readAudioFile(small).length, statSync(small).size);
    const notWav = tmp.write('big.bin', Buffer.alloc(17 << 20, 1));
    assert.equal(readAudioFile(notWav).length, 17 << 20);
  } finally {
    tmp.remove();
  }
});
