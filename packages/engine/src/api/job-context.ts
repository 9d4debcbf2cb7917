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

/** @see JobContext.watchDirectory */
export const DEFAULT_DIRECTORY_POLL_INTERVAL_MS = 1_000;

export interface WatchDirectoryOptions extends SourceOptions {
  /** How often the directory is listed for new files once every file seen is read. @defaultValue DEFAULT_DIRECTORY_POLL_INTERVAL_MS (1 s) */
  readonly pollIntervalMs?: number;
  /**
   * A file name that ends the source: once a listing shows it, every file of that listing is read and the
   * source ends (the marker itself is not read; name it with a leading `_` or `.`, e.g. `_DONE`).
   * @defaultValue none: watches until cancelled
   */
  readonly endMarker?: string;
}

/** @see JobContext.readRedisStream */
export const DEFAULT_STREAM_BATCH_SIZE = 256;
/** @see JobContext.readRedisStream */
export const DEFAULT_STREAM_BLOCK_MS = 200;

export interface ReadRedisStreamOptions extends SourceOptions {
  /** The consumer group (created when missing). @defaultValue `weft-<source name>` */
  readonly group?: string;
  /** Subtask i reads as consumer `<consumerPrefix>-<i>` of the group. @defaultValue the source's name */
  readonly consumerPrefix?: string;
  /** Where a group created by the source starts: `'0'` (the whole stream) or `'$'` (entries added from now on). @defaultValue '0' */
  readonly startId?: '0' | '$';
  /** Entries asked for per XREADGROUP. @defaultValue DEFAULT_STREAM_BATCH_SIZE (256) */
  readonly batchSize?: number;
  /** How long one XREADGROUP waits for new entries (BLOCK) before the source looks again. @defaultValue DEFAULT_STREAM_BLOCK_MS (200) */
  readonly blockMs?: number;
  /**
   * An entry that has this field ends the subtask that reads it (it is acknowledged, not emitted): add one
   * such entry per subtask to end a bounded run. @defaultValue none: reads until cancelled
   */
  readonly endField?: string;
}

