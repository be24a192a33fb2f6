import { Flags } from '@oclif/core';
import { XttsCommand } from '@xtts/core';
import { paint } from '@xtts/core/render';
import type { ExportResult } from '@xtts/core/training';

export default class Export extends XttsCommand<ExportResult> {
  static override summary = "A checkpoint's weights under PyTorch's names and layouts, as one safetensors file.";
  static override description =
    'Linear weights as [out, in] `weight` and `bias`, convolutions as [out, in, kernel], layer-norm gains as ' +
    '`weight`, fused q/k/v projections split into q_proj, k_proj and v_proj: the file loads into a torch ' +
    "module's state_dict without a conversion script. Works on acoustic and vocoder checkpoints; the header " +
    "keeps the checkpoint's description (step, config, tokenizer, speakers, languages).";
  static override examples = [
    '<%= config.bin %> <%= command.id %> --checkpoint runs/quickstart --out quickstart.safetensors',
    '<%= config.bin %> <%= command.id %> --checkpoint runs/vocoder-tiny/checkpoints/step-00020000 ' +
      '--out vocoder.safetensors',
  ];
  static override flags = {
    checkpoint: Flags.string({
      summary: 'A run folder (its latest checkpoint) or one checkpoint folder.',
      required: true,
      helpValue: 'DIR',
    }),
    out: Flags.string({ summary: 'The safetensors file to write.', required: true, helpValue: 'FILE' }),
    overwrite: Flags.boolean({ summary: 'Replace the file if it exists.', default: false }),
  };

  protected async execute(): Promise<ExportResult> {
    const { flags } = await this.parse(Export);
    const { exportCheckpoint } = await import('@xtts/core/training');
    return exportCheckpoint(flags.checkpoint, flags.out, { overwrite: flags.overwrite });
  }

  protected render(r: ExportResult): void {
    this.log(
      paint.ok(
        `wrote ${r.out}: ${r.tensors} tensors, ${(r.parameters / 1e6).toFixed(2)} M parameters ` +
          `of the ${r.kind} checkpoint ${r.checkpoint}`,
      ),
    );
  }
}
