// The approximate-recovery word count (fixtures/approximate-workers-job.ts) run on two real worker
// processes over the network pipelined shuffle with count#0's worker SIGKILLed once — the setup the fixed
// and the seeded approximate-workers tests share.
import { fileURLToPath } from 'node:url';
import { type CheckpointingOptions, type FaultInjectorFactory, type JobProgress, type JobResult, type RunJobOptions, runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { createNetworkShuffleServiceFactory } from '@weft/shuffle-network';

export const APPROXIMATE_WORKERS_JOB = fileURLToPath(new URL('../fixtures/approximate-workers-job.ts', import.meta.url));

/** Small buffers and few credits: records travel while the source runs, and little is in flight at a gate. */
export const NETWORK = { bufferSizeBytes: 256, buffersPerPartition: 8, buffersPerChannel: 2, floatingBuffersPerGate: 2, reconnectTimeoutMs: 20_000 };

/** Kills the worker running `task`'s first attempt at its record `atRecord` (what `--inject-faults kill-worker:TASK@AT` plants). */
export const killWorkerOnce = (task: string, atRecord: number): FaultInjectorFactory => () => ({
  taskFault: ({ executionVertexId, attempt }) => (executionVertexId === task && attempt === 0 ? { kind: 'kill-process', atRecord } : undefined),
});

export interface ApproximateWorkersRun {
  /** Records generated, at `rate` per second. */
  readonly count: number;
  readonly rate: number;
  /** count#0's worker is killed at this record of count#0. */
  readonly killAt: number;
  /** The restart's delay: the window in which the rest of the job must keep flowing. */
  readonly delayMs: number;
  readonly checkpointing?: CheckpointingOptions;
  readonly onProgress: (progress: JobProgress) => void;
  readonly eventListener?: RunJobOptions['eventListener'];
  readonly cwd: string;
}

export function runApproximateOnWorkers(run: ApproximateWorkersRun): Promise<JobResult> {
  return runJob({
    job: APPROXIMATE_WORKERS_JOB,
    args: ['--count', String(run.count), '--rate', String(run.rate)],
    parallelism: 2,
    executor: 'workers',
    workers: 2,
    exchangeMode: 'ALL_EDGES_PIPELINED_APPROXIMATE',
    shuffle: { pipelined: createNetworkShuffleServiceFactory(NETWORK), blocking: createMemoryShuffleServiceFactory() },
    restartStrategy: { type: 'fixed-delay', attempts: 2, delayMs: run.delayMs },
    ...(run.checkpointing === undefined ? {} : { checkpointing: run.checkpointing }),
    faults: killWorkerOnce('count#0', run.killAt),
    onProgress: run.onProgress,
    progressIntervalMs: 10,
    ...(run.eventListener === undefined ? {} : { eventListener: run.eventListener }),
    cwd: run.cwd,
  });
}
