// oclif's help for the xtts host: `xtts trian --help` gets what `xtts trian` gets (the closest
// command, exit 2, the JSON envelope with --json) instead of oclif's bare "Command trian not found."
import { Help } from '@oclif/core';

export default class XttsHelp extends Help {
  async showHelp(argv) {
    try {
      await super.showHelp(argv);
    } catch (e) {
      const missing = /^Command (.+) not found\.$/.exec(e?.message ?? '');
      if (!missing) throw e;
      // The not-found hook prints the error and exits 2.
      await this.config.runHook('command_not_found', { id: missing[1], argv });
      throw e;
    }
  }
}
