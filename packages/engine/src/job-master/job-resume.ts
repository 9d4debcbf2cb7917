import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { JobId, Logger, ShuffleMaster, StoredPartition } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { JobEventLog, JobLog, LoggedJobEvent } from '../event-log/job-event-log.js';
import { type ReplayedRun, replayJobLog } from '../event-log/replay-job-log.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { JobEventListener, VertexInitializedData } from './job-events.js';
import type { JobFence } from './job-fence.js';
import { fileSystemOf } from './sink-publisher.js';
import type { JobSubmission } from './job-scheduler-options.js';
import { planRecovery, type RecoveryPlan } from './recovery-plan.js';

/** The job's log, opened under a new lease, and what its history says. */
export interface OpenedJobLog {
  readonly log: JobLog;
  /** The earlier runs, replayed; undefined for a fresh run (an unknown id) or when the history cannot be replayed. */
  readonly replayed: ReplayedRun | undefined;
  /** Why an existing history cannot be replayed (the run restarts cleanly); undefined otherwise. */
  readonly problem: string | undefined;
  /** The highest attempt number any logged event names (-1: none): a clean restart numbers attempts above it. */
  readonly highestAttempt: number;
}

/**
 * Opens `jobId`'s log (takes its lease: every registration then carries its epoch), after checking
 * that the run may go on (docs/DESIGN.md contract 7): a finished run is refused, and so is one submitted
 * with another job module (content hash) or other job arguments — `WEFT_ERR_RESUME_REFUSED` naming
 * the difference, checked on a read that takes no lease, so a refused command fences nobody. A log of
 * a newer format version is refused by the store (`WEFT_ERR_EVENT_LOG`). A history that cannot be
 * replayed otherwise is not refused: `problem` says why, and the run starts over.
 */
export async function openJobLog(request: { eventLog: JobEventLog; jobId: JobId; submission: JobSubmission }): Promise<OpenedJobLog> {
  const { eventLog, jobId, submission } = request;
  refuseIfCannotResume(jobId, await eventLog.readRun(jobId), submission);
  const log = await eventLog.open({ jobId, owner: `${hostname()}:${process.pid}` });
  try {
    refuseIfCannotResume(jobId, log.history, submission); // another command may have written in between
    let replayed: ReplayedRun | undefined;
    let problem: string | undefined;
    try {
      replayed = replayJobLog(jobId, log.history);
    } catch (error) {
      problem = (error as Error).message;
    }
    return { log, replayed, problem, highestAttempt: highestLoggedAttempt(log.history) };
  } catch (error) {
    await log.close().catch(() => {});
    throw error;
  }
}

function refuseIfCannotResume(jobId: string, history: readonly LoggedJobEvent[], submission: JobSubmission): void {
  const first = history.find((e) => e.type === 'job-submitted');
  if (first === undefined) return;
  const refuse = (field: string, message: string): never => {
    throw new EngineError('WEFT_ERR_RESUME_REFUSED', `cannot resume job ${jobId}: ${message}`, { context: { jobId, field } });
  };
  const last = [...history].reverse().find((e) => e.type === 'job-submitted' || e.type === 'job-finished');
  if (last?.type === 'job-finished') refuse('jobId', `its run already finished (${new Date(last.atMs).toISOString()}); choose another --job-id`);
  const logged = first.data as { jobModule?: unknown; jobModuleHash?: unknown; args?: unknown };
  if (logged.jobModuleHash !== submission.jobModuleHash) {
    refuse('jobModule', `the job module differs: the run was submitted with ${String(logged.jobModule)} (sha256 ${String(logged.jobModuleHash)}), this is ${String(submission.jobModule)} (sha256 ${String(submission.jobModuleHash)})`);
  }
  if (JSON.stringify(logged.args) !== JSON.stringify(submission.args)) {
    refuse('args', `the job arguments differ: the run was submitted with ${JSON.stringify(logged.args)}, these are ${JSON.stringify(submission.args)}`);
  }
}

function highestLoggedAttempt(history: readonly LoggedJobEvent[]): number {
  let highest = -1;
  for (const e of history) {
    const attempt = (e.data as { attempt?: unknown } | null)?.attempt;
    if (typeof attempt === 'number' && Number.isInteger(attempt)) highest = Math.max(highest, attempt);
  }
  return highest;
}

/**
 * A listener that appends every event to `log` (and tells `other` first, when given): a `task-finished`
 * counts only once its append is durable (the scheduler waits on the promise); an append that fails —
 * the store failing past its retries, or fenced by a newer epoch — fails the job (`WEFT_ERR_EVENT_LOG`).
 */
export function jobLogListener(log: JobLog, other?: JobEventListener): JobEventListener {
  return {
    onJobEvent(event) {
      const told = other?.onJobEvent(event);
      const appended = log.append({ type: event.type, data: event.data }).then(() => undefined);
      return told === undefined ? appended : Promise.all([Promise.resolve(told), appended]).then(() => undefined);
    },
  };
}

export interface ResumeRequest {
  readonly jobId: JobId;
  readonly opened: OpenedJobLog;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly failover: FailoverStrategy;
  /** Started, the job registered (JobSession.startShuffle). */
  readonly blockingMaster: ShuffleMaster;
  readonly sinkTempDirs: readonly string[];
  /** Where `<scheme>://` sinks live. @defaultValue [] */
  readonly fileSystems?: readonly ExternalFileSystem[];
  readonly logger: Logger;
  /** The run's fence: once a release is refused as fenced, nothing more is released or removed (a newer run owns the job). */
  readonly fence?: JobFence | undefined;
  /** An adaptive job: whether a vertex is decided at run time (RecoveryPlanRequest.isAdaptive). @defaultValue none is */
  readonly isAdaptive?: ((vertexId: string) => boolean) | undefined;
}

