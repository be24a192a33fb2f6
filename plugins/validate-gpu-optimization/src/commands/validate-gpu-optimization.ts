import { Flags } from '@oclif/core';
import { ExitCode, XttsCommand, XttsError } from '@xtts/core';
import {
  isInputFailure,
  SEVERITIES,
  validateConfigFile,
  type Severity,
  type ValidationReport,
} from '@xtts/core/config';
import { renderValidationReport, toSarif } from '@xtts/core/render';

export default class ValidateGpuOptimization extends XttsCommand<ValidationReport> {
  static override summary = 'Lint a training config for what keeps a GPU fed: schema, positions, rules, fixes.';

  static override description =
    'Checks the YAML against the config schema (unknown and duplicate keys, types, ' +
    'ranges — each with file:line:col) and then against rules that decide whether a ' +
    'GPU will be kept busy in this engine: workers vs CPU cores, prefetch depth vs ' +
    'memory, the feature cache, static shapes, batch size vs the memory budget, ' +
    'backend and precision support, dual-GPU sanity, and intervals vs run length. ' +
    'Every finding has a rule id, a severity, a position, a fix and a docs link ' +
    '(docs/rules.md).\n' +
    '\n' +
    'Exit codes: 0 no finding at or above --fail-severity; 1 findings at or above ' +
    'it; 2 the config could not be read or parsed.';

  static override examples = [
    '<%= config.bin %> <%= command.id %> --config configs/quickstart.yaml',
    '<%= config.bin %> <%= command.id %> --config my.yaml --set batching.batch_size=64 --fail-severity warn',
    '<%= config.bin %> <%= command.id %> --config my.yaml --format sarif > xtts.sarif',
    '<%= config.bin %> <%= command.id %> --config my.yaml --no-environment   # a config meant for another host',
  ];

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'The YAML config to check.', required: true, env: 'XTTS_CONFIG' }),
    set: Flags.string({
      summary: 'Override a key, e.g. training.learning_rate=3e-4 (repeatable).',
      multiple: true,
      default: [],
    }),
    format: Flags.string({
      summary: 'Output format (--json prints the JSON envelope).',
      options: ['text', 'sarif'],
      default: 'text',
    }),
    'fail-severity': Flags.string({
      summary: 'Exit 1 when a finding is at or above this severity.',
      options: [...SEVERITIES],
      default: 'error',
    }),
    environment: Flags.boolean({
      summary:
        'Check against this machine (the dataset on disk and its metadata rows, backends, GPUs, cores). ' +
        '--no-environment lints a config meant for another host.',
      default: true,
      allowNo: true,
    }),
  };

  private format = 'text';

  protected async execute(): Promise<ValidationReport> {
    const { flags } = await this.parse(ValidateGpuOptimization);
    this.format = flags.format;
    if (flags.format === 'sarif' && this.jsonEnabled())
      throw new XttsError('USAGE', '--json and --format sarif each choose what is printed: pass one of them', {
        exitCode: ExitCode.usage,
        suggestions: ['--format sarif for code-scanning tools, --json for the xtts envelope'],
      });
    return validateConfigFile(flags.config, {
      set: flags.set,
      environment: flags.environment,
      failSeverity: flags['fail-severity'] as Severity,
    });
  }

  protected render(report: ValidationReport): void {
    if (this.format === 'sarif') this.log(JSON.stringify(toSarif(report, this.config.version), null, 2));
    else this.log(renderValidationReport(report));
  }

  protected override errorFor(report: ValidationReport, code: number): XttsError {
    const first = report.findings.find((f) => f.ruleId.startsWith('input/') || f.ruleId === 'yaml/syntax')!;
    return new XttsError(
      'CONFIG_UNREADABLE',
      first.message.includes(report.file) ? first.message : `${report.file}: ${first.message}`,
      {
        exitCode: code as ExitCode,
        position: first.position,
        suggestions: first.fix ? [first.fix] : ['name a YAML config that exists and parses'],
      },
    );
  }

  protected override exitCodeFor(report: ValidationReport): number {
    if (isInputFailure(report)) return ExitCode.usage;
    return report.passed ? ExitCode.ok : ExitCode.findings;
  }
}
