import { relative } from 'node:path';
import { Flags } from '@oclif/core';
import { datasetFlag, ExitCode, setFlag, XttsCommand } from '@xtts/core';
import { loadConfigOrThrow } from '@xtts/core/config';
import { analyzePipeline, stepMsFromRun, type PipelineAnalysis } from '@xtts/core/data';
import { paint, ProgressLine, renderTable } from '@xtts/core/render';

const GRADE_TEXT = {
  not: 'not input-bound',
  moderately: 'moderately input-bound',
  highly: 'highly input-bound',
} as const;

export default class AnalyzeDataPipeline extends XttsCommand<PipelineAnalysis> {
  static override summary =
    'Measure the input pipeline stage by stage on the real dataset, and say whether it can keep the trainer fed.';

  static override description =
    'Times the manifest, the text front end cold (a scratch cache) and warm, every ' +
    'audio stage per file (read, decode, resample, trim, log-mel: mean, std, ' +
    'coefficient of variation, p50/p95/max), batch assembly, and the prefetch ring ' +
    'against a consumer that takes a batch every --step-ms (or the median step time ' +
    "of a recorded run, --run). The consumer's wait share is graded like " +
    "TensorFlow's input-pipeline analyzer: under 5% not input-bound, 5–20% " +
    'moderately, 20% or more highly. Recommendations name the config keys to ' +
    'change.\n' +
    '\n' +
    'Exit codes: 0 measured; 1 highly input-bound, or rows were skipped with --strict; 2 bad config or dataset.';

  static override examples = [
    '<%= config.bin %> <%= command.id %> --config configs/quickstart.yaml',
    '<%= config.bin %> <%= command.id %> --config my.yaml --dataset /data/LJSpeech-1.1 --step-ms 20',
    '<%= config.bin %> <%= command.id %> --config my.yaml --run runs/small --json',
  ];

  static override flags = {
    config: Flags.string({
      char: 'c',
      summary: 'Training config (YAML).',
      required: true,
      helpValue: 'FILE',
      env: 'XTTS_CONFIG',
    }),
    set: setFlag,
    dataset: datasetFlag,
    'step-ms': Flags.integer({ summary: 'The trainer takes a batch every this many ms.', min: 1, exclusive: ['run'] }),
    run: Flags.string({ summary: 'Take the step time from a recorded run (its median step).', helpValue: 'DIR' }),
    files: Flags.integer({ summary: 'Audio files to time stage by stage.', default: 200, min: 1 }),
    batches: Flags.integer({ summary: 'Batches to pull through the prefetch ring.', default: 50, min: 2 }),
    strict: Flags.boolean({ summary: 'Exit 1 when any row is skipped.', default: false }),
  };

  private strict = false;

  protected async execute(): Promise<PipelineAnalysis> {
    const { flags } = await this.parse(AnalyzeDataPipeline);
    this.strict = flags.strict;
    const loaded = loadConfigOrThrow(flags.config, { set: flags.set });
    const stepMs = flags['step-ms'] ?? (flags.run ? stepMsFromRun(flags.run, loaded.config.task) : undefined);
    const bars = { text: new ProgressLine('text    ', 'rows'), features: new ProgressLine('features', 'clips') };
    const showBars = !this.jsonEnabled();
    const progress =
      !this.jsonEnabled() && process.stderr.isTTY
        ? (m: string) => {
            bars.text.finish();
            bars.features.finish();
            process.stderr.write(`${paint.dim(`… ${m}`)}\n`);
          }
        : undefined;
    const result = await analyzePipeline(loaded, {
      datasetDir: flags.dataset,
      stepMs,
      stepMsSource: flags['step-ms'] !== undefined ? 'flag' : flags.run ? 'run' : 'default',
      audioFiles: flags.files,
      batches: flags.batches,
      onProgress: progress,
      onPrepareProgress: showBars ? (p) => bars[p.stage].update(p.done, p.total, p.elapsedMs) : undefined,
    });
    bars.text.finish();
    bars.features.finish();
    // The envelope's warnings, as train's (people read them in the report, where render prints them).
    if (this.jsonEnabled()) for (const w of result.dataset.warnings) this.addWarning(w);
    return result;
  }