/** How the run starts: the recovery plan (always one when there was a history), and why it is a clean restart, if it is. */
export interface ResumeDecision {
  readonly plan: RecoveryPlan | undefined;
  /** Set when an earlier run existed but could not be resumed: the run restarted cleanly, for this reason. */
  readonly fallback: string | undefined;
}

/**
 * Plans a resumed run from the replayed history and the ShuffleMaster's listing (planRecovery), then
 * collects the dead run's leftovers: listed partitions no kept task owns are released, and the sinks'
 * per-attempt files of attempts not kept are removed. When the replay or the listing fails, the run
 * restarts cleanly instead (every task runs, with attempts above every logged one; every listed
 * partition is garbage) — never a wrong answer. A release refused as fenced (a newer run took the job
 * over meanwhile) stops the collection at once — no more releases, no sink file removed — and rejects
 * with the fence's WEFT_ERR_FENCED.
 */
export async function prepareResume(request: ResumeRequest): Promise<ResumeDecision> {
  const { opened, jobId, blockingMaster, logger } = request;
  if (opened.replayed === undefined && opened.problem === undefined) return { plan: undefined, fallback: undefined };
  let listing: readonly StoredPartition[] = [];
  let plan: RecoveryPlan | undefined;
  let fallback = opened.problem;
  try {
    listing = await blockingMaster.listPartitions(jobId);
  } catch (error) {
    fallback ??= `the shuffle could not list the partitions that exist: ${(error as Error).message}`;
  }
  if (fallback === undefined && opened.replayed !== undefined) {
    try {
      const sinkFiles = await existingSinkFiles(opened.replayed, request.sinkTempDirs, request.fileSystems ?? []);
      plan = planRecovery({ ...request, replayed: opened.replayed, listing, sinkFileExists: (file) => sinkFiles.has(file) });
    } catch (error) {
      fallback = (error as Error).message;
    }
  }
  if (plan === undefined) plan = cleanRestart(request.topology, opened.highestAttempt, listing, opened.replayed?.decisions);
  if (fallback !== undefined) logger.warn({ jobId, reason: fallback }, 'the earlier run cannot be resumed: the job restarts cleanly');
  const fence = request.fence;
  for (const stored of plan.garbage) {
    try {
      await blockingMaster.releasePartitionExternally(stored.descriptor);
    } catch (error) {
      if (fence?.observe(error) === true) throw fence.error;
      logger.warn({ jobId, partitionId: stored.descriptor.partition.partitionId, error: (error as Error).message }, 'could not release a partition of the earlier run');
    }
  }
  if (fence?.isFenced === true) throw fence.error;
  await removeUnkeptSinkFiles(request.sinkTempDirs, plan, request.fileSystems ?? []);
  return { plan, fallback };
}

/** Every task runs again; logged decisions are still reused (a vertex is never decided twice in one job's log). */
function cleanRestart(topology: ExecutionTopology, highestAttempt: number, listing: readonly StoredPartition[], decisions: ReadonlyMap<string, VertexInitializedData> | undefined): RecoveryPlan {
  return {
    kept: new Map(),
    attempts: new Int32Array(topology.executionVertexCount).fill(highestAttempt + 1),
    descriptors: new Map(),
    reset: [],
    garbage: listing,
    missing: [],
    publishedSinks: new Map(),
    decisions: [...(decisions?.values() ?? [])],
    skipped: new Set(),
  };
}

/**
 * The part files of the logged finished sink attempts that still exist: local ones checked one by one,
 * external ones found by one listing of each sink's temporary directory (an unlistable one counts as
 * empty, so those attempts run again).
 */
async function existingSinkFiles(replayed: ReplayedRun, tempDirs: readonly string[], fileSystems: readonly ExternalFileSystem[]): Promise<Set<string>> {
  const existing = new Set<string>();
  for (const dir of tempDirs) {
    const external = fileSystemOf(dir, fileSystems);
    if (external !== undefined) for (const url of await external.listUnder(dir).catch(() => [])) existing.add(url);
  }
  for (const logged of replayed.finished.values()) {
    for (const s of logged.sinks ?? []) if (s.kind === 'text-file' && fileSystemOf(s.file, fileSystems) === undefined && existsSync(s.file)) existing.add(s.file);
  }
  return existing;
}

/** Removes the files in the sinks' attempt directories (local or external) that no kept attempt wrote. */
async function removeUnkeptSinkFiles(tempDirs: readonly string[], plan: RecoveryPlan, fileSystems: readonly ExternalFileSystem[]): Promise<void> {
  const keep = new Set<string>();
  for (const result of plan.kept.values()) for (const s of result.sinks) if (s.kind === 'text-file') keep.add(s.file);
  for (const dir of tempDirs) {
    const external = fileSystemOf(dir, fileSystems);
    if (external !== undefined) {
      const urls = await external.listUnder(dir).catch(() => []);
      await Promise.all(urls.filter((url) => !keep.has(url)).map((url) => external.delete(url).catch(() => {})));
      continue;
    }
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    await Promise.all(names.map((name) => join(dir, name)).filter((file) => !keep.has(file)).map((file) => rm(file, { recursive: true, force: true }).catch(() => {})));
  }
}
