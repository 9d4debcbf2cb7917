import type { DeliveryGuarantee, TwoPhaseCommitSinkFactory } from './two-phase-commit-sink.js';
import { EngineError } from '../errors/engine-error.js';
import type { EdgeExchange } from './exchange-mode.js';
import type { FilterFunction, FlatMapFunction, FormatFunction, KeySelector, KeyValue, MapFunction } from './functions.js';
import type { WindowAssigner } from '../windows/window-assigner.js';
import type { ResolvedWatermarkStrategy } from './watermark-strategy.js';
import type { StreamSourceSpec } from '../operators/stream-source.js';

/** How records of an edge are routed from producer subtasks to consumer subtasks. */
export type Partitioning =
  /** forward when producer and consumer parallelism are equal, else rebalance (Flink's rule) */
  | { readonly type: 'default' }
  /** subtask i → subtask i (POINTWISE, equal parallelism); chained when possible */
  | { readonly type: 'forward' }
  /** round robin over every consumer subtask (ALL_TO_ALL) */
  | { readonly type: 'rebalance' }
  /** round robin over the consumer subtasks of a POINTWISE group */
  | { readonly type: 'rescale' }
  /** every record to every consumer subtask (ALL_TO_ALL) */
  | { readonly type: 'broadcast' }
  /** by key group of `key(value)` (ALL_TO_ALL), Flink's keyBy */
  | { readonly type: 'hash'; readonly key: KeySelector<unknown, KeyValue>; readonly maxParallelism?: number; readonly userKey: boolean }
  /** `select(value, consumers)` picks the consumer subtask (ALL_TO_ALL); internal (range partitioning) */
  | { readonly type: 'custom'; readonly select: (value: unknown, consumers: number) => number };

/**
 * Internal representation of a keyed aggregation: a `reduce`, an `aggregate` or a `count`. `add` folds a
 * value into an accumulator (map side), `merge` two accumulators (reduce side), `result` makes the output.
 */
export interface Aggregator {
  /** `count`: the combiner may skip the calls and count in place (the hot path of word count). */
  readonly kind?: 'count';
  create(): unknown;
  add(accumulator: unknown, value: unknown): unknown;
  merge(a: unknown, b: unknown): unknown;
  result(key: KeyValue, accumulator: unknown): unknown;
}

/** How a window aggregation folds a window's values (internal form of reduce, aggregate and count). */
export interface WindowFolder {
  first(value: unknown): unknown;
  add(accumulator: unknown, value: unknown): unknown;
  result(accumulator: unknown): unknown;
}

/**
 * Which unmatched records a join emits too (Flink's JoinType): `'inner'` none; `'left'` (left outer) every
 * left record no right record matched, as `fn(left, null)`; `'right'` every unmatched right record, as
 * `fn(null, right)`; `'full'` both.
 */
export type JoinType = 'inner' | 'left' | 'right' | 'full';

