import { DataSet } from './data-set.js';
import type { JobArgs } from './job-args.js';
import { invalidJob, type LogicalGraph } from './logical-graph.js';

export interface SourceOptions {
  /** @defaultValue the source kind */
  readonly name?: string;
  /** @defaultValue the job's parallelism */
  readonly parallelism?: number;
}

/** @see JobContext.generate */
export const DEFAULT_GENERATOR_SPLITS = 128;

export interface GenerateOptions extends SourceOptions {
  /** Sequence numbers made in all, across subtasks (a bound for tests and benchmarks). @defaultValue Infinity: until cancelled */
  readonly count?: number;
  /** Records per second, all subtasks together. @defaultValue Infinity: as fast as backpressure allows */
  readonly ratePerSecond?: number;
  /** Fixed splits the sequence is dealt over: the most parallelism the source may ever have. @defaultValue DEFAULT_GENERATOR_SPLITS (128) */
  readonly splits?: number;
}

/**
 * What a job's build function receives: its arguments, the default parallelism, and the sources that
 * start data sets. The build function runs in the job master and again in every worker process, so it
 * must build the same graph each time (no randomness, no clock; read inputs only through sources).
 */
export class JobContext {
  /** The job's arguments (`weft run <job> -- <args>`): `args.input`, `args.output`, `args.number('scale', 1)`. */
  readonly args: JobArgs;
  /** The parallelism operators get unless they set their own (`weft run --parallelism`). */
  readonly parallelism: number;
  readonly #graph: LogicalGraph;

  /** @internal — the engine makes contexts. */
  constructor(graph: LogicalGraph, args: JobArgs, parallelism: number) {
    this.#graph = graph;
    this.args = args;
    this.parallelism = parallelism;
  }

  /**
   * The lines of a text file, or of every file of a directory (names starting with `.` or `_` skipped),
   * without their line terminators (`\n` or `\r\n`). Each subtask reads an equal share of the bytes,
   * aligned to line boundaries: a line belongs to the subtask whose share holds its first byte.
   */
  readTextFile(path: string, options: SourceOptions = {}): DataSet<string> {
    const name = options.name ?? 'readTextFile';
    if (typeof path !== 'string' || path.trim() === '') throw invalidJob(`operator ${JSON.stringify(name)} (text-source): path`, `expected a non-empty string, got ${JSON.stringify(path)}`);
    return this.#source({ kind: 'text-source', path }, 'readTextFile', options);
  }

  /** The integers of `[start, end)`, split into equal contiguous ranges across subtasks. */
  range(start: number, end: number, options: SourceOptions = {}): DataSet<number> {
    const name = options.name ?? 'range';
    for (const [field, value] of [['start', start], ['end', end]] as const) {
      if (!Number.isSafeInteger(value)) throw invalidJob(`operator ${JSON.stringify(name)} (range-source): ${field}`, `expected a safe integer, got ${String(value)}`);
    }
    if (end < start) throw invalidJob(`operator ${JSON.stringify(name)} (range-source): end`, `${end} is before start ${start}`);
    return this.#source({ kind: 'range-source', start, end }, 'range', options);
  }

  /** The values of `values`, split into contiguous slices across subtasks (order kept within a slice). */
  fromArray<T>(values: readonly T[], options: SourceOptions = {}): DataSet<T> {
    if (!Array.isArray(values)) throw invalidJob(`operator ${JSON.stringify(options.name ?? 'fromArray')} (array-source): values`, 'expected an array');
    return this.#source({ kind: 'array-source', values }, 'fromArray', options);
  }

  /**
   * An unbounded source (a streaming job's): `fn(seq)` for the sequence numbers 0, 1, 2, … — deterministic,
   * so outputs are checkable. The numbers are dealt over `splits` fixed splits (split `i` makes `i`,
   * `i + splits`, …), each subtask generating its share of the splits round robin. Where each split is
   * is the source's operator state: a checkpoint records it, a restore rewinds to it (with another
   * parallelism, the splits are redistributed). Runs until cancelled, or until `count` numbers were made.
   */
  generate<T>(fn: (seq: number) => T, options: GenerateOptions = {}): DataSet<T> {
    const name = options.name ?? 'generate';
    const field = (f: string): string => `operator ${JSON.stringify(name)} (generator-source): ${f}`;
    if (typeof fn !== 'function') throw invalidJob(field('function'), `expected a function (seq) => value, got ${fn === null ? 'null' : typeof fn}`);
    const count = options.count ?? Number.POSITIVE_INFINITY;
    if (count !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(count) || count < 0)) throw invalidJob(field('count'), `expected a safe integer >= 0, got ${String(count)}`);
    const rate = options.ratePerSecond ?? Number.POSITIVE_INFINITY;
    if (!(typeof rate === 'number' && rate > 0)) throw invalidJob(field('ratePerSecond'), `expected a number > 0, got ${String(rate)}`);
    const splits = options.splits ?? DEFAULT_GENERATOR_SPLITS;
    if (!Number.isInteger(splits) || splits < 1 || splits > 32768) throw invalidJob(field('splits'), `expected an integer in [1, 32768], got ${String(splits)}`);
    if (options.parallelism !== undefined && options.parallelism > splits) throw invalidJob(field('parallelism'), `${options.parallelism} is more than its ${splits} splits`);
    return this.#source({ kind: 'generator-source', fn: fn as (seq: number) => unknown, count, ratePerSecond: rate, splits }, 'generate', options);
  }

  #source<T>(spec: Parameters<LogicalGraph['add']>[0]['spec'], defaultName: string, options: SourceOptions): DataSet<T> {
    const index = this.#graph.add({ name: options.name, defaultName, spec, inputs: [], parallelism: options.parallelism });
    return DataSet.of<T>(this.#graph, index);
  }
}
