// oclif's command_not_found hook for the xtts host: a mistyped command gets the closest command
// ("did you mean"), in a terminal or a pipe alike, with xtts's exit code for usage errors (2) and,
// with --json, the error envelope every command prints. (@oclif/plugin-not-found suggests only when
// stdin is a terminal, by prompting, and exits 127.)

/**
 * The visible command closest to `id` (oclif ids use ':'), or the one command it begins (`validate`), or undefined
 * when none is close.
 */
async function closestCommand(id, ids) {
  // Imported on use, so that however oclif loads its hooks, a command that is found never loads core here.
  const { didYouMean } = await import('@xtts/core');
  const typed = id.replaceAll(':', ' ');
  const names = ids.map((c) => c.replaceAll(':', ' '));
  const begun = names.filter((c) => c.startsWith(typed));
  return didYouMean(typed, names) ?? (begun.length === 1 ? begun[0] : undefined);
}

/**
 * A command followed by words it does not take (oclif reads `train my.yaml` as a command `train my.yaml`): the
 * command and those words, or undefined.
 */
function commandWithArguments(id, ids) {
  const parts = id.split(':');
  for (let n = parts.length - 1; n > 0; n--) {
    const command = parts.slice(0, n).join(':');
    if (ids.includes(command)) return { command: command.replaceAll(':', ' '), words: parts.slice(n) };
  }
  return undefined;
}

const hook = async function (opts) {
  const hidden = new Set(opts.config.commands.filter((c) => c.hidden).map((c) => c.id));
  const ids = [...opts.config.commandIDs, ...opts.config.commands.flatMap((c) => c.aliases)].filter(
    (c) => !hidden.has(c),
  );
  const typed = opts.id.replaceAll(':', ' ');
  const bin = opts.config.bin;
  const withWords = commandWithArguments(opts.id, ids);
  let message;
  let suggestions;
  if (withWords) {
    // A config named without --config is the usual slip.
    const [first] = withWords.words;
    const config = /\.ya?ml$/i.test(first) ? `; did you mean \`${bin} ${withWords.command} --config ${first}\`?` : '';
    message = `\`${bin} ${withWords.command}\` takes flags, not \`${withWords.words.join(' ')}\`${config}`;
    suggestions = [`${bin} ${withWords.command} --help lists its flags`];
  } else {
    const suggestion = await closestCommand(opts.id, ids);
    message = `\`${typed}\` is not an ${bin} command${suggestion ? `; did you mean \`${bin} ${suggestion}\`?` : ''}`;
    suggestions = [`${bin} --help lists the commands`];
  }
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