/** What each operator does, with the user functions it calls. Rebuilt (not shipped) in every worker. */
export type OperatorSpec =
  | { readonly kind: 'text-source'; readonly path: string }
  | { readonly kind: 'range-source'; readonly start: number; readonly end: number }
  | { readonly kind: 'array-source'; readonly values: readonly unknown[] }
  /** `ctx.generate`: `fn(seq)` for the sequence numbers of its splits, at a rate, until `count` (or cancelled) */
  | { readonly kind: 'generator-source'; readonly fn: (seq: number) => unknown; readonly count: number; readonly ratePerSecond: number; readonly splits: number }
  /** `ctx.watchDirectory`: the lines of every file that appears in a directory, until `endMarker` appears (or cancelled) */
  | { readonly kind: 'directory-source'; readonly path: string; readonly pollIntervalMs: number; readonly endMarker: string | undefined }
  /** `ctx.readRedisStream`: the entries of a stream, read as a consumer group, acknowledged when a checkpoint completes */
  | ({ readonly kind: 'stream-source' } & StreamSourceSpec)
  | { readonly kind: 'map'; readonly fn: MapFunction<unknown, unknown> }
  | { readonly kind: 'flat-map'; readonly fn: FlatMapFunction<unknown, unknown> }
  | { readonly kind: 'filter'; readonly fn: FilterFunction<unknown> }
  /** the built-in word splitter (`splitWords`): lines in, words out */
  | { readonly kind: 'split-words' }
  /** map-side combining: emits `[key, accumulator]` pairs */
  | { readonly kind: 'combine'; readonly key: KeySelector<unknown, KeyValue>; readonly aggregator: Aggregator; readonly maxKeys: number }
  /**
   * reduce side: merges `[key, accumulator]` pairs (or, with `key` — no combiner — folds raw values),
   * emits `aggregator.result` per key
   */
  | {
      readonly kind: 'aggregate';
      readonly aggregator: Aggregator;
      readonly key?: KeySelector<unknown, KeyValue>;
      /**
       * The first of two aggregation stages (LogicalGraphOptions.splitSkewedAggregations): its `result`
       * emits `[key, accumulator]` for a merging aggregate behind a hash edge, so a skewed key group of
       * its input may be split across several subtasks and merged after.
       */
      readonly partial?: boolean;
    }
  /** hash join; input 0 is the left side, input 1 the right; `build` is read fully first; outer sides get `null` for the missing one */
  | {
      readonly kind: 'join';
      readonly leftKey: KeySelector<unknown, KeyValue>;
      readonly rightKey: KeySelector<unknown, KeyValue>;
      readonly fn: (left: unknown, right: unknown) => unknown;
      readonly build: 0 | 1;
      readonly type: JoinType;
    }
  /** `assignTimestampsAndWatermarks`: passes values on, emits the watermark of their timestamps in band */
  | ({ readonly kind: 'timestamps-watermarks' } & ResolvedWatermarkStrategy)
  /**
   * `keyBy(…).window(…)`: folds each key's values per window (`first` makes a window's accumulator from
   * its first value, `add` folds the next ones in), emits a WindowedValue once the window's time passed
   */
  | {
      readonly kind: 'window-aggregate';
      readonly assigner: WindowAssigner;
      readonly key: KeySelector<unknown, KeyValue>;
      /** event time: a value's timestamp (the one `assignTimestampsAndWatermarks` read) */
      readonly timestamp: ((value: unknown) => number) | undefined;
      readonly folder: WindowFolder;
    }
  /** sort, step 1 (chained to the data): a reservoir sample of keys per subtask */
  | { readonly kind: 'sort-sample'; readonly key: KeySelector<unknown, KeyValue>; readonly samples: number }
  /** sort, step 2 (parallelism 1): turns the samples into `ranges - 1` splitters, one record */
  | { readonly kind: 'sort-boundaries'; readonly ranges: number; readonly descending: boolean }
  /** sort, step 3: input 1 (splitters) first, then input 0 (data); emits `[range, value]` */
  | { readonly kind: 'range-assign'; readonly key: KeySelector<unknown, KeyValue>; readonly descending: boolean }
  /** sort, step 4: collects its range, sorts it by key, emits the values in order */
  | { readonly kind: 'local-sort'; readonly key: KeySelector<unknown, KeyValue>; readonly descending: boolean }
  | { readonly kind: 'text-sink'; readonly path: string; readonly format: FormatFunction<unknown> | undefined }
  | { readonly kind: 'collect-sink'; readonly name: string }
  /** `sinkTo(factory)`: a two-phase-commit sink, one instance per subtask attempt */
  | { readonly kind: 'two-phase-commit-sink'; readonly create: TwoPhaseCommitSinkFactory<unknown>; readonly deliveryGuarantee: DeliveryGuarantee };

export type OperatorKind = OperatorSpec['kind'];

/** One input of a logical operator: a producer, the logical input it feeds, how records are routed. */
export interface LogicalInput {
  readonly producer: number;
  /** 0 for one-input operators; 0 (left / data) or 1 (right / splitters) for two-input ones. */
  readonly inputIndex: number;
  readonly partitioning: Partitioning;
  /** A per-edge override of the job's exchange mode. */
  readonly exchange?: EdgeExchange;
  /** Never chain across this input (the sort's data edge must be materialised). */
  readonly noChain?: boolean;
}

