import type { JsonValue, Logger } from '@weft/shuffle-api';
import { invalidEngineArgument } from '../errors/engine-error.js';

/** One entry of an external stream: its id (a Redis Stream id, `<ms>-<seq>`) and its fields, in order. */
export interface StreamEntry {
  readonly id: string;
  readonly fields: Readonly<Record<string, string>>;
}

/** Which consumer of which group of which stream a StreamReader reads as (`StreamConnector.open`). */
export interface StreamReaderRequest {
  /** The source operator's name (errors name it). */
  readonly operator: string;
  /** The stream's URL (`redis://host:port/db`, as the job gave it). */
  readonly url: string;
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** Where the reader starts a group it has to create: `'0'` (the whole stream) or `'$'` (new entries only). */
  readonly startId: string;
  readonly logger: Logger;
}

/**
 * One consumer of a consumer group (Redis's XREADGROUP model): entries delivered to it stay pending until
 * `ack`ed, and a new reader with the same consumer name reads them again (`readPending`) — what makes a
 * source built on it at-least-once. Owned by the source that opened it, which closes it (`close()`:
 * graceful, idempotent). Calls are made one at a time, except `ack`, which may overlap a `readNew`.
 *
 * Not in the contract: ordering across consumers, entry payloads other than string fields, trimming.
 */
export interface StreamReader {
  /**
   * The next up to `count` entries already delivered to this consumer and not acknowledged (oldest first),
   * after the ones earlier calls returned; `[]` once they are all read.
   */
  readPending(count: number): Promise<StreamEntry[]>;
  /** Up to `count` entries never delivered to any consumer of the group, waiting at most `blockMs` for one. */
  readNew(count: number, blockMs: number): Promise<StreamEntry[]>;
  /** Adds an entry at the end of the stream (XADD); returns its id. */
  append(fields: Readonly<Record<string, string>>): Promise<string>;
  /** Acknowledges entries: they are no longer pending (XACK). */
  ack(ids: readonly string[]): Promise<void>;
  /**
   * Moves to this consumer the entries pending for other consumers of the group that `isOrphan` names
   * (consumers of subtasks that no longer exist after a restore with a smaller parallelism); returns how
   * many. `readPending` then returns them.
   */
  claimFrom(isOrphan: (consumer: string) => boolean): Promise<number>;
  close(): Promise<void>;
}

/**
 * Where a job's external streams are read from (`ctx.readRedisStream(url, …)`): one connector per URL
 * scheme family, handed to `runJob` (`RunJobOptions.streamConnectors`), as file systems are — the engine
 * never imports a Redis client. The CLI hands one for `redis://`, `rediss://` and `redis+sentinel://`
 * (`@weft/job-store`'s RedisStreamConnector).
 *
 * Ownership: the caller of `runJob` owns it (runJob never closes it). A worker process or a cluster's task
 * executor rebuilds an equal one from `reference` (as it rebuilds file systems); one without a reference
 * serves in-process runs only (a job reading through it elsewhere is refused before it runs).
 */
export interface StreamConnector {
  /** URL schemes it serves, without `://`. */
  readonly schemes: readonly string[];
  /** How another process builds an equal connector. Absent: in-process runs only. */
  readonly reference?: StreamConnectorReference;
  /**
   * Connects a reader; creates the group when it is missing (at `startId`, creating the stream too:
   * MKSTREAM). Rejects with `WEFT_ERR_SOURCE_UNAVAILABLE` when the stream's server cannot be reached.
   */
  open(request: StreamReaderRequest): Promise<StreamReader>;
}

/**
 * How another process builds an equal connector: `(await import(module))[exportName](options)` — plain JSON,
 * it travels in a worker's init message (WorkerInitMessage.streamConnectors). Keep secrets out of `options`
 * (a password in the stream's URL is the job's, not the connector's).
 */
export interface StreamConnectorReference {
  readonly module: string;
  readonly exportName: string;
  readonly options: JsonValue;
}

/** The signature of the export a StreamConnectorReference names. */
export type StreamConnectorProvider = (options: JsonValue) => StreamConnector;

/** The connector serving `url`'s scheme, or undefined. */
export function streamConnectorOf(url: string, connectors: readonly StreamConnector[]): StreamConnector | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//iu.exec(url)?.[1]?.toLowerCase();
  return scheme === undefined ? undefined : connectors.find((c) => c.schemes.includes(scheme));
}

/** RunJobOptions.streamConnectors, checked: an array of connectors with their schemes and open(). */
export function checkStreamConnectors(value: readonly StreamConnector[] | undefined): readonly StreamConnector[] {
  const connectors = value ?? [];
  if (!Array.isArray(connectors)) throw invalidEngineArgument('streamConnectors', 'expected an array of StreamConnector');
  for (const [i, c] of connectors.entries()) {
    const candidate = c as Partial<StreamConnector> | undefined;
    if (!Array.isArray(candidate?.schemes) || typeof candidate?.open !== 'function') throw invalidEngineArgument(`streamConnectors[${i}]`, 'expected a StreamConnector (schemes and open())');
  }
  return connectors;
}
