import { Worker } from 'node:worker_threads';
import { EngineError } from '@weft/engine';
import type { Logger } from '@weft/shuffle-api';
import type { ExecutorRecord } from './executor-record.js';

export interface RegistryHeartbeatOptions {
  readonly url: string;
  readonly keyPrefix: string;
  readonly intervalMs: number;
  readonly ttlMs: number;
  readonly logger: Logger;
}

/**
 * Keeps a task executor's registry record alive from a worker thread (registry-heartbeat-thread.ts), so a
 * user function holding the main thread's event loop does not make the executor look dead. (A main thread
 * stuck for good is still caught: job masters lose an executor whose control connection stays silent.)
 */
export class RegistryHeartbeat {
  readonly #worker: Worker;
  readonly #logger: Logger;
  #stopped: Promise<void> | undefined;

  private constructor(worker: Worker, logger: Logger) {
    this.#worker = worker;
    this.#logger = logger;
  }

  /** Starts the thread; resolves once the first heartbeat was written (rejects naming the setting when it could not be). */
  static start(options: RegistryHeartbeatOptions, record: ExecutorRecord): Promise<RegistryHeartbeat> {
    const workerData = { url: options.url, keyPrefix: options.keyPrefix, intervalMs: options.intervalMs, ttlMs: options.ttlMs, record };
    // From the TypeScript sources (no build), the thread registers tsx itself: loader hooks do not reach threads on Node 20.
    const worker = import.meta.url.endsWith('.ts')
      ? new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./registry-heartbeat-thread.ts', import.meta.url).href)}); })`, { eval: true, workerData })
      : new Worker(new URL('./registry-heartbeat-thread.js', import.meta.url), { workerData });

    return new Promise((resolve, reject) => {
      const heartbeat = new RegistryHeartbeat(worker, options.logger);
      worker.on('message', (message: { type: string; message?: string; code?: unknown }) => {
        if (message.type === 'started') resolve(heartbeat);
        else if (message.type === 'failed') reject(new EngineError('WEFT_ERR_INVALID_ARGUMENT', `cluster: ${message.message ?? 'the registry is unreachable'}`, { context: { field: 'cluster' } }));
        else if (message.type === 'warn') options.logger.warn({}, message.message ?? '');
      });
      worker.on('error', (error) => {
        options.logger.error({ error: error.message }, 'the registry heartbeat thread failed');
        reject(error);
      });
    });
  }

  /** Writes `record` now and at every later heartbeat. */
  update(record: ExecutorRecord): void {
    if (this.#stopped === undefined) this.#worker.postMessage({ type: 'record', record });
  }

  /** Stops heartbeats (deleting the record when `deregister`) and the thread. Idempotent. */
  stop(deregister: boolean): Promise<void> {
    this.#stopped ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => void this.#worker.terminate().then(() => resolve()), 5000);
      this.#worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.#worker.on('message', (message: { type: string }) => {
        if (message.type === 'stopped') void this.#worker.terminate();
      });
      this.#worker.postMessage({ type: 'stop', deregister });
    }).catch((error: unknown) => this.#logger.warn({ error: (error as Error).message }, 'stopping the registry heartbeat'));
    return this.#stopped;
  }
}
