import type { Clock } from './clock.js';
import type { TaskExecutorId } from './ids.js';
import type { JsonValue } from './json.js';
import type { Logger } from './logger.js';
import type { ShuffleEnvironment } from './shuffle-environment.js';
import type { ShuffleMaster } from './shuffle-master.js';

export interface ShuffleMasterContext {
  readonly logger?: Logger;
  readonly clock?: Clock;
}

export interface ShuffleEnvironmentContext {
  readonly taskExecutorId: TaskExecutorId;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /**
   * Where the task executor's host is reached by other hosts (a cluster task executor's `--host` and the
   * host of its advertised URL): an environment that serves partitions to other executors listens on
   * `listenHost` and names `advertisedHost` in its `location`, in place of its configured addresses. An
   * environment that serves nothing to others ignores it. @defaultValue the environment's own options
   */
  readonly peerAddress?: { readonly listenHost: string; readonly advertisedHost: string };
}

/**
 * How an engine obtains a shuffle service (Flink's ShuffleServiceFactory). The engine is handed one and
 * never picks a default: only the command line and examples choose an implementation.
 *
 * Masters and environments created by one factory instance in one process may share state (the
 * in-memory shuffle does); ones created in different processes meet only through the descriptors and
 * whatever backend the implementation uses.
 */
export interface ShuffleServiceFactory {
  readonly shuffleServiceId: string;
  createShuffleMaster(context?: ShuffleMasterContext): ShuffleMaster;
  createShuffleEnvironment(context: ShuffleEnvironmentContext): ShuffleEnvironment;
  /**
   * How another process builds an equal factory: it imports `module` and calls its export `exportName`
   * with `options`. Absent for factories that cannot be rebuilt elsewhere.
   */
  readonly reference?: ShuffleServiceReference;
}

/** A factory another process can rebuild: `(await import(module))[exportName](options)`. */
export interface ShuffleServiceReference {
  readonly module: string;
  readonly exportName: string;
  readonly options: JsonValue;
}

/** The signature of the export a ShuffleServiceReference names. */
export type ShuffleServiceFactoryProvider = (options: JsonValue) => ShuffleServiceFactory;
