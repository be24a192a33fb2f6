import type { MelSettings } from '../../src/core/data/audio/index.js';

/** The configs' log-mel (22.05 kHz, n_fft 1024, hop 256, 80 Slaney bands to 8 kHz): the audio tests' and benches'. */
export const MEL_SETTINGS: Readonly<MelSettings> = {
  sample_rate_hz: 22050,
  n_fft: 1024,
  hop_length: 256,
  win_length: 1024,
  window: 'hann',
  n_mels: 80,
  fmin_hz: 0,
  fmax_hz: 8000,
  mel_scale: 'slaney',
  mel_norm: 'slaney',
  log_base: 'e',
  log_floor: 1e-5,
};
