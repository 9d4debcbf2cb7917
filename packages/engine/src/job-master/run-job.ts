import { availableParallelism, tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import { type Logger, jobId as toJobId, noopLogger } from '@weft/shuffle-api';
import { EngineError, invalidEngineArgument } from '../errors/engine-error.js';
import { ExecutionTopology } from '../execution/execution-topology.js';
import { isTaskExecutorProvider, type TaskExecutorProvider } from '../executor/task-executor-provider.js';
import { createFailoverStrategy } from '../failover/create-failover-strategy.js';
import { loadJob } from '../graph/load-job.js';
import { buildPipelinedRegions } from '../regions/pipelined-regions.js';
import { createRestartBackoffTimeStrategy } from '../restart/create-restart-backoff-time-strategy.js';
import type { RestartStrategyOptions } from '../restart/restart-backoff-time-strategy.js';
import { resolveSerializer } from '../serialization/serializers.js';
import { checkTaskMemoryBytes } from '../memory/memory-manager.js';
import { removeJobSpillDirs } from '../memory/spill-directory.js';
import { JobMaster } from './job-master.js';
import type { JobProgress } from './job-progress.js';
import { countSkippedRegions, decidedTopology, summarizeEdges, summarizeVertices } from './run-summary.js';
import { resolveAdaptiveBatchOptions } from '../adaptive/adaptive-batch-options.js';
import type { JobSubmission } from './job-scheduler-options.js';
import { JobFence } from './job-fence.js';
import { describeFailure } from './failure-cause.js';
import { findFencingRefusal } from '../errors/fencing-refusal.js';
import { JobSession } from './job-session.js';
import { textSinkTempDirs } from './sink-publisher.js';
import { jobModuleHash } from './job-module-hash.js';
import { type JobEventLog, type JobLog, PROGRESS_PUBLISH_INTERVAL_MS } from '../event-log/job-event-log.js';
import { checkStreamConnectors } from '../io/stream-connector.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import { jobLogListener, type OpenedJobLog, openJobLog, prepareResume, type ResumeDecision } from './job-resume.js';
import { resolveCheckpointingOptions } from '../checkpoint/checkpointing-options.js';
import { InMemoryCheckpointStore, type CheckpointStore, type CompletedCheckpoint } from '../checkpoint/checkpoint-store.js';
import { JobCheckpointing, findRestoreCheckpoint, resolveRestoreCheckpoint } from '../checkpoint/job-checkpointing.js';
import { probeCheckpointStorage } from '../checkpoint/probe-checkpoint-storage.js';
import { checkStreamSourcesReachable } from './check-stream-sources.js';
import { checkApproximateExecutors, checkApproximateRecovery } from './check-approximate-recovery.js';
import { checkCheckpointedAdaptive, checkPlanRunnable } from './check-plan-runnable.js';
import type { FailoverRecord } from './failover-record.js';
import type { JobResult } from './job-result.js';
import type { RunJobOptions } from './run-job-options.js';

export type { JobShuffleServices } from './job-session.js';

function newJobId(): string {
  return `job-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
}

function checkFileSystems(value: readonly ExternalFileSystem[] | undefined): readonly ExternalFileSystem[] {
  const fileSystems = value ?? [];
  if (!Array.isArray(fileSystems)) throw invalidEngineArgument('fileSystems', 'expected an array of ExternalFileSystem');
  const schemes = new Set<string>();
  for (const [i, fs] of fileSystems.entries()) {
    const f = fs as Partial<ExternalFileSystem> | undefined;
    if (typeof f?.scheme !== 'string' || !/^[a-z][a-z0-9+.-]+$/.test(f.scheme) || f.scheme === 'file') {
      throw invalidEngineArgument(`fileSystems[${i}].scheme`, `expected a lower-case URL scheme other than file, got ${JSON.stringify(f?.scheme)}`);
    }
    for (const method of ['list', 'read', 'createWriter', 'exists', 'listUnder', 'stage', 'delete', 'deleteUnder', 'close'] as const) {
      if (typeof f[method] !== 'function') throw invalidEngineArgument(`fileSystems[${i}]`, `expected an ExternalFileSystem, it has no ${method}() method`);
    }
    if (schemes.has(f.scheme)) throw invalidEngineArgument(`fileSystems[${i}].scheme`, `two file systems for ${f.scheme}://`);
    schemes.add(f.scheme);
  }
  return fileSystems;
}

