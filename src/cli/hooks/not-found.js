// oclif's command_not_found hook for the xtts host: a mistyped command gets the closest command
// ("did you mean"), in a terminal or a pipe alike, with xtts's exit code for usage errors (2) and,
// with --json, the error envelope every command prints. (@oclif/plugin-not-found suggests only when
// stdin is a terminal, by prompting, and exits 127.)

/** Edit distance between two strings (insertions, deletions, substitutions, adjacent swaps). */
export function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The visible command closest to `id` (oclif ids use ':'), or undefined when none is close. */
export function closestCommand(id, ids) {
  const typed = id.replaceAll(':', ' ');
  let best;
  for (const c of ids) {
    const name = c.replaceAll(':', ' ');
    const dist = distance(typed, name);
    if (!best || dist < best.dist) best = { name, dist };
  }
  return best && best.dist <= Math.max(2, Math.floor(best.name.length / 3)) ? best.name : undefined;
}

const hook = async function (opts) {
  const hidden = new Set(opts.config.commands.filter((c) => c.hidden).map((c) => c.id));
  const ids = [...opts.config.commandIDs, ...opts.config.commands.flatMap((c) => c.aliases)].filter(
    (c) => !hidden.has(c),
  );
  const typed = opts.id.replaceAll(':', ' ');
  const suggestion = closestCommand(opts.id, ids);
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
