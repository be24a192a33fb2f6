import { Flags } from '@oclif/core';
import { cacheFlag, configFlag, ExitCode, setFlag, XttsCommand } from '@xtts/core';
import { cacheVerify, type CacheVerifyResult } from '@xtts/core/cache';
import { resolveCachePath } from '@xtts/core/config';
import { paint } from '@xtts/core/render';

export default class CacheVerifyCommand extends XttsCommand<CacheVerifyResult> {
  static override summary =
    "Check the feature cache: SQLite integrity, every entry's size against its " +
    'shape, every audio hash against its file.';
  static override description =
    'Exit 0 when everything checks out, 1 when something does not (with --repair the ' +
    'bad entries are removed so the next run recomputes them).';
  static override examples = [
    '<%= config.bin %> cache verify --config configs/quickstart.yaml',
    '<%= config.bin %> cache verify --repair',
  ];
  static override flags = {
    config: configFlag,
    set: setFlag,
    cache: cacheFlag,
    repair: Flags.boolean({
      summary: 'Remove bad entries and stale audio hashes so they are recomputed.',
      default: false,
    }),
  };

  protected async execute(): Promise<CacheVerifyResult> {
    const { flags } = await this.parse(CacheVerifyCommand);
    return cacheVerify(resolveCachePath(flags), flags.repair);
  }

  protected render(r: CacheVerifyResult): void {
    this.log(`${paint.bold('cache')} ${r.path}`);
    // SQLite's report lists every page it finds wrong: the first lines say what; --json has them all.
    const report = r.integrity.split('\n');
    const shown = report.length > 6 ? [...report.slice(0, 5), `… and ${report.length - 5} more lines`] : report;
    this.log(`  SQLite integrity: ${r.integrity === 'ok' ? paint.ok('ok') : paint.error(shown.join('\n    '))}`);
    // In a damaged file the entries read are not all there are: "all whole" would claim too much.
    const whole = r.integrity === 'ok' ? 'all whole' : 'those read whole (the damage may hide others)';
    this.log(
      `  features: ${r.checkedFeatures} ` +
        `checked, ${r.badFeatures.length ? paint.error(`${r.badFeatures.length} bad`) : paint.ok(whole)}`,
    );
    this.log(
      `  tokens:   ${r.checkedTokens} ` +
        `checked, ${r.badTokens.length ? paint.error(`${r.badTokens.length} bad`) : paint.ok(whole)}`,
    );
    this.log(
      `  audio:    ${r.checkedAudio} ` +
        (`re-hashed, ` +
          (r.staleAudio.length
            ? paint.warn(`${r.staleAudio.length} changed or missing since hashed`)
            : paint.ok('all unchanged'))),
    );
    for (const p of r.staleAudio.slice(0, 10)) this.log(`    ${p}`);
    if (r.repaired) this.log(paint.ok('  repaired: bad entries removed; the next run recomputes them'));
    else if (r.integrity !== 'ok')
      this.log(
        paint.dim(
          `  the file itself is damaged: remove it (xtts cache clear --cache ${r.path}); the next run builds it again`,
        ),
      );
    else if (!r.ok) this.log(paint.dim('  run with --repair to remove them'));
  }

  protected override exitCodeFor(r: CacheVerifyResult): number {
    return r.ok || r.repaired ? ExitCode.ok : ExitCode.findings;
  }
}
