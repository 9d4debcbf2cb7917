import { EngineError } from '../errors/engine-error.js';

/**
 * The arguments a job receives (what follows `--` on `weft run`). `--name value`, `--name=value` and bare
 * `--flag` are understood; everything else is a positional. Every example reads `--input` (generated data
 * when absent) and `--output` (docs/DESIGN.md, command-line conventions).
 */
export class JobArgs {
  readonly raw: readonly string[];
  readonly positionals: readonly string[];
  readonly #values = new Map<string, string | true>();

  constructor(raw: readonly string[] = []) {
    this.raw = [...raw];
    const positionals: string[] = [];
    for (let i = 0; i < raw.length; i++) {
      const token = raw[i] as string;
      if (!token.startsWith('--') || token === '--') {
        positionals.push(token);
        continue;
      }
      const eq = token.indexOf('=');
      if (eq > 2) {
        this.#values.set(token.slice(2, eq), token.slice(eq + 1));
        continue;
      }
      const next = raw[i + 1];
      if (next !== undefined && !next.startsWith('--')) {
        this.#values.set(token.slice(2), next);
        i++;
      } else {
        this.#values.set(token.slice(2), true);
      }
    }
    this.positionals = positionals;
  }

  /** `--input <path>`: where the job reads, when given. */
  get input(): string | undefined {
    return this.string('input');
  }

  /** `--output <path>`: where the job writes, when given. */
  get output(): string | undefined {
    return this.string('output');
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  /** The value of `--name`, or `fallback`. A bare `--name` without a value is refused. */
  string(name: string): string | undefined;
  string(name: string, fallback: string): string;
  string(name: string, fallback?: string): string | undefined {
    const value = this.#values.get(name);
    if (value === undefined) return fallback;
    if (value === true) throw badArgument(name, 'needs a value');
    return value;
  }

  /** The value of `--name` as a finite number, or `fallback`; anything else is refused naming the flag. */
  number(name: string): number | undefined;
  number(name: string, fallback: number): number;
  number(name: string, fallback?: number): number | undefined {
    const text = this.string(name);
    if (text === undefined) return fallback;
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value)) throw badArgument(name, `expected a number, got ${JSON.stringify(text)}`);
    return value;
  }

  /**
   * The value of `--name` as an integer >= `min`, or `fallback`; anything else (`1.5`, `abc`, a value
   * below `min`) is refused naming the flag — e.g. a `--top 0` where a count of at least 1 makes sense.
   */
  integer(name: string, fallback: number, min = Number.MIN_SAFE_INTEGER): number {
    const text = this.string(name);
    if (text === undefined) return fallback;
    const value = Number(text);
    if (text.trim() === '' || !Number.isSafeInteger(value) || value < min) {
      const bound = min === Number.MIN_SAFE_INTEGER ? 'an integer' : `an integer >= ${min}`;
      throw badArgument(name, `expected ${bound}, got ${JSON.stringify(text)}`);
    }
    return value;
  }

  /** True for `--name`, `--name=true`; false when absent or `--name=false`. */
  boolean(name: string): boolean {
    const value = this.#values.get(name);
    return value === true || value === 'true';
  }
}

function badArgument(name: string, problem: string): EngineError {
  return new EngineError('WEFT_ERR_INVALID_JOB', `job argument --${name} ${problem}`, { context: { field: `--${name}` } });
}
