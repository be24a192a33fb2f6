// oclif's command_not_found hook for the xtts host: a mistyped command gets the closest command
// ("did you mean"), in a terminal or a pipe alike, with xtts's exit code for usage errors (2) and,
// with --json, the error envelope every command prints. (@oclif/plugin-not-found suggests only when
// stdin is a terminal, by prompting, and exits 127.)

/** The visible command closest to `id` (oclif ids use ':'), or undefined when none is close. */
async function closestCommand(id, ids) {
  // Imported on use, so that however oclif loads its hooks, a command that is found never loads core here.
  const { didYouMean } = await import('@xtts/core');
  return didYouMean(
    id.replaceAll(':', ' '),
    ids.map((c) => c.replaceAll(':', ' ')),
  );
}

const hook = async function (opts) {
  const hidden = new Set(opts.config.commands.filter((c) => c.hidden).map((c) => c.id));
  const ids = [...opts.config.commandIDs, ...opts.config.commands.flatMap((c) => c.aliases)].filter(
    (c) => !hidden.has(c),
  );
  const typed = opts.id.replaceAll(':', ' ');
  const suggestion = await closestCommand(opts.id, ids);
  const bin = opts.config.bin;
  const message =
    `\`${typed}\` is not an ${bin} ` + `command${suggestion ? `; did you mean \`${bin} ${suggestion}\`?` : ''}`;
  const suggestions = [`${bin} --help lists the commands`];
  if ((opts.argv ?? []).includes('--json')) {
    process.stdout.write(
      JSON.stringify(
        { status: 'error', error: { code: 'UNKNOWN_COMMAND', message, suggestions }, warnings: [] },
        null,
        2,
      ) + `\n`,
    );
  } else {
    process.stderr.write(`Error [UNKNOWN_COMMAND] ${message}\n  → ${suggestions[0]}\n`);
  }
  process.exit(2);
};

export default hook;
