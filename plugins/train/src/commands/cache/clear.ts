import { cacheFlag, configFlag, setFlag, XttsCommand } from '@xtts/core';
import { cacheClear } from '@xtts/core/cache';
import { formatBytes, resolveCachePath } from '@xtts/core/config';
import { paint } from '@xtts/core/render';

export default class CacheClearCommand extends XttsCommand<{ path: string; removedBytes: number; existed: boolean }> {
  static override summary = 'Delete the feature cache (it is rebuilt on the next run).';
  static override examples = ['<%= config.bin %> cache clear --config configs/quickstart.yaml'];
  static override flags = { config: configFlag, set: setFlag, cache: cacheFlag };

  protected async execute() {
    const { flags } = await this.parse(CacheClearCommand);
    return cacheClear(resolveCachePath(flags));
  }

  protected render(r: { path: string; removedBytes: number; existed: boolean }): void {
    this.log(
      r.existed
        ? paint.ok(`removed ${r.path} (${formatBytes(r.removedBytes)})`)
        : `no cache at ${r.path}; nothing to remove`,
    );
  }
}
