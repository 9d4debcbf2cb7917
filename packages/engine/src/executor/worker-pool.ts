import { type ShuffleServiceFactory, type ShuffleServiceReference, type TaskExecutorId, taskExecutorId } from '@weft/shuffle-api';
import type { ChildProcess } from 'node:child_process';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import type { ExternalFileSystemReference } from '../io/external-file-system.js';
import { DEFAULT_HEARTBEAT_INTERVAL_MS, type WorkerPoolOptions } from './worker-pool-options.js';
import { WorkerProcessTaskExecutor } from './worker-process-task-executor.js';
import type { WorkerInitMessage } from './worker-protocol.js';

function requireReference(factory: ShuffleServiceFactory, field: string): ShuffleServiceReference {
  if (factory.reference === undefined) {
    throw new EngineError('WEFT_ERR_INVALID_ARGUMENT', `the ${field} shuffle service ${JSON.stringify(factory.shuffleServiceId)} has no reference, so worker processes cannot rebuild it; use the in-process executor`, {
      context: { field: `shuffle.${field}` },
    });
  }
  return factory.reference;
}

function fileSystemReferences(options: WorkerPoolOptions): ExternalFileSystemReference[] {
  return (options.fileSystems ?? []).map((fs, i) => {
    if (fs.reference === undefined) {
      throw new EngineError('WEFT_ERR_INVALID_ARGUMENT', `the ${fs.scheme}:// file system has no reference, so worker processes cannot rebuild it; use the in-process executor`, {
        context: { field: `fileSystems[${i}]` },
      });
    }
    return fs.reference;
  });
}

/**
 * A pool of worker processes (child_process.fork), each a task executor with `slotsPerWorker` slots, so a
 * job uses every core. Workers load the job module themselves and rebuild both shuffle factories from
 * their references; records never cross the IPC channel — only deployments, task events, progress and
 * heartbeats do. A worker that exits, or misses heartbeats for `heartbeatTimeoutMs` (it is then killed),
 * is reported lost once its process is gone — so nothing it ran can still write after the job master
 * learns of the loss. `startReplacement` forks a new worker to take a lost one's place.
 */
export class WorkerPool {
  /** Starts `workers` processes and resolves once every one loaded the job; on any failure, stops them all. */
  static async start(options: WorkerPoolOptions): Promise<WorkerProcessTaskExecutor[]> {
    requireReference(options.pipelined, 'pipelined');
    requireReference(options.blocking, 'blocking');
    fileSystemReferences(options);
    const children = options.prestarted?.take() ?? [];
    for (const extra of children.slice(options.workers)) extra.kill('SIGKILL');
    const results = await Promise.allSettled(Array.from({ length: options.workers }, (_, i) => startWorker(options, taskExecutorId(`worker-${i}`), children[i])));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) {
      await Promise.all(results.map((r) => (r.status === 'fulfilled' ? r.value.close() : undefined)));
      throw failure.reason;
    }
    return results.map((r) => (r as PromiseFulfilledResult<WorkerProcessTaskExecutor>).value);
  }

  /**
   * Forks one new worker `id` (in place of a lost one) at once; `ready` resolves once it loaded the job
   * (and rejects, the worker stopped, when it cannot). Closing `executor` meanwhile stops the start.
   */
  static startReplacement(options: WorkerPoolOptions, id: TaskExecutorId): { readonly executor: WorkerProcessTaskExecutor; readonly ready: Promise<WorkerProcessTaskExecutor> } {
    const executor = new WorkerProcessTaskExecutor(options, id);
    const ready = executor.start(undefined, initMessage(options, id)).then(
      () => executor,
      async (error: unknown) => {
        await executor.close();
        throw error;
      },
    );
    return { executor, ready };
  }
}

/** How many processes one worker slot is forked into at the job's start when each is killed before it loaded the job. */
export const WORKER_START_ATTEMPTS = 3;

/**
 * Starts worker `id` in `prestarted` (or a new process). One killed by a signal before it loaded the job (an
 * operator's kill -9, the OOM killer) is forked again, up to WORKER_START_ATTEMPTS processes in all; any
 * other failure — the job does not load, the process exits with a code, the start times out — fails at once.
 */
async function startWorker(options: WorkerPoolOptions, id: TaskExecutorId, prestarted: ChildProcess | undefined): Promise<WorkerProcessTaskExecutor> {
  for (let attempt = 1; ; attempt++) {
    const executor = new WorkerProcessTaskExecutor(options, id);
    try {
      await executor.start(attempt === 1 ? prestarted : undefined, initMessage(options, id));
      return executor;
    } catch (error) {
      await executor.close();
      const exit = isEngineError(error, 'WEFT_ERR_TASK_EXECUTOR_LOST') ? error.context['exit'] : undefined;
      if (typeof exit !== 'string' || !exit.startsWith('SIG') || attempt >= WORKER_START_ATTEMPTS) throw error;
      options.logger?.warn({ taskExecutorId: id, attempt, error: (error as Error).message }, 'a worker process was killed before it loaded the job; forking another');
    }
  }
}

function initMessage(options: WorkerPoolOptions, id: TaskExecutorId): WorkerInitMessage {
  return {
    type: 'init',
    executorId: id,
    slots: options.slotsPerWorker,
    jobId: options.jobId,
    jobModuleUrl: options.loaded.moduleUrl,
    args: [...options.args],
    // Workers plan the job as the job master did: same default parallelism, same exchange mode.
    parallelism: options.loaded.plan.defaultParallelism,
    exchangeMode: options.loaded.plan.exchangeMode,
    ...(options.loaded.plan.adaptive === undefined ? {} : { adaptive: options.loaded.plan.adaptive }),
    fingerprint: options.loaded.plan.fingerprint,
    pipelined: requireReference(options.pipelined, 'pipelined'),
    blocking: requireReference(options.blocking, 'blocking'),
    cwd: options.cwd,
    fileSystems: fileSystemReferences(options),
    ...(options.streamConnectors === undefined || options.streamConnectors.length === 0 ? {} : { streamConnectors: [...options.streamConnectors] }),
    serializer: options.serializer,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS,
    progressIntervalMs: options.progressIntervalMs ?? 250,
    ...(options.approximateReconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: options.approximateReconnectTimeoutMs }),
    ...(options.checkpointing === undefined ? {} : { checkpointed: true }),
  };
}
