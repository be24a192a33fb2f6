import { Flags } from '@oclif/core';
import { announcePipes, ExitCode, XttsCommand } from '@xtts/core';
import { BACKENDS, loadConfigOrThrow, presetPath } from '@xtts/core/config';
import { paint } from '@xtts/core/render';
import type { VocodeResult } from '@xtts/core/training';

export default class Vocode extends XttsCommand<VocodeResult> {
  static override summary = 'Copy synthesis: recordings through the log-mel and back with a vocoder.';
  static override description =
    'Each audio file (one, or every one of a folder) becomes the log-mel the models train on, then a ' +
    'waveform again: by the neural vocoder of --vocoder, or by Griffin-Lim with the audio settings of ' +
    '--config. What a vocoder alone does to speech; --reference-dir also writes the processed recordings ' +
    '(resampled, trimmed, loudness-normalised), the samples to compare with. Prints the real-time factor.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --vocoder runs/vocoder-tiny --in clips/ --out-dir vocoded/',
    '<%= config.bin %> <%= command.id %> --config configs/quickstart.yaml --in clip.wav --out-dir griffin-lim/',
  ];
  static override flags = {
    in: Flags.string({ summary: 'An audio file or a folder of them.', required: true, helpValue: 'PATH' }),
    'out-dir': Flags.string({ summary: 'Folder for the WAVs (same names).', required: true, helpValue: 'DIR' }),
    vocoder: Flags.string({
      summary: 'A vocoder run folder or checkpoint; without it, Griffin-Lim.',
      helpValue: 'DIR',
    }),
    config: Flags.string({
      char: 'c',
      summary: "Config whose audio settings Griffin-Lim uses (default: quickstart's); a vocoder has its own.",
      helpValue: 'FILE',
    }),
    'reference-dir': Flags.string({ summary: 'Also write the processed recordings here.', helpValue: 'DIR' }),
    backend: Flags.string({ summary: 'TensorFlow.js backend for the neural vocoder.', options: [...BACKENDS] }),
    'batch-size': Flags.integer({ summary: 'Clips vocoded together.', min: 1, max: 512, default: 32 }),
    overwrite: Flags.boolean({ summary: 'Replace WAVs that exist.', default: false }),
  };

  protected async execute(): Promise<VocodeResult> {
    const { flags } = await this.parse(Vocode);
    const audio = loadConfigOrThrow(flags.config ?? presetPath('quickstart')).config.audio;
    const { vocodeFiles } = await import('@xtts/core/training');
    announcePipes('--in', [flags.in]);
    const result = await vocodeFiles({
      input: flags.in,
      outDir: flags['out-dir'],
      vocoder: flags.vocoder,
      audio,
      backend: flags.backend as never,
      batchSize: flags['batch-size'],
      referenceDir: flags['reference-dir'],
      overwrite: flags.overwrite,
    });
    for (const s of result.skipped) this.addWarning(`${s.input}: not vocoded: ${s.reason}`);
    if (result.foldersNotRead.length)
      this.addWarning(
        `${result.foldersNotRead.join(', ')}: not read (vocode reads the files directly in --in; ` +
          'run it once per folder)',
      );
    return result;
  }

  /** 1 when an input was skipped (work done in part, as synthesize --texts), else 0. */
  protected override exitCodeFor(r: VocodeResult): number {
    return r.skipped.length > 0 ? ExitCode.findings : ExitCode.ok;
  }

  protected render(r: VocodeResult): void {
    const by =
      r.vocoder.kind === 'neural'
        ? `the neural vocoder ${r.vocoder.checkpoint} (step ${r.vocoder.step}) on ${r.backend}`
        : `Griffin-Lim (${r.vocoder.iterations} iterations)`;
    this.log(paint.ok(`vocoded ${r.files.length} file${r.files.length === 1 ? '' : 's'} by ${by}`));
    this.log(
      `${r.audioS.toFixed(1)} s of audio in ${(r.vocodeMs / 1000).toFixed(2)} s: ` +
        `${r.realTimeFactor.toFixed(1)}× real time (batches of ${r.batchSize})`,
    );
  }
}
