/** Where a command reads and writes: the process's streams and directory, or test doubles. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  /** Relative paths on the command line resolve against this directory. */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * One `weft` subcommand. The dispatcher (cli.ts) handles `--help`, prints `usage` after a
 * `WEFT_ERR_USAGE` error, and maps errors to exit codes; a command parses its own arguments (see
 * parse-command-args.ts) and returns its exit code: 0 success, 1 the work failed, 2 bad usage or input.
 */
export interface Command {
  readonly name: string;
  /** One line for `weft --help`. */
  readonly summary: string;
  /** The full `weft <name> --help` text. */
  readonly usage: string;
  run(args: readonly string[], io: CliIo): Promise<number>;
}

/** Exit codes every command shares (docs/DESIGN.md, command-line conventions). */
export const ExitCode = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
} as const;
