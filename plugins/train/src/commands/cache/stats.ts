import { cacheFlag, configFlag, setFlag, XttsCommand } from '@xtts/core';
import { cacheStats, type CacheStats } from '@xtts/core/cache';
import { formatBytes, resolveCachePath } from '@xtts/core/config';
import { paint, renderTable } from '@xtts/core/render';

export default class CacheStatsCommand extends XttsCommand<CacheStats> {
  static override summary = 'Show the feature cache: entries, size and hit rates.';
  static override examples = [
    '<%= config.bin %> cache stats --config configs/quickstart.yaml',
    '<%= config.bin %> cache stats --cache .xtts-cache/cache.sqlite --json',
  ];
  static override flags = { config: configFlag, set: setFlag, cache: cacheFlag };

  protected async execute(): Promise<CacheStats> {
    const { flags } = await this.parse(CacheStatsCommand);
    return cacheStats(resolveCachePath(flags));
  }

  protected render(s: CacheStats): void {
    const rate = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(1)}%`);
    this.log(paint.bold(`feature cache ${s.path} — ${formatBytes(s.bytes)}`));
    this.log(
      renderTable(
        ['entries', 'count', 'lookups', 'hits', 'hit rate'],
        [
          ['cleaned texts', s.texts, s.lookups.text.lookups, s.lookups.text.hits, rate(s.lookups.text.hitRate)],
          [
            'token sequences',
            s.tokens,
            s.lookups.tokens.lookups,
            s.lookups.tokens.hits,
            rate(s.lookups.tokens.hitRate),
          ],
          [
            'log-mel features',
            s.features,
            s.lookups.feature.lookups,
            s.lookups.feature.hits,
            rate(s.lookups.feature.hitRate),
          ],
          ['unusable clips', s.failures, '', '', ''],
          ['audio hashes', s.audioHashes, '', '', ''],
        ],
        { right: [1, 2, 3, 4] },
      ).trimEnd(),
    );
    this.log(`${s.featureFrames.toLocaleString('en-US')} mel frames cached`);
  }
}
