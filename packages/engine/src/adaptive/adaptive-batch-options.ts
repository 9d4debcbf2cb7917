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
  /**
   * Split skewed subpartitions of a decided join's probe side across several subtasks (Flink 2.x's
   * `table.optimizer.skewed-join-optimization.strategy`: `auto`; `none` never splits). @defaultValue 'auto'
   */
  readonly skewedJoin?: 'auto' | 'none';
  /**
   * `auto`: plan each keyed aggregation without an explicit parallelism in two stages — a partial
   * aggregate whose skewed key groups are split like a join's probe side, and a merging aggregate behind
   * a hash edge (one more, small, exchange: one record per key and partial subtask). `none`: one stage,
   * never split (Flink has no skewed-aggregation splitting; its answer is the map-side combiner).
   * @defaultValue 'none'
   */
  readonly skewedAggregation?: 'auto' | 'none';
  /**
   * A subpartition is skewed when its bytes exceed `skewedFactor` × the median subpartition's and
   * `skewedThresholdBytes` (Flink's `table.optimizer.skewed-join-optimization.skewed-factor`), a finite
   * number >= 1. @defaultValue 4
   */
  readonly skewedFactor?: number;
  /** ... and exceed this many bytes (Flink's `...skewed-join-optimization.skewed-threshold`). @defaultValue 256 MiB */
  readonly skewedThresholdBytes?: number;
}

/** AdaptiveBatchOptions with every default filled in (plain JSON: it travels to workers). */
export interface ResolvedAdaptiveBatchOptions {
  readonly minParallelism: number;
  readonly maxParallelism: number;
  readonly dataVolumePerTaskBytes: number;
  readonly defaultSourceParallelism: number;
  readonly skewedJoin: 'auto' | 'none';
  readonly skewedAggregation: 'auto' | 'none';
  readonly skewedFactor: number;
  readonly skewedThresholdBytes: number;
}

/** Flink 2.x's defaults of `table.optimizer.skewed-join-optimization.*`. */
export const DEFAULT_SKEWED_JOIN_OPTIONS = Object.freeze({
  /** `strategy`: auto. */
  skewedJoin: 'auto' as const,
  /** Not Flink's (it has none): one-stage aggregations unless asked for. */
  skewedAggregation: 'none' as const,
  /** `skewed-factor`: 4.0. */
  skewedFactor: 4,
  /** `skewed-threshold`: 256 MiB. */
  skewedThresholdBytes: 256 * 1024 * 1024,
});

const KEYS = ['minParallelism', 'maxParallelism', 'dataVolumePerTaskBytes', 'defaultSourceParallelism', 'skewedJoin', 'skewedAggregation', 'skewedFactor', 'skewedThresholdBytes'] as const;
type CountKey = 'minParallelism' | 'maxParallelism' | 'dataVolumePerTaskBytes' | 'defaultSourceParallelism' | 'skewedThresholdBytes';

/** Validates `options` once (WEFT_ERR_INVALID_ARGUMENT naming `adaptive.<field>`) and fills in Flink's defaults. */
export function resolveAdaptiveBatchOptions(options: AdaptiveBatchOptions | true): ResolvedAdaptiveBatchOptions {
  const given: AdaptiveBatchOptions = options === true ? {} : options;
  if (typeof given !== 'object' || given === null) throw invalidEngineArgument('adaptive', `expected true or an object, got ${JSON.stringify(given)}`);
  for (const key of Object.keys(given)) {
    if (!(KEYS as readonly string[]).includes(key)) throw invalidEngineArgument(`adaptive.${key}`, `unknown option; expected one of ${KEYS.join(', ')}`);
  }
  const count = (field: CountKey, fallback: number, max: number): number => {
    const value = given[field] ?? fallback;
    if (!Number.isSafeInteger(value) || value < 1 || value > max) throw invalidEngineArgument(`adaptive.${field}`, `expected an integer in [1, ${max}], got ${String(given[field])}`);
    return value;
  };
  const minParallelism = count('minParallelism', DEFAULT_ADAPTIVE_BATCH_OPTIONS.minParallelism, MAX_ADAPTIVE_PARALLELISM);
  const maxParallelism = count('maxParallelism', DEFAULT_ADAPTIVE_BATCH_OPTIONS.maxParallelism, MAX_ADAPTIVE_PARALLELISM);
  if (minParallelism > maxParallelism) throw invalidEngineArgument('adaptive.minParallelism', `${minParallelism} is above maxParallelism ${maxParallelism}`);
  const dataVolumePerTaskBytes = count('dataVolumePerTaskBytes', DEFAULT_ADAPTIVE_BATCH_OPTIONS.dataVolumePerTaskBytes, Number.MAX_SAFE_INTEGER);
  const defaultSourceParallelism = count('defaultSourceParallelism', maxParallelism, MAX_ADAPTIVE_PARALLELISM);
  const skewedJoin = given.skewedJoin ?? DEFAULT_SKEWED_JOIN_OPTIONS.skewedJoin;
  if (skewedJoin !== 'auto' && skewedJoin !== 'none') throw invalidEngineArgument('adaptive.skewedJoin', `expected 'auto' or 'none', got ${JSON.stringify(given.skewedJoin)}`);
  const skewedAggregation = given.skewedAggregation ?? DEFAULT_SKEWED_JOIN_OPTIONS.skewedAggregation;
  if (skewedAggregation !== 'auto' && skewedAggregation !== 'none') throw invalidEngineArgument('adaptive.skewedAggregation', `expected 'auto' or 'none', got ${JSON.stringify(given.skewedAggregation)}`);
  const skewedFactor = given.skewedFactor ?? DEFAULT_SKEWED_JOIN_OPTIONS.skewedFactor;
  if (typeof skewedFactor !== 'number' || !Number.isFinite(skewedFactor) || skewedFactor < 1) throw invalidEngineArgument('adaptive.skewedFactor', `expected a finite number >= 1, got ${String(given.skewedFactor)}`);
  const skewedThresholdBytes = count('skewedThresholdBytes', DEFAULT_SKEWED_JOIN_OPTIONS.skewedThresholdBytes, Number.MAX_SAFE_INTEGER);
  return { minParallelism, maxParallelism, dataVolumePerTaskBytes, defaultSourceParallelism, skewedJoin, skewedAggregation, skewedFactor, skewedThresholdBytes };
}

/** A text source's parallelism from its input size: `ceil(bytes / dataVolumePerTaskBytes)`, within [min, max]. */
export function sourceParallelismForBytes(bytes: number, options: ResolvedAdaptiveBatchOptions): number {
  const wanted = Math.ceil(bytes / options.dataVolumePerTaskBytes);
  return Math.min(options.maxParallelism, Math.max(options.minParallelism, wanted, 1));
}
