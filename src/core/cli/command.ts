// The base of every xtts command (core plugins and third-party ones alike): `run()` computes a typed
// result, `render()` shows it to a person, and `--json` prints one envelope and nothing else:
//   done:    {"status": "success" | "findings" | "interrupted", "result": ..., "warnings": [...]}
//   failure: {"status": "error", "error": {"code", "message", "suggestions"}, "warnings": [...]}
// The status follows the exit code, always: 0 success, 1 findings (or a run that failed), 129/130/143
// interrupted, anything else an error (with the result where one was computed). Exit codes are
// ExitCode's (docs/exit-codes.md). A user mistake never ends in a stack trace.
import { Command, Errors } from '@oclif/core';
import { ExitCode, isXttsError, XttsError } from '../errors.js';
import { paint } from '../render/index.js';
import { didYouMean, SIGNAL_EXIT, type StopSignal } from '../util/index.js';

export type ResultStatus = 'success' | 'findings' | 'interrupted';

export interface SuccessEnvelope<T> {
  status: ResultStatus;
  result: T;
  warnings: string[];
}

export interface ErrorEnvelope {
  status: 'error';
  error: { code: string; message: string; suggestions: string[]; position?: unknown };
  /** What was computed before the command decided it failed (e.g. the findings of a config that could not be read). */
  result?: unknown;
  warnings: string[];
}

/** The envelope status an exit code means; 'error' for usage and environment failures. */
export function statusForExitCode(code: number): ResultStatus | 'error' {
  if (code === ExitCode.ok) return 'success';
  if (code === ExitCode.findings) return 'findings';
  if (code === ExitCode.interrupted || code === ExitCode.terminated || code === ExitCode.hangup) return 'interrupted';
  return 'error';
}

export abstract class XttsCommand<T> extends Command {
  static override enableJsonFlag = true;

  private readonly warnings: string[] = [];

  /** Compute the result (the `--json` payload). Throw XttsError for anything the user can fix. */
  protected abstract execute(): Promise<T>;

  /** Show the result to a person. Not called with --json. */
  protected abstract render(result: T): void;

  /** The exit code for a computed result (e.g. 1 when findings reach the fail level). */
  protected exitCodeFor(_result: T): number {
    return ExitCode.ok;
  }

  /**
   * The error a computed result stands for when exitCodeFor gives a usage or environment code (the
   * --json envelope is then an error envelope, with the result beside it).
   */
  protected errorFor(_result: T, code: number): XttsError {
    return new XttsError('FAILED', 'the command failed', { exitCode: code as ExitCode });
  }

  private resultExitCode: number = ExitCode.ok;

  /** A warning for the user: stderr for people, the envelope's `warnings` for --json. */
  protected addWarning(message: string): void {
    this.warnings.push(message);
    if (!this.jsonEnabled()) process.stderr.write(`${paint.warn('warning')} ${message}\n`);
  }

  /** Tells on stderr what a stop signal does now (a line of its own, under any progress line). */
  protected tellSignal(signal: StopSignal, message: string): void {
    process.stderr.write(`\n${paint.warn(signal)}: ${message}\n`);
  }

  /**
   * Exits at once for a stop signal (nothing to save yet, or a second signal), with the signal's status (130, 143,
   * 129): said on stderr, and with --json an `interrupted` envelope without a result, the reason in its warnings, so
   * that a script reading standard output still gets one envelope.
   */
  protected exitForSignal(signal: StopSignal, message: string): never {
    this.tellSignal(signal, message);
    if (this.jsonEnabled()) {
      this.warnings.push(`${signal}: ${message}`);
      this.logJson({ status: 'interrupted', result: null, warnings: this.warnings });
    }
    process.exit(SIGNAL_EXIT[signal]);
  }

  async run(): Promise<T> {
    const result = await this.execute();
    if (!this.jsonEnabled()) this.render(result);
    const code = this.exitCodeFor(result);
    this.resultExitCode = code;
    if (code !== ExitCode.ok) process.exitCode = code;
    return result;
  }

  protected override toSuccessJson(result: unknown): SuccessEnvelope<unknown> | ErrorEnvelope {
    const status = statusForExitCode(this.resultExitCode);
    if (status === 'error')
      return {
        status,
        error: this.errorFor(result as T, this.resultExitCode).toJSON(),
        result,
        warnings: this.warnings,
      };
    return { status, result, warnings: this.warnings };
  }

  protected override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }

  protected override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<unknown> {
    if (err instanceof Errors.ExitError) throw err;
    const xe = toXttsError(err);
    const fromEnvironment = configFromEnvironment(this.argv, this.ctor.flags, process.env);
    if (fromEnvironment && xe.message.includes(fromEnvironment))
      // A config the user did not type this time: say where it came from before anything else.
      xe.suggestions.unshift(
        `the config ${fromEnvironment} is named by the environment (XTTS_CONFIG), not by --config: pass --config ` +
          'FILE, or unset XTTS_CONFIG',
      );
    if (this.jsonEnabled()) {
      const envelope: ErrorEnvelope = { status: 'error', error: xe.toJSON(), warnings: this.warnings };
      this.logJson(envelope);
    } else {
      process.stderr.write(`${paint.error(`Error [${xe.code}]`)} ${xe.message}\n`);
      for (const s of xe.suggestions) process.stderr.write(`  ${paint.dim('→')} ${s}\n`);
      if (xe.code === 'INTERNAL' && process.env.XTTS_DEBUG) process.stderr.write(`${err.stack}\n`);
    }
    process.exitCode = xe.exitCode;
    this.exit(xe.exitCode);
    return undefined;
  }
}

