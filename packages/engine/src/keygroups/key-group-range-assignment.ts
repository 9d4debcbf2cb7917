import { invalidEngineArgument } from '../errors/engine-error.js';
import { type Key, javaHashCode } from './java-hash-code.js';
import { murmurHash, roundUpToPowerOfTwo } from './murmur-hash.js';

/** Flink's KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM. */
export const DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128;
/** Flink's UPPER_BOUND_MAX_PARALLELISM (inclusive): the most key groups a keyed operator can have. */
export const UPPER_BOUND_MAX_PARALLELISM = 32768;

/** An inclusive range of key groups, `[startKeyGroup, endKeyGroup]` (empty when end < start). */
export interface KeyGroupRange {
  readonly startKeyGroup: number;
  readonly endKeyGroup: number;
}

function checkInteger(field: string, value: number, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalidEngineArgument(field, `expected an integer, got ${String(value)}`);
  if (value < min || value > max) throw invalidEngineArgument(field, `${value} is outside [${min}, ${max}]`);
}

/** Checks `maxParallelism` is an integer in [1, 32768]; throws `WEFT_ERR_INVALID_ARGUMENT` naming it. */
export function checkMaxParallelism(maxParallelism: number): void {
  checkInteger('maxParallelism', maxParallelism, 1, UPPER_BOUND_MAX_PARALLELISM);
}

function checkParallelism(maxParallelism: number, parallelism: number): void {
  checkMaxParallelism(maxParallelism);
  checkInteger('parallelism', parallelism, 1, maxParallelism);
}

/**
 * The key group of a precomputed Java hash: `murmurHash(hash) % maxParallelism`. The hot-path form: no
 * argument checks, so check `maxParallelism` once (`checkMaxParallelism`) and pass an int32 hash.
 */
export function keyGroupForHash(hash: number, maxParallelism: number): number {
  return murmurHash(hash) % maxParallelism;
}

/**
 * The key group of `key` (Flink's `KeyGroupRangeAssignment.assignToKeyGroup`): strings hash as Java's
 * `String.hashCode`, int32 numbers as `Integer.hashCode`, so a key lands where it would in Flink.
 */
export function assignToKeyGroup(key: Key, maxParallelism: number): number {
  checkMaxParallelism(maxParallelism);
  return keyGroupForHash(javaHashCode(key), maxParallelism);
}

/** The operator (subtask) index that owns `keyGroup`: `keyGroup * parallelism / maxParallelism`. */
export function computeOperatorIndexForKeyGroup(maxParallelism: number, parallelism: number, keyGroup: number): number {
  checkParallelism(maxParallelism, parallelism);
  checkInteger('keyGroup', keyGroup, 0, maxParallelism - 1);
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** The operator index `key` is routed to (Flink's `assignKeyToParallelOperator`). */
export function assignKeyToParallelOperator(key: Key, maxParallelism: number, parallelism: number): number {
  return computeOperatorIndexForKeyGroup(maxParallelism, parallelism, assignToKeyGroup(key, maxParallelism));
}

/** The key groups operator `operatorIndex` owns, inclusive; the ranges of all operators tile [0, maxParallelism). */
export function computeKeyGroupRangeForOperatorIndex(maxParallelism: number, parallelism: number, operatorIndex: number): KeyGroupRange {
  checkParallelism(maxParallelism, parallelism);
  checkInteger('operatorIndex', operatorIndex, 0, parallelism - 1);
  return {
    startKeyGroup: Math.floor((operatorIndex * maxParallelism + parallelism - 1) / parallelism),
    endKeyGroup: Math.floor(((operatorIndex + 1) * maxParallelism - 1) / parallelism),
  };
}

/** Flink's default max parallelism: `min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768)`, for p in [1, 32768]. */
export function computeDefaultMaxParallelism(parallelism: number): number {
  checkInteger('parallelism', parallelism, 1, UPPER_BOUND_MAX_PARALLELISM);
  const scaled = roundUpToPowerOfTwo(parallelism + Math.floor(parallelism / 2));
  return Math.min(Math.max(scaled, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM);
}
