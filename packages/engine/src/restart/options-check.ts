import { invalidEngineArgument } from '../errors/engine-error.js';

/** An integer in [min, max] (a safe integer); throws `WEFT_ERR_INVALID_ARGUMENT` naming `options.<name>`. */
export function checkIntegerOption(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw invalidEngineArgument(`options.${name}`, `expected an integer, got ${describeValue(value)}`);
  }
  if (value < min || value > max) throw invalidEngineArgument(`options.${name}`, `${value} is outside [${min}, ${max}]`);
  return value;
}

/** A finite number accepted by `accept`; throws naming `options.<name>` and `requirement`. */
export function checkNumberOption(name: string, value: unknown, requirement: string, accept: (v: number) => boolean): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || !accept(value)) {
    throw invalidEngineArgument(`options.${name}`, `must be ${requirement}, got ${describeValue(value)}`);
  }
  return value;
}

/** A function, when given; throws naming `options.<name>`. */
export function checkFunctionOption<T>(name: string, value: unknown, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'function') throw invalidEngineArgument(`options.${name}`, `expected a function, got ${typeof value}`);
  return value as T;
}

/** A value as a message shows it: numbers as written (`Infinity`, `NaN`, not JSON's `null`), strings quoted. */
function describeValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean' || value === undefined) return String(value);
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return value.toString();
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
