import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EngineError } from '@weft/engine';

type Options = NonNullable<ParseArgsConfig['options']>;

/** What `parseCommandArgs` returns: flag values, positionals, and what came after `--`. */
export interface ParsedCommandArgs<T extends Options> {
  readonly values: ReturnType<typeof parseArgs<{ options: T; strict: true; allowPositionals: true }>>['values'];
  readonly positionals: string[];
  readonly rest: string[];
}

/**
 * `node:util` parseArgs in strict mode, its errors turned into `WEFT_ERR_USAGE` naming the flag.
 * Arguments after `--` are returned as `rest` (for `weft run <job> -- job args…`).
 */
export function parseCommandArgs<T extends Options>(command: string, args: readonly string[], options: T): ParsedCommandArgs<T> {
  const separator = args.indexOf('--');
  const own = separator === -1 ? [...args] : args.slice(0, separator);
  const rest = separator === -1 ? [] : args.slice(separator + 1);
  try {
    const parsed = parseArgs({ args: own, options, strict: true, allowPositionals: true });
    return { values: parsed.values, positionals: parsed.positionals, rest };
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    throw usageError(command, message, error);
  }
}

/**
 * The value of an integer flag (undefined when it is absent); `WEFT_ERR_USAGE` naming `flag` unless the
 * value is a decimal integer >= `min`.
 */
export function integerFlag(command: string, flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) throw usageError(command, `${flag} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/** `WEFT_ERR_USAGE` for `weft <command>`. */
export function usageError(command: string, problem: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_USAGE', problem, { context: { command }, ...(cause === undefined ? {} : { cause }) });
}