/** One operator of the logical job graph (Flink's transformation). */
export interface LogicalNode {
  readonly index: number;
  /** Unique, storage-safe id; the job vertex id when the operator heads a chain. */
  readonly uid: string;
  /** What a person reads in plans, summaries and errors: the user's name or the kind. */
  readonly name: string;
  readonly spec: OperatorSpec;
  readonly inputs: readonly LogicalInput[];
  /** Set by the user, or undefined for the job's default parallelism. */
  readonly parallelism: number | undefined;
  /** False: this operator starts a new chain. */
  readonly chaining: boolean;
}

export interface AddNodeRequest {
  readonly name: string | undefined;
  readonly defaultName: string;
  readonly spec: OperatorSpec;
  readonly inputs: readonly LogicalInput[];
  readonly parallelism?: number | undefined;
  readonly chaining?: boolean | undefined;
}

const SAFE = /[^A-Za-z0-9._-]+/g;

function describe(value: unknown): string {
  return typeof value === 'number' ? String(value) : JSON.stringify(value) ?? typeof value;
}

/**
 * The logical graph a job's build function makes, in creation order (a topological order: an operator
 * is only made from existing ones). Deterministic: the same build makes the same graph in every process.
 */
export interface LogicalGraphOptions {
  /**
   * Plan every keyed aggregation without an explicit parallelism as two stages, a partial one (splittable
   * by producer ranges when a key group is skewed) and a merging one behind a hash edge — an adaptive
   * plan with `AdaptiveBatchOptions.skewedAggregation: 'auto'`. @defaultValue false
   */
  readonly splitSkewedAggregations?: boolean;
}

export class LogicalGraph {
  readonly nodes: LogicalNode[] = [];
  readonly #uids = new Set<string>();
  readonly splitSkewedAggregations: boolean;

  constructor(options: LogicalGraphOptions = {}) {
    this.splitSkewedAggregations = options.splitSkewedAggregations ?? false;
  }

  add(request: AddNodeRequest): number {
    const name = request.name ?? request.defaultName;
    const field = `operator ${JSON.stringify(name)} (${request.spec.kind})`;
    if (request.name !== undefined && (typeof request.name !== 'string' || request.name.trim() === '')) {
      throw invalidJob(`${field}: name`, 'expected a non-empty string');
    }
    const parallelism = request.parallelism;
    if (parallelism !== undefined && (typeof parallelism !== 'number' || !Number.isInteger(parallelism) || parallelism < 1)) {
      throw invalidJob(`${field}: parallelism`, `expected an integer >= 1, got ${describe(parallelism)}`);
    }
    if (request.chaining !== undefined && typeof request.chaining !== 'boolean') {
      throw invalidJob(`${field}: chaining`, `expected a boolean, got ${describe(request.chaining)}`);
    }
    const base = name.replace(SAFE, '-').replace(/\.{2,}/g, '.').replace(/^[-.]+|[-.]+$/g, '').slice(0, 64) || request.spec.kind;
    let uid = base;
    for (let n = 2; this.#uids.has(uid); n++) uid = `${base}-${n}`;
    this.#uids.add(uid);
    const index = this.nodes.length;
    this.nodes.push({
      index,
      uid,
      name,
      spec: request.spec,
      inputs: request.inputs,
      parallelism,
      chaining: request.chaining ?? true,
    });
    return index;
  }

  node(index: number): LogicalNode {
    const node = this.nodes[index];
    if (node === undefined) throw new Error(`unreachable: no logical node ${index}`);
    return node;
  }
}

/** `WEFT_ERR_INVALID_JOB` naming the field, e.g. `operator "tokenize" (flat-map): parallelism`. */
export function invalidJob(field: string, problem: string, cause?: unknown): EngineError {
  return new EngineError('WEFT_ERR_INVALID_JOB', `invalid job: ${field}: ${problem}`, {
    context: { field },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Refuses a user function that is not a function: `WEFT_ERR_INVALID_JOB` naming the operator (`options.name`, else `operator`). */
export function checkFunction(operator: string, options: { readonly name?: string }, fn: unknown): void {
  if (typeof fn !== 'function') {
    throw invalidJob(`operator ${JSON.stringify(options.name ?? operator)} (${operator}): function`, `expected a function, got ${fn === null ? 'null' : typeof fn}`);
  }
}
