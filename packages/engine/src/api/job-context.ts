import { DataSet } from './data-set.js';
import type { JobArgs } from './job-args.js';
import { invalidJob, type LogicalGraph } from './logical-graph.js';

export interface SourceOptions {
  /** @defaultValue the source kind */
  readonly name?: string;
  /** @defaultValue the job's parallelism */
  readonly parallelism?: number;
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

  #source<T>(spec: Parameters<LogicalGraph['add']>[0]['spec'], defaultName: string, options: SourceOptions): DataSet<T> {
    const index = this.#graph.add({ name: options.name, defaultName, spec, inputs: [], parallelism: options.parallelism });
    return DataSet.of<T>(this.#graph, index);
  }
}
