// oclif's init hook for the xtts host: `--json` promises one JSON envelope on stdout, so a call that
// names no command (`xtts --json`) or only a topic (`xtts cache --json`), which oclif would answer
// with help text and exit 0, gets the error envelope and exit 2 instead.
const hook = async function (opts) {
  const argv = [opts.id, ...(opts.argv ?? [])].filter((a) => a !== undefined);
  if (!argv.includes('--json')) return;
  const id = opts.id && !opts.id.startsWith('-') ? opts.id : undefined;
  if (id && opts.config.findCommand(id)) return;
  const isTopic = id !== undefined && opts.config.topics.some((t) => t.name === id);
  if (id && !isTopic) return; // not a command or a topic: the command_not_found hook answers
  const bin = opts.config.bin;
  const message = id ? `\`${bin} ${id}\` is a group of commands: name one of them` : 'no command given';
  const commands = opts.config.commands
    .filter((c) => !c.hidden && (!id || c.id.startsWith(`${id}:`)))
    .map((c) => `${bin} ${c.id.replaceAll(':', ' ')}`);
  const suggestions = [`one of: ${commands.join(', ')}`, `${bin} ${id ? `${id} ` : ''}--help explains them`];
  process.stdout.write(
    JSON.stringify({ status: 'error', error: { code: 'NO_COMMAND', message, suggestions }, warnings: [] }, null, 2) +
      `\n`,
  );
  process.exit(2);
};

export default hook;