  protected render(a: PipelineAnalysis): void {
    const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
    this.log(paint.bold(`xtts analyze-data-pipeline — ${a.datasetDir}`));
    this.log(a.dataset.line);
    for (const w of a.dataset.warnings) this.log(paint.warn(`warning: ${w}`));
    if (a.skipped.length) {
      this.log('');
      this.log(paint.warn(`skipped rows (${a.skipped.length})`));
      this.log(
        renderTable(
          ['where', 'id', 'reason', 'detail'],
          a.skipped
            .slice(0, 25)
            .map((s) => [`${relative(process.cwd(), s.file) || s.file}:${s.line}`, s.id, s.reason, s.detail]),
          { widths: { 0: 30, 3: 50 } },
        ).trimEnd(),
      );
      if (a.skipped.length > 25) this.log(paint.dim(`… and ${a.skipped.length - 25} more (--json lists them all)`));
    }
    this.log('');
    this.log(
      renderTable(
        ['stage', 'per', 'n', 'mean ms', 'std', 'cv', 'p50', 'p95', 'max'],
        a.stages.map((s) => [
          s.stage,
          s.unit,
          s.ms.n,
          f(s.ms.mean),
          f(s.ms.std),
          s.ms.cv.toFixed(2),
          f(s.ms.p50),
          f(s.ms.p95),
          f(s.ms.max),
        ]),
        { right: [2, 3, 4, 5, 6, 7, 8] },
      ).trimEnd(),
    );
    this.log(
      `text front end: ${a.text.rows} rows, cold ${f(a.text.coldMs)} ms ` +
        `(${a.text.coldRowsPerS.toFixed(0)} rows/s), warm ${f(a.text.warmMs)} ms ` +
        `(${a.text.warmRowsPerS.toFixed(0)} rows/s)`,
    );
    this.log(
      `audio front end: ${a.audio.files} files, ${a.audio.audioSeconds.toFixed(1)} s ` +
        `of audio at ${a.audio.realtimeFactor.toFixed(0)}x real time on one thread`,
    );
    this.log(
      `preparation: ${f(a.prepare.ms)} ms (${a.prepare.computedFeatures} features ` +
        `computed, ${a.prepare.cachedFeatures} from the cache)`,
    );
    this.log(
      `buckets: ${a.buckets.shapes.map((s) => `${s.batchSize}×${s.tokens} tokens×${s.frames} frames`).join(', ')}; ` +
        `padding ${(a.buckets.paddingShare * 100).toFixed(1)}% of frames`,
    );
    this.log('');
    const r = a.ring;
    const verdict = `${(r.waitShare * 100).toFixed(1)}% of the time waiting for input — ${GRADE_TEXT[r.grade]}`;
    this.log(
      `${paint.bold('prefetch ring')}: ${r.batches} batches, ` +
        `depth ${r.depth}, ${r.producers} producer ` +
        `thread${r.producers === 1 ? '' : 's'}, a batch every ${Number(r.stepMs.toFixed(1))} ms ` +
        (`(` +
          (r.stepMsSource === 'default'
            ? 'default; pass --step-ms or --run'
            : r.stepMsSource === 'run'
              ? 'median step of the run'
              : '--step-ms') +
          `)`),
    );
    this.log(
      `  wait per batch: p50 ${f(r.waitMs.p50)} ms, p95 ${f(r.waitMs.p95)} ms; slots ` +
        `ready when asked: p50 ${r.readySlots.p50}`,
    );
    this.log(
      `  ` +
        (r.grade === 'not' ? paint.ok(verdict) : r.grade === 'moderately' ? paint.warn(verdict) : paint.error(verdict)),
    );
    if (a.recommendations.length) {
      this.log('');
      this.log(paint.bold('recommendations'));
      for (const rec of a.recommendations)
        this.log(
          `  ${paint.key(`${rec.key}: ${rec.value}`)} — ${rec.why}${rec.rule ? paint.dim(` (rule ${rec.rule})`) : ''}`,
        );
    }
  }

  protected override exitCodeFor(a: PipelineAnalysis): number {
    return a.ring.grade === 'highly' || (this.strict && a.skipped.length > 0) ? ExitCode.findings : ExitCode.ok;
  }
}
