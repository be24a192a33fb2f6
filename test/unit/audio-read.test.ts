// readAudioFile (data/audio/index.ts): a large WAV whose header says it is longer than a clip may be is refused
// from its first MiB, never read whole (an hour-long recording in a dataset would be read by every worker that meets
// it); a large WAV within the limit, a small one and other formats are read as they are; a file over 2 GiB is refused.
import assert from 'node:assert/strict';
import { closeSync, openSync, statSync, ftruncateSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { loadConfig, presetPath } from '../../src/core/config/load.js';
import { readAudioFile } from '../../src/core/data/audio/index.js';
import type { XttsError } from '../../src/core/errors.js';
import { pcm16Wav, tone } from '../helpers/wav.js';
import { TempDir } from '../helpers/tmp.js';

/**
 * A WAV whose header (`wav`: a 44-byte header and what samples follow) declares `dataBytes` of samples, written as a
 * sparse file: what `wav` holds, then a hole to the declared end (no disk taken, whatever the size).
 */
function sparseWav(path: string, wav: Buffer, dataBytes: number): void {
  wav.writeUInt32LE(36 + dataBytes, 4);
  wav.writeUInt32LE(dataBytes, 40);
  writeFileSync(path, wav);
  const fd = openSync(path, 'r+');
  ftruncateSync(fd, 44 + dataBytes);
  closeSync(fd);
}

test('a WAV over 16 MiB that holds more than 600 s is refused from its header; one within is read', () => {
  const tmp = new TempDir('xtts-audio-read-');
  try {
    // An hour of 16-bit mono at 22,050 Hz (159 MB), as a sparse file: the header and one second of samples, then
    // the rest of the declared data as a hole. Reading it whole would take 159 MB.
    const hour = tmp.at('hour.wav');
    const dataBytes = 3600 * 22050 * 2;
    sparseWav(hour, pcm16Wav(tone(1, 22050), 22050), dataBytes);
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

test('a file over 256 MiB within 600 s (many channels, a high rate) is refused unread, saying what to do', async () => {
  const tmp = new TempDir('xtts-audio-read-');
  try {
    // 590 s of 16 channels of 16-bit at 192 kHz (3.6 GB) as a sparse file: the header, then a hole.
    const big = tmp.at('many-channels.wav');
    const [channels, rate, seconds] = [16, 192000, 590];
    const header = pcm16Wav(new Float32Array(0), rate);
    header.writeUInt16LE(channels, 22);
    header.writeUInt32LE(rate * channels * 2, 28);
    header.writeUInt16LE(channels * 2, 32);
    sparseWav(big, header, seconds * rate * channels * 2);
    assert.throws(
      () => readAudioFile(big),
      (e: XttsError) => {
        assert.equal(e.code, 'AUDIO_TOO_LARGE');
        assert.match(e.message, /many-channels\.wav: 3\.4 GiB, more than the 256 MiB xtts reads of one clip/);
        assert.match(e.suggestions.join(' '), /sox IN\.wav -c 1 -r 22050 OUT\.wav remix 1/);
        return true;
      },
    );
    // A dataset row naming it is skipped with that message (not Node's ERR_FS_FILE_TOO_LARGE).
    const { featureTask } = await import('../../src/core/data/feature-worker.js');
    const audio = loadConfig(presetPath('quickstart')).loaded!.config.audio;
    const r = await featureTask({ audioPath: big, audio });
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.reason, 'unreadable_audio');
      assert.match(r.message, /3\.4 GiB, more than the 256 MiB/);
    }
    // 590 s of 16 channels at 48 kHz (906 MB): a gigabyte a worker, were it read.
    const mic = tmp.at('mic-array.wav');
    const array = pcm16Wav(new Float32Array(0), 48000);
    array.writeUInt16LE(16, 22);
    array.writeUInt32LE(48000 * 16 * 2, 28);
    array.writeUInt16LE(16 * 2, 32);
    sparseWav(mic, array, 590 * 48000 * 16 * 2);
    assert.throws(() => readAudioFile(mic), /mic-array\.wav: 864 MiB, more than the 256 MiB xtts reads of one clip/);
  } finally {
    tmp.remove();
  }
});
