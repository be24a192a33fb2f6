import { Flags } from '@oclif/core';
import { XttsCommand } from '@xtts/core';
import { BACKENDS } from '@xtts/core/config';
import { paint } from '@xtts/core/render';
import type { SynthesizeResult } from '@xtts/core/training';

export default class Synthesize extends XttsCommand<SynthesizeResult> {
  static override summary = 'Turn text (and a reference clip for the voice) into a WAV with a trained checkpoint.';
  static override examples = [
    '<%= config.bin %> <%= command.id %> --checkpoint runs/quickstart --text "The quick brown fox." --out fox.wav',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/small/checkpoints/step-00100000 --text "Guten Tag." --language de --reference speaker.wav --out out.wav',
  ];
  static override flags = {
    checkpoint: Flags.string({ summary: 'A run folder (its latest checkpoint) or one checkpoint folder.', required: true, helpValue: 'DIR' }),
    text: Flags.string({ summary: 'What to say.', required: true }),
    language: Flags.string({ summary: 'Language code (default: the config\'s dataset.language).' }),
    reference: Flags.string({ summary: 'WAV of the voice to imitate (default: the model\'s average voice).', helpValue: 'WAV' }),
    out: Flags.string({ summary: 'Output WAV.', required: true, helpValue: 'WAV' }),
    backend: Flags.string({ summary: 'TensorFlow.js backend.', options: [...BACKENDS], default: 'auto' }),
    'max-seconds': Flags.integer({ summary: 'Longest output.', min: 1 }),
  };

  protected async execute(): Promise<SynthesizeResult> {
    const { flags } = await this.parse(Synthesize);
    const { synthesize } = await import('@xtts/core/training');
    return synthesize({ checkpoint: flags.checkpoint, text: flags.text, language: flags.language, reference: flags.reference, out: flags.out, backend: flags.backend as never, maxSeconds: flags['max-seconds'] });
  }

  protected render(r: SynthesizeResult): void {
    this.log(paint.ok(`wrote ${r.out}: ${r.durationS.toFixed(2)} s (${r.frames} mel frames${r.stopped ? '' : ', stop token not reached: raise --max-seconds or train longer'}) in ${(r.synthesisMs / 1000).toFixed(1)} s on ${r.backend}`));
    this.log(paint.dim(`checkpoint ${r.checkpoint} (step ${r.step}); text as spoken: "${r.cleanedText}"`));
  }
}