const STREAM_OPTION_KEYS: ReadonlySet<string> = new Set(['name', 'parallelism', 'group', 'consumerPrefix', 'startId', 'batchSize', 'blockMs', 'endField']);
const DIRECTORY_OPTION_KEYS: ReadonlySet<string> = new Set(['name', 'parallelism', 'pollIntervalMs', 'endMarker']);

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
   * `i + splits`, …), each subtask generating its share of the splits in increasing order, after a
   * restore too (so a watermark bound made for timestamps that grow with `seq` holds). Where each split is
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

  /**
   * An unbounded source of the lines of every file in directory `path` (Flink's FileSource with continuous
   * monitoring): the files there when it starts, then each new one, listed every `pollIntervalMs`, each
   * read once, in name order per subtask. A file belongs to the subtask its name hashes to (stable for a
   * given parallelism). Files must appear whole: write them elsewhere (or under a name starting with `.`
   * or `_`, or ending in `.tmp`, which are never read) and rename them in; a file must not change once
   * visible. Where each subtask is — the files it finished and the byte offset in the one it reads — is
   * its operator state, so a restore from an aligned checkpoint neither reads a line twice nor skips one
   * (also with another parallelism). A missing directory is `WEFT_ERR_INPUT_UNREADABLE` before anything runs.
   */
  watchDirectory(path: string, options: WatchDirectoryOptions = {}): DataSet<string> {
    const name = options.name ?? 'watchDirectory';
    const field = (f: string): string => `operator ${JSON.stringify(name)} (directory-source): ${f}`;
    refuseUnknownKeys(options, DIRECTORY_OPTION_KEYS, field);
    if (typeof path !== 'string' || path.trim() === '') throw invalidJob(field('path'), `expected a non-empty string, got ${JSON.stringify(path)}`);
    if (/^[a-z][a-z0-9+.-]*:\/\//iu.test(path) && !path.startsWith('file://')) throw invalidJob(field('path'), `a local directory only, got ${path}`);
    const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_DIRECTORY_POLL_INTERVAL_MS;
    if (!(Number.isFinite(pollIntervalMs) && pollIntervalMs > 0)) throw invalidJob(field('pollIntervalMs'), `expected a number > 0, got ${String(pollIntervalMs)}`);
    const endMarker = options.endMarker;
    if (endMarker !== undefined && (typeof endMarker !== 'string' || endMarker === '' || endMarker.includes('/'))) throw invalidJob(field('endMarker'), `expected a file name, got ${JSON.stringify(endMarker)}`);
    return this.#source({ kind: 'directory-source', path, pollIntervalMs, endMarker }, 'watchDirectory', options);
  }

  /**
   * An unbounded source of the entries of Redis Stream `stream` at `url`, read with a consumer group
   * (XREADGROUP; the group is created when missing, with the stream: MKSTREAM): subtask i is consumer
   * `<consumerPrefix>-<i>`. Each entry is emitted as `{ id, fields }` (StreamEntry). At-least-once: an entry is
   * acknowledged (XACK) only once a checkpoint taken after it completed (or, in a job without checkpoints,
   * when the source ends); after a failure the restarted subtask first reads its consumer's pending entries
   * again, so entries read after the latest completed checkpoint may arrive twice, and none is lost.
   * A restore with fewer subtasks hands the pending entries of the consumers that are gone to subtask 0.
   * The job needs a StreamConnector for the URL (`weft run` has one for `redis://`, rebuilt on worker processes and cluster executors);
   * otherwise, or when Redis cannot be reached, the source fails with `WEFT_ERR_SOURCE_UNAVAILABLE`.
   */
  readRedisStream(url: string, stream: string, options: ReadRedisStreamOptions = {}): DataSet<{ readonly id: string; readonly fields: Readonly<Record<string, string>> }> {
    const name = options.name ?? 'readRedisStream';
    const field = (f: string): string => `operator ${JSON.stringify(name)} (stream-source): ${f}`;
    refuseUnknownKeys(options, STREAM_OPTION_KEYS, field);
    if (typeof url !== 'string' || !/^[a-z][a-z0-9+.-]*:\/\//iu.test(url)) throw invalidJob(field('url'), `expected a redis:// URL, got ${JSON.stringify(url)}`);
    if (typeof stream !== 'string' || stream === '') throw invalidJob(field('stream'), `expected a non-empty string, got ${JSON.stringify(stream)}`);
    const text = (f: 'group' | 'consumerPrefix' | 'endField'): string | undefined => {
      const value = options[f];
      if (value !== undefined && (typeof value !== 'string' || value === '')) throw invalidJob(field(f), `expected a non-empty string, got ${JSON.stringify(value)}`);
      return value;
    };
    const startId = options.startId ?? '0';
    if (startId !== '0' && startId !== '$') throw invalidJob(field('startId'), `expected '0' or '$', got ${JSON.stringify(startId)}`);
    const batchSize = options.batchSize ?? DEFAULT_STREAM_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw invalidJob(field('batchSize'), `expected an integer >= 1, got ${String(batchSize)}`);
    const blockMs = options.blockMs ?? DEFAULT_STREAM_BLOCK_MS;
    if (!Number.isInteger(blockMs) || blockMs < 1) throw invalidJob(field('blockMs'), `expected an integer >= 1, got ${String(blockMs)}`);
    const spec = { kind: 'stream-source' as const, url, stream, group: text('group') ?? `weft-${name}`, consumerPrefix: text('consumerPrefix') ?? name, startId, batchSize, blockMs, endField: text('endField') };
    return this.#source(spec, 'readRedisStream', options);
  }

  #source<T>(spec: Parameters<LogicalGraph['add']>[0]['spec'], defaultName: string, options: SourceOptions): DataSet<T> {
    const index = this.#graph.add({ name: options.name, defaultName, spec, inputs: [], parallelism: options.parallelism });
    return DataSet.of<T>(this.#graph, index);
  }
}

function refuseUnknownKeys(options: object, known: ReadonlySet<string>, field: (f: string) => string): void {
  if (typeof options !== 'object' || options === null) throw invalidJob(field('options'), 'expected an object');
  for (const key of Object.keys(options)) if (!known.has(key)) throw invalidJob(field(key), `unknown option (known: ${[...known].join(', ')})`);
}
