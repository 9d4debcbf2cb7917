import { COMMANDS, runCli } from '@weft/cli';

/** What `weft <command> --help` says a command accepts. */
export interface CliSurface {
  readonly command: string;
  /** Every flag (`--port`), and whether it takes a value. */
  readonly flags: ReadonlyMap<string, { readonly takesValue: boolean }>;
  /** Flags outside brackets on the usage line(s): the command refuses to run without them. */
  readonly required: readonly string[];
  /** The positional arguments the usage line names (`<job module>`). */
  readonly positionals: readonly string[];
}

/** A value placeholder right after a flag in help text: `N`, `URL`, `<path>`, `inprocess|workers`. */
const VALUE_AFTER_FLAG = / (?:[A-Z][A-Z0-9_]*\b|<[^>]+>|[a-z0-9]+(?:\|[a-z0-9-]+)+)/y;

/** A flag in help text, at the start of a line, after a `label:` or after `, ` on such a line. */
const FLAG = /--[a-z][a-z0-9-]*/g;

/**
 * The flags help text documents: every flag of its usage line(s), and of its option lines: an indented
 * line whose first token is a flag (`  --port N   port to listen on`, `  -h, --help`) or a `label:` and then flags
 * (`    fixed-delay:   --restart-attempts N (default 1), --restart-delay MS`), where each flag is first or
 * follows `, `. Flags named in prose (`the examples take --input <path>`) are not the command's own.
 */
function documentedFlags(help: string, usage: string): { flag: string; text: string; end: number }[] {
  const found: { flag: string; text: string; end: number }[] = [];
  for (const m of usage.matchAll(FLAG)) found.push({ flag: m[0], text: usage, end: m.index + m[0].length });
  for (const line of help.split('\n')) {
    if (!/^\s+(?:-\w, )?--[a-z]|^\s+[a-z-]+:\s+--[a-z]/.test(line)) continue;
    for (const m of line.matchAll(FLAG)) {
      const before = line.slice(0, m.index);
      if (/^\s+(?:-\w, )?$|^\s+[a-z-]+:\s+$|, $/.test(before)) found.push({ flag: m[0], text: line, end: m.index + m[0].length });
    }
  }
  return found;
}

/** Parses a command's help text (the format every weft command's USAGE has). */
export function parseUsage(command: string, help: string): CliSurface {
  const usage = /Usage: weft \S+([\s\S]*?)(?:\n\s*\n|$)/.exec(help)?.[1] ?? '';
  const flags = new Map<string, { takesValue: boolean }>([['--help', { takesValue: false }]]);
  for (const { flag, text, end } of documentedFlags(help, usage)) {
    VALUE_AFTER_FLAG.lastIndex = end;
    flags.set(flag, { takesValue: VALUE_AFTER_FLAG.test(text) || flags.get(flag)?.takesValue === true });
  }
  // The usage line(s), from "Usage:" to the first blank line: what is outside [ ] is required.
  const required: string[] = [];
  const positionals: string[] = [];
  let depth = 0;
  let previousFlag: string | undefined;
  for (const token of usage.match(/<[^>]+>|\[|\]|[^\s[\]]+/g) ?? []) {
    if (token === '[') depth++;
    else if (token === ']') depth--;
    else if (depth === 0 && token.startsWith('--')) {
      required.push(token);
      previousFlag = token;
      continue;
    } else if (depth === 0 && token.startsWith('<') && previousFlag === undefined) positionals.push(token);
    previousFlag = undefined;
  }
  return { command, flags, required, positionals };
}

async function helpOf(command: string): Promise<string | undefined> {
  let out = '';
  const io = { stdout: { write: (t: string) => (out += t) }, stderr: { write: () => true }, cwd: process.cwd(), env: {} };
  return (await runCli([command, '--help'], io)) === 0 ? out : undefined;
}

/**
 * The surface of `weft <command>`: its `--help` (run in-process, exactly what `weft <command> --help` prints);
 * undefined for a command weft lacks.
 */
export async function cliSurface(command: string): Promise<CliSurface | undefined> {
  if (!COMMANDS.some((c) => c.name === command)) return undefined;
  const help = await helpOf(command);
  return help === undefined ? undefined : parseUsage(command, help);
}
