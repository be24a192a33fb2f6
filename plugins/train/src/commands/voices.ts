import { Flags } from '@oclif/core';
import { announcePipes, XttsCommand } from '@xtts/core';
import { BACKENDS } from '@xtts/core/config';
import { paint } from '@xtts/core/render';
import type { VoicesResult } from '@xtts/core/training';

export default class Voices extends XttsCommand<VoicesResult> {
  static override summary = "A checkpoint's voices and languages; saves one voice to a file.";
  static override description =
    'Lists the speakers a checkpoint was trained on (each has a voice for `synthesize --speaker`) and its ' +
    "languages, with how each one's text is read (the cleaner, whether it reads numbers and abbreviations " +
    "in that language, the espeak-ng voice). With --out it saves one voice: a trained speaker's " +
    '(--speaker) or one cloned from clips (--reference, once per clip; their voices are averaged), for ' +
    '`synthesize --voice`.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --checkpoint runs/voices',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/voices --speaker p225 --out p225.voice.safetensors',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/voices --reference a.wav --reference b.wav ' +
      '--out new.voice.safetensors',
  ];
  static override flags = {
    checkpoint: Flags.string({
      summary: 'A run folder (its latest checkpoint) or one checkpoint folder.',
      required: true,
      helpValue: 'DIR',
    }),
    speaker: Flags.string({ summary: "Save this trained speaker's voice (with --out).", helpValue: 'NAME' }),
    reference: Flags.string({
      summary: 'Save the voice of these clips (with --out); once per clip.',
      helpValue: 'WAV',
      multiple: true,
    }),
    out: Flags.string({ summary: 'The voice file to write.', helpValue: 'FILE' }),
    overwrite: Flags.boolean({ summary: 'Replace --out if it exists.', default: false }),
    backend: Flags.string({
      summary: 'TensorFlow.js backend (for --reference).',
      options: [...BACKENDS],
      default: 'auto',
      env: 'XTTS_BACKEND',
    }),
  };

  protected async execute(): Promise<VoicesResult> {
    const { flags } = await this.parse(Voices);
    const { voices } = await import('@xtts/core/training');
    announcePipes('--reference', flags.reference ?? []);
    const result = await voices({
      checkpoint: flags.checkpoint,
      speaker: flags.speaker,
      references: flags.reference,
      out: flags.out,
      overwrite: flags.overwrite,
      backend: flags.backend as never,
    });
    for (const w of result.warnings ?? []) this.addWarning(w);
    return result;
  }

  protected render(r: VoicesResult): void {
    // Saving a voice says what it wrote; the listing is what the command says without --out.
    if (r.saved) {
      this.log(paint.ok(`wrote ${r.saved.file}: the voice of ${r.saved.source}`));
      return;
    }
    const withVoice = r.speakers.filter((s) => s.voice).length;
    this.log(`${r.checkpoint} (step ${r.step})`);
    this.log(
      paint.ok(`${r.speakers.length} speaker${r.speakers.length === 1 ? '' : 's'}`) +
        (withVoice < r.speakers.length
          ? paint.dim(` (${withVoice} with a voice: this checkpoint predates voices for the rest)`)
          : paint.dim(` (each voice from up to ${r.clipsPerVoice} of their clips)`)),
    );
    // A model that reads pitch (a rate) speaks each voice at its measured median F0 (rate): shown beside the name.
    const width = Math.max(...r.speakers.map((s) => s.name.length));
    for (const s of r.speakers)
      this.log(
        `  ${s.pitchHz || s.ratePerS ? s.name.padEnd(width) : s.name}` +
          (s.pitchHz ? paint.dim(`  ${s.pitchHz.toFixed(0)} Hz`) : '') +
          (s.ratePerS ? paint.dim(`  ${s.ratePerS.toFixed(1)} changes/s`) : '') +
          (s.voice ? '' : paint.dim('  (no voice)')),
      );
    this.log(paint.ok(`${r.languages.length} language${r.languages.length === 1 ? '' : 's'}`));
    for (const l of r.languages)
      this.log(
        `  ${l.code}  cleaner ${l.cleaner}` +
          (l.normalised ? ', numbers and abbreviations read in this language' : ', numbers left as digits') +
          (l.espeakVoice ? `, espeak-ng voice ${l.espeakVoice}` : ''),
      );
  }
}
