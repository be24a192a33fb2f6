// A preprocessing worker's task: read one audio file (WAV, FLAC, MP3, Ogg) and compute its log-mel. Failures come back
// as
// reason codes (they become dataset skips), never as thrown errors that would stop the pool.
import { parentPort, workerData } from 'node:worker_threads';
import type { AudioConfig } from '../config/index.js';
import { isXttsError } from '../errors.js';
import { unreadableWhy } from '../util/index.js';
import { processAudioFile, readAudioFile } from './audio/index.js';

export interface FeatureTask {
  audioPath: string;
  audio: AudioConfig;
}

export type FeatureTaskResult =
  | {
      ok: true;
      frames: number;
      nMels: number;
      durationS: number;
      mel: Float32Array;
      /** The file's own sample rate, its bits per sample where it is PCM, and its loudest sample (full scale 1). */
      source: { hz: number; pcmBits?: number; peak: number };
      ms: { read: number; process: number };
    }
  | { ok: false; reason: 'unreadable_audio' | 'unsupported_format' | 'audio_too_long'; message: string };

export async function featureTask(task: FeatureTask): Promise<FeatureTaskResult> {
  const t0 = performance.now();
  let bytes: Buffer;
  try {
    bytes = readAudioFile(task.audioPath);
  } catch (e) {
    if (isXttsError(e) && e.code === 'AUDIO_TOO_LONG')
      return { ok: false, reason: 'audio_too_long', message: e.message };
    return {
      ok: false,
      reason: 'unreadable_audio',
      message: isXttsError(e) ? e.message : `cannot read ${task.audioPath}: ${unreadableWhy(e)}`,
    };
  }
  const t1 = performance.now();
  try {
    const clip = await processAudioFile(bytes, task.audio, task.audioPath);
    return {
      ok: true,
      frames: clip.frames,
      nMels: clip.nMels,
      durationS: clip.durationS,
      mel: clip.mel,
      source: {
        hz: clip.originalSampleRateHz,
        ...(clip.pcmBits !== undefined ? { pcmBits: clip.pcmBits } : {}),
        peak: clip.sourcePeak,
      },
      ms: { read: t1 - t0, process: performance.now() - t1 },
    };
  } catch (e) {
    if (isXttsError(e))
      return {
        ok: false,
        reason:
          e.code === 'AUDIO_UNSUPPORTED_FORMAT'
            ? 'unsupported_format'
            : e.code === 'AUDIO_TOO_LONG'
              ? 'audio_too_long'
              : 'unreadable_audio',
        message: e.message,
      };
    return { ok: false, reason: 'unreadable_audio', message: `${task.audioPath}: ${(e as Error).message}` };
  }
}

/** A feature worker thread: answers {id, task} messages with {id, result}; the mel's buffer is moved, not copied. */
export function featureWorkerMain(): void {
  parentPort?.on('message', async (m: { id: number; task: FeatureTask }) => {
    const result = await featureTask(m.task);
    parentPort!.postMessage({ id: m.id, result }, result.ok ? [result.mel.buffer as ArrayBuffer] : []);
  });
}

if (parentPort && (workerData as { xttsRole?: string } | undefined)?.xttsRole === 'feature') featureWorkerMain();
