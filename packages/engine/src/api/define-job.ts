import type { RecordSerializerFactory } from '../serialization/record-serializer.js';
import { type ExchangeMode, EXCHANGE_MODES, isExchangeMode } from './exchange-mode.js';
import type { JobContext } from './job-context.js';
import { invalidJob } from './logical-graph.js';

const JOB_DEFINITION = Symbol.for('weft.job-definition');

export interface JobOptions {
  /** Shown in summaries. @defaultValue the module's file name */
  readonly name?: string;
  /** @defaultValue 'ALL_EDGES_BLOCKING' (overridden by `weft run --exchange-mode`) */
  readonly exchangeMode?: ExchangeMode;
  /**
   * Makes the serializer of the job's records (one per task side), for values the default serializer
   * refuses or a faster format. Every worker loads the job module, so every process uses the same one.
   * @defaultValue the runner's `serializer` option, else the default serializer
   */
  readonly serializer?: RecordSerializerFactory;
}

export type JobBuildFunction = (ctx: JobContext) => void | Promise<void>;

/**
 * A job: a build function that adds sources, operators and sinks through its context. A job module's
 * default export, so any worker process can load it by path.
 */
export interface JobDefinition {
  readonly [JOB_DEFINITION]: true;
  readonly options: JobOptions;
  readonly build: JobBuildFunction;
}

/**
 * Defines a job: `export default defineJob((ctx) => { ctx.readTextFile(ctx.args.input!)… .writeText(…) })`.
 * The build function must be deterministic: it runs in the job master and in each worker.
 */
export function defineJob(build: JobBuildFunction, options: JobOptions = {}): JobDefinition {
  if (typeof build !== 'function') throw invalidJob('defineJob: build', 'expected a function (ctx) => { … }');
  if (options.exchangeMode !== undefined && !isExchangeMode(options.exchangeMode)) {
    throw invalidJob('exchangeMode', `unknown exchange mode ${JSON.stringify(options.exchangeMode)}; expected one of ${EXCHANGE_MODES.join(', ')}`);
  }
  if (options.serializer !== undefined && typeof options.serializer !== 'function') throw invalidJob('serializer', 'expected a function () => RecordSerializer');
  return Object.freeze({ [JOB_DEFINITION]: true as const, options: { ...options }, build });
}

/** True for a value `defineJob` made, in this or another copy of the engine. */
export function isJobDefinition(value: unknown): value is JobDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[JOB_DEFINITION] === true && typeof (value as { build?: unknown }).build === 'function';
}
