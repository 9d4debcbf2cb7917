// Where `weft run`'s settings came from (a flag, an environment variable or the default), and the shuffle
// errors that are about them: a shuffle config error is a usage error that names the setting to change.
import type { CliIo } from '../command.js';

/** A shuffle error about what it was given (SHF_ERR_INVALID_CONFIG, SHF_ERR_INVALID_ARGUMENT): a usage error. */
export function isShuffleConfigError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return code === 'SHF_ERR_INVALID_CONFIG' || code === 'SHF_ERR_INVALID_ARGUMENT';
}

/** A documented shuffle error that is not about the command line (a backend refused the job). */
export function isShuffleFailure(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && code.startsWith('SHF_ERR_') && !isShuffleConfigError(error);
}

/** A setting and where it came from, so an error names what the user wrote: `--store`, or `WEFT_STORE`. */
export interface Setting {
  readonly value: string;
  readonly source: string;
}

/** The flag's value, else the environment variable's, else the default — with its source. */
export function setting(flag: string, value: string | undefined, variable: string, env: CliIo['env'], fallback: string): Setting {
  if (value !== undefined) return { value, source: flag };
  const fromEnv = env[variable];
  if (fromEnv !== undefined) return { value: fromEnv, source: variable };
  return { value: fallback, source: `${flag} (default ${fallback})` };
}

/** The setting a shuffle config error is about, by the prefix of its `context.setting`, if any. */
export function settingOf(error: unknown, settings: Readonly<Record<string, Setting | undefined>>): string | undefined {
  const name = String((error as { context?: { setting?: unknown } }).context?.setting ?? '');
  for (const [prefix, s] of Object.entries(settings)) if (s !== undefined && name.startsWith(prefix)) return s.source;
  return name === '' ? undefined : `the shuffle setting ${name}`;
}

/**
 * `<source>: <problem>` for an error about the setting `source` names: a shuffle config error's own
 * "invalid setting <name>: " dropped where <name> is the whole setting (`redis`, or the flag itself) —
 * `source` says it in the user's words — and kept where it names a part (`store.s3.endpoint`).
 */
export function settingProblem(source: string, error: unknown): string {
  const message = (error as Error).message;
  const name = String((error as { context?: { setting?: unknown } }).context?.setting ?? '');
  const prefix = `invalid setting ${name}: `;
  return `${source}: ${name !== '' && !name.includes('.') && message.startsWith(prefix) ? message.slice(prefix.length) : message}`;
}
