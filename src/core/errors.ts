// Errors are values with a code, a message and suggestions the user can act on. Every command turns
// an XttsError into the same JSON envelope and exit code; anything else is a bug in xtts.

/** Exit codes shared by every command (documented in docs/exit-codes.md). */
export const ExitCode = {
  ok: 0,
  /** Findings at or above the fail level, a run that failed, or work done in part. */
  findings: 1,
  /** Usage or input error: bad flags, unreadable or invalid files. */
  usage: 2,
  /** The environment cannot do what was asked (backend missing, no device, out of memory). */
  environment: 3,
  /** Hung up (SIGHUP: the terminal or SSH session closed) after saving what could be saved. */
  hangup: 129,
  /** Interrupted by the user (Ctrl-C, SIGINT) after saving what could be saved. */
  interrupted: 130,
  /** Terminated (SIGTERM: `docker stop`, Kubernetes, Slurm preemption) after saving what could be saved. */
  terminated: 143,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Where in a user's input something is: a file position, a metadata row, or a flag. */
export interface SourcePosition {
  file: string;
  /** 1-based line. */
  line?: number;
  /** 1-based column. */
  col?: number;
  /** Row id of a dataset entry, when the position is a metadata row. */
  rowId?: string;
}

export function formatPosition(pos: SourcePosition): string {
  let s = pos.file;
  if (pos.line !== undefined) s += `:${pos.line}`;
  if (pos.line !== undefined && pos.col !== undefined) s += `:${pos.col}`;
  if (pos.rowId !== undefined) s += ` (row ${pos.rowId})`;
  return s;
}

export interface XttsErrorOptions {
  suggestions?: string[];
  exitCode?: ExitCode;
  position?: SourcePosition;
  cause?: unknown;
}

/** An error code: upper case (the compiler refuses a literal in lower case). */
export type ErrorCode = Uppercase<string>;

export class XttsError extends Error {
  /** UPPER_SNAKE_CASE, stable: scripts match on it (checked over every code by test/unit/error-codes.test.ts). */
  readonly code: ErrorCode;
  readonly suggestions: string[];
  readonly exitCode: ExitCode;
  readonly position?: SourcePosition;

  constructor(code: ErrorCode, message: string, options: XttsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'XttsError';
    this.code = code;
    this.suggestions = options.suggestions ?? [];
    this.exitCode = options.exitCode ?? ExitCode.usage;
    this.position = options.position;
  }

  toJSON(): { code: string; message: string; suggestions: string[]; position?: SourcePosition } {
    return {
      code: this.code,
      message: this.message,
      suggestions: this.suggestions,
      ...(this.position ? { position: this.position } : {}),
    };
  }
}

export function isXttsError(e: unknown): e is XttsError {
  return e instanceof Error && (e as XttsError).name === 'XttsError' && typeof (e as XttsError).code === 'string';
}

/** An error as a worker thread posts it to its parent (structured clone keeps no class). */
export interface SerializedError {
  message: string;
  code?: ErrorCode;
  exitCode?: number;
  suggestions?: string[];
}

export function serializeError(e: unknown): SerializedError {
  if (isXttsError(e)) return { message: e.message, code: e.code, exitCode: e.exitCode, suggestions: e.suggestions };
  return { message: (e as Error)?.message ?? String(e) };
}

/** The error again in the parent, its message prefixed with who raised it; an XttsError stays one. */
export function deserializeError(e: SerializedError, who: string): Error {
  if (e.code)
    return new XttsError(e.code, `${who}: ${e.message}`, {
      exitCode: (e.exitCode ?? ExitCode.findings) as ExitCode,
      suggestions: e.suggestions,
    });
  return new Error(`${who}: ${e.message}`);
}

/**
 * `e` with the file it came from named in its message and position (a check that knew no file, e.g. weights that do not
 * fit the model).
 */
export function inFile(e: unknown, file: string): unknown {
  if (!isXttsError(e) || e.message.startsWith(file)) return e;
  return new XttsError(e.code, `${file}: ${e.message}`, {
    exitCode: e.exitCode,
    suggestions: e.suggestions,
    position: e.position ?? { file },
    cause: e,
  });
}