/**
 * The config file a command read from $XTTS_CONFIG because its arguments named none (no --config or -c), or
 * undefined: a config named by the environment and forgotten there is a mistake its error should point at.
 */
export function configFromEnvironment(
  argv: readonly string[],
  flags: Record<string, { env?: string }> | undefined,
  env: Record<string, string | undefined>,
): string | undefined {
  const value = env.XTTS_CONFIG;
  if (!value || flags?.config?.env !== 'XTTS_CONFIG') return undefined;
  const named = argv.some((a) => a === '--config' || a.startsWith('--config=') || /^-c/.test(a));
  return named ? undefined : value;
}

/** Turn anything thrown into an XttsError: ours as is, oclif's parse errors as usage errors. */
export function toXttsError(err: unknown): XttsError {
  if (isXttsError(err)) return err;
  const e = err as Error & { oclif?: { exit?: number }; code?: string };
  if (e && typeof e === 'object' && 'oclif' in e && e.oclif) {
    // Flag and argument parse errors from oclif: a usage error with oclif's message, and the flag
    // meant where an unknown one is a typo of a flag the command takes.
    return new XttsError('USAGE', stripAnsi(withFlagGuesses(e)), {
      exitCode: ExitCode.usage,
      suggestions: ['see --help for the flags this command takes'],
    });
  }
  // A flag's own parse function refused its value: oclif rewrites the error's message in place (and sets no exit
  // code unless configured to): a usage error, said as the parse function said it.
  const parsing = /^Parsing --(\S+) \n\t([^]*)\nSee more help with --help$/.exec(e?.message ?? '');
  if (parsing)
    return new XttsError('USAGE', parsing[2], {
      exitCode: ExitCode.usage,
      suggestions: [`see --help for what --${parsing[1]} takes`],
    });
  // The machine's limits, wherever they surfaced (a write, SQLite): the environment's, not a bug.
  const message = e?.message ?? String(err);
  const where = (e as { path?: string })?.path ? ` (${(e as { path?: string }).path})` : '';
  if (
    e?.code === 'ENOSPC' ||
    e?.code === 'EDQUOT' ||
    e?.code === 'SQLITE_FULL' ||
    /database or disk is full|no space left on device/i.test(message)
  ) {
    return new XttsError('NO_SPACE', `the disk is full${where}: ${message}`, {
      exitCode: ExitCode.environment,
      suggestions: [
        'free space on the disk that holds the run folder and the feature cache ' +
          '(pipeline.cache.path), or point --output / the cache at another disk; a run ' +
          'resumes from its last checkpoint with --resume',
      ],
      cause: err,
    });
  }
  if (e?.code === 'EACCES' || e?.code === 'EPERM' || e?.code === 'EROFS' || e?.code === 'SQLITE_READONLY') {
    return new XttsError('NOT_WRITABLE', `a file cannot be written${where}: ${message}`, {
      exitCode: ExitCode.environment,
      suggestions: [
        'check the permissions of the folder named above (a run folder, --output or --out-dir, the feature ' +
          'cache pipeline.cache.path), or name one you can write',
      ],
      cause: err,
    });
  }
  return new XttsError('INTERNAL', `xtts failed unexpectedly: ${message}`, {
    exitCode: ExitCode.findings,
    suggestions: [
      'this is a bug in xtts: rerun with XTTS_DEBUG=1 for the stack trace and report ' +
        'it with `xtts diagnose-gpu-utilization --json`',
    ],
    cause: err,
  });
}

/**
 * oclif's "Nonexistent flag: --max-step" names the flags it did not know (`flags`) and holds the
 * command's flag definitions (`parse.input.flags`): say which defined flag each one is likely a typo of.
 */
function withFlagGuesses(e: Error & { flags?: unknown; parse?: { input?: { flags?: object } } }): string {
  const unknown = Array.isArray(e.flags) ? e.flags.map(String) : [];
  const defined = Object.keys(e.parse?.input?.flags ?? {});
  const guesses = unknown.flatMap((typed) => {
    const name = typed.replace(/^-+/, '').split('=')[0];
    const near = name.length > 1 ? didYouMean(name, defined) : undefined;
    return near ? [`${typed.split('=')[0]}: did you mean --${near}?`] : [];
  });
  if (guesses.length === 0) return e.message;
  const [first, ...rest] = e.message.split('\n');
  return [`${first} (${guesses.join('; ')})`, ...rest].join('\n');
}

function stripAnsi(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\u001b\[[0-9;]*m/g, '');
}
