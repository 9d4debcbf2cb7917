import { invalidEngineArgument } from '../errors/engine-error.js';
import { DEFAULT_ADAPTIVE_BATCH_OPTIONS } from './parallelism-and-input-infos.js';

/** The most subtasks a vertex may be decided to (Flink's key-group limit). */
const MAX_ADAPTIVE_PARALLELISM = 32768;

/**
 * `RunJobOptions.adaptive`: let operators without an explicit parallelism be decided at run time (Flink's
 * adaptive batch scheduler, `execution.batch.adaptive.auto-parallelism.*`; `weft run --parallelism auto`).
 * Every field is optional; unknown keys are refused.
 */
export interface AdaptiveBatchOptions {
  /** Lower bound of a decided parallelism. @defaultValue 1 */
  readonly minParallelism?: number;
  /**
   * Upper bound of a decided parallelism; also the number of subpartitions producers write for an
   * undecided consumer, and its key groups (unless its keyBy sets its own). @defaultValue 128
   */
  readonly maxParallelism?: number;
  /** Bytes each subtask is expected to read (and a text source's bytes per subtask). @defaultValue 16 MiB */
  readonly dataVolumePerTaskBytes?: number;
  /**
   * Parallelism of a source whose input size is unknown (a generated `range` or `fromArray` source),
   * capped at `maxParallelism`. @defaultValue maxParallelism (Flink 1.19)
   */
  readonly defaultSourceParallelism?: number;
}

/** AdaptiveBatchOptions with every default filled in (plain JSON: it travels to workers). */
export interface ResolvedAdaptiveBatchOptions {
  readonly minParallelism: number;
  readonly maxParallelism: number;
  readonly dataVolumePerTaskBytes: number;
  readonly defaultSourceParallelism: number;
}

const KEYS = ['minParallelism', 'maxParallelism', 'dataVolumePerTaskBytes', 'defaultSourceParallelism'] as const;

/** Validates `options` once (WEFT_ERR_INVALID_ARGUMENT naming `adaptive.<field>`) and fills in Flink's defaults. */
export function resolveAdaptiveBatchOptions(options: AdaptiveBatchOptions | true): ResolvedAdaptiveBatchOptions {
  const given: AdaptiveBatchOptions = options === true ? {} : options;
  if (typeof given !== 'object' || given === null) throw invalidEngineArgument('adaptive', `expected true or an object, got ${JSON.stringify(given)}`);
  for (const key of Object.keys(given)) {
    if (!(KEYS as readonly string[]).includes(key)) throw invalidEngineArgument(`adaptive.${key}`, `unknown option; expected one of ${KEYS.join(', ')}`);
  }
  const count = (field: (typeof KEYS)[number], fallback: number, max: number): number => {
    const value = given[field] ?? fallback;
    if (!Number.isSafeInteger(value) || value < 1 || value > max) throw invalidEngineArgument(`adaptive.${field}`, `expected an integer in [1, ${max}], got ${String(given[field])}`);
    return value;
  };
  const minParallelism = count('minParallelism', DEFAULT_ADAPTIVE_BATCH_OPTIONS.minParallelism, MAX_ADAPTIVE_PARALLELISM);
  const maxParallelism = count('maxParallelism', DEFAULT_ADAPTIVE_BATCH_OPTIONS.maxParallelism, MAX_ADAPTIVE_PARALLELISM);
  if (minParallelism > maxParallelism) throw invalidEngineArgument('adaptive.minParallelism', `${minParallelism} is above maxParallelism ${maxParallelism}`);
  const dataVolumePerTaskBytes = count('dataVolumePerTaskBytes', DEFAULT_ADAPTIVE_BATCH_OPTIONS.dataVolumePerTaskBytes, Number.MAX_SAFE_INTEGER);
  const defaultSourceParallelism = count('defaultSourceParallelism', maxParallelism, MAX_ADAPTIVE_PARALLELISM);
  return { minParallelism, maxParallelism, dataVolumePerTaskBytes, defaultSourceParallelism };
}

/** A text source's parallelism from its input size: `ceil(bytes / dataVolumePerTaskBytes)`, within [min, max]. */
export function sourceParallelismForBytes(bytes: number, options: ResolvedAdaptiveBatchOptions): number {
  const wanted = Math.ceil(bytes / options.dataVolumePerTaskBytes);
  return Math.min(options.maxParallelism, Math.max(options.minParallelism, wanted, 1));
}
