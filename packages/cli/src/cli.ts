import { isEngineError } from '@weft/engine';
import { type CliIo, type Command, ExitCode } from './command.js';
import { COMMANDS } from './commands/index.js';

const VERSION = '0.1.0';

/** `weft --help`: every command with its one-line summary. */
export function globalUsage(commands: readonly Command[] = COMMANDS): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: weft <command> [options]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Options:',
    '  -h, --help     show help (also: weft <command> --help, weft help <command>)',
    '  --version      print the version',
    '',
    'Exit codes: 0 success, 1 the work failed, 2 bad usage or bad input.',
    '',
  ].join('\n');
}

function wantsHelp(args: readonly string[]): boolean {
  const separator = args.indexOf('--');
  const own = separator === -1 ? args : args.slice(0, separator);
  return own.includes('--help') || own.includes('-h');
}

/** The input errors a command reports with exit code 2 (ERRORS.md). */
const INPUT_ERROR_CODES = new Set([
  'WEFT_ERR_INPUT_UNREADABLE',
  'WEFT_ERR_INVALID_TOPOLOGY',
  'WEFT_ERR_UNKNOWN_EXECUTION_VERTEX',
  'WEFT_ERR_UNKNOWN_PARTITION',
  'WEFT_ERR_FAILOVER_STRATEGY_NOT_APPLICABLE',
  'WEFT_ERR_INVALID_ARGUMENT',
  'WEFT_ERR_INVALID_JOB',
  'WEFT_ERR_RESUME_REFUSED',
  'WEFT_ERR_EVENT_LOG',
  'WEFT_ERR_STATE_RESTORE',
  'WEFT_ERR_APPROXIMATE_REFUSED',
]);

/**
 * Runs `weft <argv…>` and returns the exit code. Never throws: usage errors print the message and the
 * command's usage on stderr (exit 2), input errors their message (exit 2), anything else a stack (exit 1).
 */
export async function runCli(argv: readonly string[], io: CliIo, commands: readonly Command[] = COMMANDS): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined) {
    io.stderr.write(`weft: missing command\n\n${globalUsage(commands)}`);
    return ExitCode.USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? args[0] : undefined;
    const command = topic === undefined ? undefined : commands.find((c) => c.name === topic);
    if (topic !== undefined && command === undefined) {
      io.stderr.write(`weft: unknown command ${JSON.stringify(topic)}\n\n${globalUsage(commands)}`);
      return ExitCode.USAGE;
    }
    io.stdout.write(command === undefined ? globalUsage(commands) : command.usage);
    return ExitCode.OK;
  }
  if (name === '--version') {
    io.stdout.write(`weft ${VERSION}\n`);
    return ExitCode.OK;
  }
  const command = commands.find((c) => c.name === name);
  if (command === undefined) {
    const what = name.startsWith('-') ? `unknown option ${name}` : `unknown command ${JSON.stringify(name)}`;
    io.stderr.write(`weft: ${what}\n\n${globalUsage(commands)}`);
    return ExitCode.USAGE;
  }
  if (wantsHelp(args)) {
    io.stdout.write(command.usage);
    return ExitCode.OK;
  }
  try {
    return await command.run(args, io);
  } catch (error) {
    if (isEngineError(error, 'WEFT_ERR_USAGE')) {
      io.stderr.write(`weft ${command.name}: ${error.message}\n\n${usageAfterError(command)}`);
      return ExitCode.USAGE;
    }
    if (isEngineError(error) && INPUT_ERROR_CODES.has(error.code)) {
      io.stderr.write(`weft ${command.name}: ${error.message}\n`);
      return ExitCode.USAGE;
    }
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    io.stderr.write(`weft ${command.name}: internal error: ${detail}\n`);
    return ExitCode.FAILED;
  }
}

/** Usage texts longer than this are cut to their synopsis after a usage error: the error stays in sight. */
const MAX_USAGE_LINES_AFTER_ERROR = 30;

/** What follows a usage error's message: the command's usage, or, when long, its synopsis and where the rest is. */
function usageAfterError(command: Command): string {
  const lines = command.usage.split('\n');
  if (lines.length <= MAX_USAGE_LINES_AFTER_ERROR) return command.usage;
  const blank = lines.findIndex((line) => line.trim() === '');
  const synopsis = lines.slice(0, blank === -1 ? MAX_USAGE_LINES_AFTER_ERROR : blank).join('\n');
  return `${synopsis}\n\nRun 'weft ${command.name} --help' for every option.\n`;
}