function checkCount(field: string, value: number | undefined, fallback: number): number {
  const n = value ?? fallback;
  if (!Number.isInteger(n) || n < 1) throw invalidEngineArgument(field, `expected an integer >= 1, got ${String(value)}`);
  return n;
}

/**
 * Runs a batch job to its end: loads and plans it, computes its pipelined regions (the same
 * `computePipelinedRegions` logic `weft plan` shows), starts the task executors, schedules regions as
 * their blocking inputs finish, and publishes its sinks when every task finished.
 *
 * Throws for bad input — `WEFT_ERR_INVALID_JOB` (module, graph, arguments), `WEFT_ERR_INVALID_ARGUMENT`
 * (options) — and resolves with `status: 'failed'` when the job ran and failed. With an event log, a run
 * that learns a newer run of its job id took over (a refusal as fenced) changes nothing from then on and
 * fails with `WEFT_ERR_FENCED` (thrown when it had not started running yet).
 */
export async function runJob(options: RunJobOptions): Promise<JobResult> {
  try {
    return await runJobOnce(options);
  } finally {
    // A no-op when the job took them; stops them when it failed before (bad job, bad options).
    await options.prestartedWorkers?.close();
  }
}

async function runJobOnce(options: RunJobOptions): Promise<JobResult> {
  const started = performance.now();
  const cwd = options.cwd ?? process.cwd();
  const logger = options.logger ?? noopLogger;
  const executorOption = options.executor ?? 'inprocess';
  const provider = isTaskExecutorProvider(executorOption) ? executorOption : undefined;
  if (provider === undefined && executorOption !== 'inprocess' && executorOption !== 'workers') throw invalidEngineArgument('executor', `expected 'inprocess', 'workers' or a TaskExecutorProvider, got ${JSON.stringify(executorOption)}`);
  const kind: 'inprocess' | 'workers' | string = provider?.kind ?? (executorOption as 'inprocess' | 'workers');
  const parallelism = checkCount('parallelism', options.parallelism, availableParallelism());
  const workers = checkCount('workers', options.workers, availableParallelism());
  let slots = checkCount('slotsPerExecutor', options.slotsPerExecutor, kind === 'inprocess' ? availableParallelism() : 1);
  const releasePartitionsDuringJob = options.releasePartitionsDuringJob ?? true;
  if (typeof releasePartitionsDuringJob !== 'boolean') throw invalidEngineArgument('releasePartitionsDuringJob', `expected a boolean, got ${JSON.stringify(releasePartitionsDuringJob)}`);
  const eventListener = options.eventListener;
  if (eventListener !== undefined && typeof eventListener?.onJobEvent !== 'function') throw invalidEngineArgument('eventListener', 'expected an object with an onJobEvent(event) method');
  const eventLog = options.eventLog;
  if (eventLog !== undefined && (typeof eventLog?.open !== 'function' || typeof eventLog.readRun !== 'function')) throw invalidEngineArgument('eventLog', 'expected a JobEventLog (open, readRun, …)');
  const fileSystems = checkFileSystems(options.fileSystems);
  const publishIntervalMs = checkCount('progressPublishIntervalMs', options.progressPublishIntervalMs, PROGRESS_PUBLISH_INTERVAL_MS);
  const serializerName = options.serializer ?? 'default';
  const taskMemoryBytes = options.taskMemoryBytes === undefined ? undefined : checkTaskMemoryBytes('taskMemoryBytes', options.taskMemoryBytes);
  if (options.spillDir !== undefined && (typeof options.spillDir !== 'string' || options.spillDir === '')) throw invalidEngineArgument('spillDir', `expected a directory path, got ${JSON.stringify(options.spillDir)}`);
  const spillDir = options.spillDir === undefined ? undefined : resolvePath(cwd, options.spillDir);
  let serializer = resolveSerializer(serializerName);
  if (options.shuffle?.pipelined === undefined || options.shuffle.blocking === undefined) {
    throw invalidEngineArgument('shuffle', 'expected { pipelined, blocking } shuffle service factories (the engine never picks one)');
  }
  const id = toJobId(options.jobId ?? newJobId());
  const args = options.args ?? [];
  const adaptive = options.adaptive === undefined ? undefined : resolveAdaptiveBatchOptions(options.adaptive);
  let checkpointOptions = options.checkpointing === undefined ? undefined : resolveCheckpointingOptions(options.checkpointing);
  const reconnectTimeoutMs = options.approximateReconnectTimeoutMs === undefined ? undefined : checkCount('approximateReconnectTimeoutMs', options.approximateReconnectTimeoutMs, 1);
  // approximate recovery (the option, or the job's own exchange mode below): refused with what it cannot honour, else at-least-once checkpoints
  const checkApproximate = (): void => {
    const checked = checkApproximateRecovery({ checkpointing: options.checkpointing });
    if (checked !== undefined) checkpointOptions = resolveCheckpointingOptions(checked);
  };
  if (options.exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE') checkApproximate();
  if (checkpointOptions !== undefined && provider !== undefined && provider.relaysCheckpoints !== true) throw invalidEngineArgument('checkpointing', `checkpoints are taken of jobs run in process, on local worker processes or on a provider's executors that relay checkpoint messages (TaskExecutorProvider.relaysCheckpoints), not on ${kind} executors`);
  checkCheckpointedAdaptive(checkpointOptions !== undefined, adaptive);
  const loaded = await loadJob({ job: options.job, args, parallelism, cwd, fileSystems, ...(options.exchangeMode === undefined ? (checkpointOptions === undefined ? {} : { defaultExchangeMode: 'ALL_EDGES_PIPELINED' as const }) : { exchangeMode: options.exchangeMode }), ...(adaptive === undefined ? {} : { adaptive: { options: adaptive } }) });
  serializer = loaded.definition.options.serializer ?? serializer;
  const approximate = loaded.plan.exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE';
  if (approximate && options.exchangeMode === undefined) checkApproximate();
  if (kind !== 'inprocess' && loaded.moduleUrl === undefined) throw new EngineError('WEFT_ERR_INVALID_JOB', 'a job run on worker processes must be given as a module path, so workers can load it', { context: { field: 'job' } });
  checkPlanRunnable({ plan: loaded.plan, checkpointed: checkpointOptions !== undefined, adaptive });
  const streamConnectors = checkStreamConnectors(options.streamConnectors);
  checkStreamSourcesReachable(loaded.plan, kind, streamConnectors);
  const topology = ExecutionTopology.from(loaded.plan.topology);
  const regions = buildPipelinedRegions(topology);
  if (checkpointOptions !== undefined || approximate) {
    // a checkpoint needs every task running, and an approximate job's tasks (a region each) read each other while they run: every region holds a slot at once
    const what = approximate ? 'an approximate job' : 'a checkpointed job';
    if (options.slotsPerExecutor === undefined) slots = Math.max(slots, regions.regionCount);
    else if (slots < regions.regionCount) throw invalidEngineArgument('slotsPerExecutor', `${what} runs all its ${regions.regionCount} pipelined regions at once, but the executor has ${slots} slots`);
  }
  const restartStrategy = options.restartStrategy ?? { type: 'none' };
  const restart = createRestartBackoffTimeStrategy(restartStrategy);
  // The strategy asks the job master (built below) which partitions are released.
  let master: JobMaster | undefined;
  const failover = createFailoverStrategy(topology, options.failoverStrategy ?? 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true });
  const faults = options.faults?.({ jobId: id, topology: loaded.plan.topology, regions: regions.toIds(), executor: kind });
  const submission: JobSubmission = {
    jobModule: loaded.moduleUrl ?? null,
    jobModuleHash: await jobModuleHash(loaded.moduleUrl),
    args,
    options: {
      parallelism,
      exchangeMode: loaded.plan.exchangeMode,
      executor: kind,
      workers,
      slotsPerExecutor: slots,
      failoverStrategy: failover.name,
      restartStrategy: JSON.parse(JSON.stringify(restartStrategy)) as RestartStrategyOptions, // without its clock
      serializer: serializerName,
      releasePartitionsDuringJob,
      ...(adaptive === undefined ? {} : { adaptive }),
      ...(provider === undefined ? { spillRoot: spillDir ?? tmpdir() } : {}),
      ...(checkpointOptions === undefined ? {} : { checkpointRetention: checkpointOptions.retention }),
    },
  };

  // a storage that cannot take a snapshot is refused before anything starts
  if (checkpointOptions !== undefined) await probeCheckpointStorage(checkpointOptions.storage, id);
  // so is a checkpoint to restore that is not there: before the lease, which would fence a running run of the id
  const restoreRequest = checkpointOptions?.restoreFrom;
  if (checkpointOptions !== undefined && restoreRequest !== undefined) {
    // reads need no epoch: this store is only read
    const store = checkpointOptions.store ?? eventLog?.checkpointStore?.(id, 0);
    if (store !== undefined) await findRestoreCheckpoint({ jobId: id, plan: loaded.plan, store, from: restoreRequest });
  }
  // the lease first: nothing is registered before this run's epoch exists
  const opened: OpenedJobLog | undefined = eventLog === undefined ? undefined : await openJobLog({ eventLog, jobId: id, submission });
  // what tasks of an earlier run of this id left when they were killed with their process (a SIGKILLed
  // process group, a crash): their spill directories on this host. Only local executors spill here.
  if (provider === undefined) removeJobSpillDirs(id, spillDir);
  const sinkTempDirs = textSinkTempDirs(loaded.plan, cwd, id, fileSystems);
  // learns from the first refusal that a newer run took the job over; from then on this run is hands-off
  const fence = opened === undefined ? undefined : new JobFence({ jobId: id, epoch: opened.log.epoch, logger });
  let session: JobSession;
  try {
    session = new JobSession({
    jobId: id,
    loaded,
    args,
    shuffle: options.shuffle,
    executor: provider ?? (kind as 'inprocess' | 'workers'),
    workers,
    slotsPerExecutor: slots,
    cwd,
    fileSystems,
    streamConnectors,
    serializer,
    serializerName,
    logger,
    replaceLostWorkers: options.replaceLostWorkers ?? true,
    workerExecArgv: options.workerExecArgv,
    prestartedWorkers: options.prestartedWorkers,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs,
    ...(reconnectTimeoutMs === undefined ? {} : { approximateReconnectTimeoutMs: reconnectTimeoutMs }),
    epoch: opened?.log.epoch,
    fence,
  });
  } catch (error) {
    await opened?.log.close().catch(() => {});
    throw error;
  }
  let progressTimer: ReturnType<typeof setInterval> | undefined;
  let publishTimer: ReturnType<typeof setInterval> | undefined;
  let onAbort: (() => void) | undefined;
  let resume: ResumeDecision = { plan: undefined, fallback: undefined };
  let checkpoints: JobCheckpointing | undefined;
  /** From here on the job master's end stores the run's last event. */
  let jobMasterRan = false;
  try {
    let restoreFrom: CompletedCheckpoint | undefined;
    let checkpointStore: CheckpointStore | undefined;
    if (checkpointOptions !== undefined) {
      checkpointStore = checkpointOptions.store ?? (opened !== undefined && eventLog?.checkpointStore !== undefined ? eventLog.checkpointStore(id, opened.log.epoch) : new InMemoryCheckpointStore());
      if (checkpointOptions.restoreFrom !== undefined) restoreFrom = await resolveRestoreCheckpoint({ jobId: id, plan: loaded.plan, store: checkpointStore, storage: checkpointOptions.storage, from: checkpointOptions.restoreFrom });
    }
    // a run restored from a checkpoint starts over from its state, not from the tasks an earlier run finished
    if (opened !== undefined && restoreFrom === undefined && (opened.replayed !== undefined || opened.problem !== undefined)) {
      await session.startShuffle();
      const isAdaptive = (vertexId: string): boolean => loaded.plan.vertices.some((v) => v.id === vertexId && v.adaptive !== undefined);
      resume = await prepareResume({ jobId: id, opened, topology, regions, failover, blockingMaster: session.blockingMaster, sinkTempDirs, fileSystems, logger, fence, isAdaptive });
    }
    const recovery = resume.plan;
    const listener = opened === undefined ? eventListener : jobLogListener(opened.log, eventListener);
    const replaceExecutor = session.replaceExecutor;
    const jobMaster = new JobMaster({
      jobId: id,
      plan: loaded.plan,
      topology,
      regions,
      blockingMaster: session.blockingMaster,
      ...(session.pipelinedMaster === undefined ? {} : { pipelinedMaster: session.pipelinedMaster }),
      failover,
      restart,
      logger,
      releasePartitionsDuringJob,
      submission,
      sinkTempDirs,
      fileSystems,
      cwd,
      ...(checkpointOptions === undefined ? {} : { keepSinkFilesOnFailure: true }),
      ...(listener === undefined ? {} : { eventListener: listener }),
      ...(opened === undefined ? {} : { epoch: opened.log.epoch }),
      ...(fence === undefined ? {} : { fence }),
      ...(recovery === undefined ? {} : { recovery }),
      ...(faults === undefined ? {} : { faults }),
      ...(options.cancelTimeoutMs === undefined ? {} : { cancelTimeoutMs: options.cancelTimeoutMs }),
      // a failover aborts the checkpoints pending (they wait for tasks it restarts) and holds off new ones until they run
      onFailover: (record: FailoverRecord) => {
        checkpoints?.failedOver(record.tasksToRestart);
        options.onFailover?.(record);
      },
      ...(taskMemoryBytes === undefined ? {} : { taskMemoryBytes }),
      ...(spillDir === undefined ? {} : { spillDir }),
      ...(replaceExecutor === undefined ? {} : { replaceExecutor }),
      ...(provider?.rejoinTimeoutMs === undefined ? {} : { executorRejoinTimeoutMs: provider.rejoinTimeoutMs }),
    });
    master = jobMaster;
    session.onPartitionsLost((notice) => jobMaster.partitionsLost(notice));
    if (checkpointOptions !== undefined) {
      checkpoints = new JobCheckpointing({
        jobId: id,
        plan: loaded.plan,
        mode: checkpointOptions.mode === 'exactly-once' ? 'aligned' : 'at-least-once',
        intervalMs: checkpointOptions.intervalMs,
        timeoutMs: checkpointOptions.timeoutMs,
        retained: checkpointOptions.retained,
        tolerableFailures: checkpointOptions.tolerableFailures,
        store: checkpointStore as CheckpointStore,
        storage: checkpointOptions.storage,
        restoreFrom,
        retention: checkpointOptions.retention,
        onFailure: (error) => jobMaster.fail(error),
        logger,
      });
      session.useCheckpointing(checkpoints.forTask);
    }
    const executors = await session.start(jobMaster);
    if (approximate) checkApproximateExecutors(executors);
    await checkpoints?.start();
    if (options.onProgress !== undefined) {
      const onProgress = options.onProgress;
      progressTimer = setInterval(() => onProgress({ elapsedMs: performance.now() - started, ...jobMaster.progress() }), options.progressIntervalMs ?? 250);
    }
    if (opened?.log.publishProgress !== undefined) publishTimer = publishProgressEvery({ log: opened.log, intervalMs: publishIntervalMs, progress: () => ({ elapsedMs: performance.now() - started, ...jobMaster.progress() }), logger });
    if (options.signal !== undefined) {
      const signal = options.signal;
      onAbort = () => jobMaster.abort(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    let outcome;
    jobMasterRan = true;
    try {
      outcome = await jobMaster.run(executors);
    } finally {
      await checkpoints?.stop();
    }
    // the job's end decides what becomes of its checkpoints, as its log's last event says (a signal that came
    // while the job was already failing does not make it cancelled); a run a newer one of the job id took
    // over keeps them (its store is fenced anyway)
    if (checkpoints !== undefined && fence?.isFenced !== true && (outcome.error as { code?: unknown } | undefined)?.code !== 'WEFT_ERR_FENCED') {
      await checkpoints.end(outcome.status === 'succeeded' ? 'succeeded' : outcome.cancelled === true ? 'cancelled' : 'failed');
    }
    const progress = jobMaster.progress();
    if (options.onProgress !== undefined) options.onProgress({ elapsedMs: performance.now() - started, ...progress });
    return {
      jobId: id,
      name: loaded.plan.name,
      status: outcome.status,
      ...(outcome.error === undefined ? {} : { error: outcome.error }),
      durationMs: performance.now() - started,
      parallelism,
      exchangeMode: loaded.plan.exchangeMode,
      // a provider's executors that joined mid-job count too
      executor: { kind, executors: kind === 'workers' ? workers : jobMaster.executorsJoined.length, slots: provider === undefined ? slots : Math.max(0, ...jobMaster.executorsJoined.map((e) => e.slots)) },
      workerPids: session.executors.flatMap((e) => (e.pid === undefined ? [] : [e.pid])),
      topology: decidedTopology(loaded.plan.topology, jobMaster.decisions()),
      failoverStrategy: failover.name,
      restartStrategy: restart.toString(),
      regions: regions.regionCount - countSkippedRegions(regions, (v) => jobMaster.isSkipped(v)),
      tasks: topology.executionVertexCount - topology.executionVertexIds().filter((_, v) => jobMaster.isSkipped(v)).length,
      vertices: summarizeVertices(loaded, outcome.results, jobMaster.decisions()),
      edges: summarizeEdges(loaded, outcome.results),
      recordsRead: progress.recordsRead,
      recordsShuffled: progress.recordsShuffled,
      bytesShuffled: progress.bytesShuffled,
      attempts: outcome.attemptsDeployed,
      failures: outcome.failures,
      restarts: outcome.restarts,
      failovers: outcome.failovers,
      failoverResumes: outcome.failoverResumes ?? [],
      executorsLost: outcome.executorsLost,
      deploymentLatency: outcome.deploymentLatency,
      placement: outcome.placement,
      taskAttempts: Object.fromEntries(topology.executionVertexIds().flatMap((task, v) => (jobMaster.isSkipped(v) ? [] : [[task, outcome.attempts[v] ?? 0]]))),
      partitionsReleasedDuringJob: outcome.partitionsReleasedDuringJob,
      bytesReleasedDuringJob: outcome.bytesReleasedDuringJob,
      outputs: outcome.published.files,
      collected: outcome.published.collected,
      resumed: resume.fallback === undefined && recovery !== undefined,
      tasksReused: recovery === undefined ? 0 : [...recovery.kept.keys()].filter((v) => !recovery.skipped.has(v) && outcome.attempts[v] === recovery.attempts[v]).length,
      ...(resume.fallback === undefined ? {} : { resumeFallback: resume.fallback }),
      ...(opened === undefined ? {} : { epoch: opened.log.epoch }),
      ...(adaptive === undefined ? {} : { adaptive }),
      ...(checkpoints === undefined ? {} : { checkpoints: checkpoints.summary() }),
      ...(outcome.approximateRecoveries === undefined ? {} : { approximateRecoveries: outcome.approximateRecoveries }),
    };
  } catch (error) {
    // a run that failed before its job master ran (no executor took it, a shuffle it cannot reach) says so
    // in its log, or `weft jobs` lists it unfinished forever — unless a newer run took the job over
    if (opened !== undefined && !jobMasterRan && findFencingRefusal(error) === undefined) {
      const { code, message } = describeFailure(error as Error);
      await opened.log.append({ type: 'job-failed', data: { error: { ...(code === undefined ? {} : { code }), message } } }).catch(() => {});
    }
    throw error;
  } finally {
    await checkpoints?.stop().catch(() => {});
    if (progressTimer !== undefined) clearInterval(progressTimer);
    if (publishTimer !== undefined) clearInterval(publishTimer);
    if (onAbort !== undefined) options.signal?.removeEventListener('abort', onAbort);
    await session.close(() => master?.releasesSettled() ?? Promise.resolve());
    await opened?.log.close().catch((error: unknown) => logger.warn({ jobId: id, error: (error as Error).message }, 'closing the job event log failed'));
  }
}

/**
 * Publishes the job's progress to its log every `intervalMs` (one publish at a time: a slow store skips
 * beats); a failure is logged at debug level and never fails the job. The timer does not hold the process.
 */
function publishProgressEvery(request: { log: JobLog; intervalMs: number; progress: () => JobProgress; logger: Logger }): ReturnType<typeof setInterval> {
  const { log, logger } = request;
  let pending = false;
  const timer = setInterval(() => {
    if (pending) return;
    pending = true;
    Promise.resolve()
      .then(() => log.publishProgress?.(request.progress()))
      .catch((error: unknown) => logger.debug({ jobId: log.jobId, error: (error as Error).message }, 'publishing the job progress failed'))
      .finally(() => (pending = false));
  }, request.intervalMs);
  timer.unref();
  return timer;
}
