import type { JobId, Logger, ShuffleMaster } from '@weft/shuffle-api';
import type { EngineError } from '../errors/engine-error.js';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { RestartBackoffTimeStrategy } from '../restart/restart-backoff-time-strategy.js';
import type { DeploymentBuilder } from './deployment-builder.js';
import { decideFailover, decideGlobalFailover, type FailoverDecision } from './failover-decision.js';
import type { FailoverRecord } from './failover-record.js';
import { lostPartitionsOf } from './failure-cause.js';
import type { PartitionStates } from './partition-states.js';
import type { RegionStates } from './region-states.js';
import type { TaskAttempts } from './task-attempts.js';

/** How long a reset waits for the shuffle master to take a failure report (`reportFailure`) before it goes on. */
const REPORT_FAILURE_TIMEOUT_MS = 10_000;

/**
 * How long the decision on a failure that names a partition unreadable waits for the shuffle master to take
 * its report: time for the master to find out that the storage holding that partition is gone and to name
 * every partition lost with it (JobShuffleContext.partitionsLost), so one failover re-runs all their producers.
 */
export const DEFAULT_LOST_REPORT_WAIT_MS = 1_000;

/** What the restarts need of their job master. */
export interface RegionRestartsHost {
  /** Whether the job still runs: nothing restarts once it is failing or done. */
  isRunning(): boolean;
  failJob(error: EngineError): void;
  /** Cancels the region's tasks (or takes it out of the schedule when none runs). */
  cancelRegion(region: number, reason: string): void;
  /**
   * Gives up the current attempts of every task of `regions` (the scheduler's `resetTasks`: new attempt
   * numbers, their blocking partitions released in PartitionStates) and returns those partitions, whose
   * old descriptors are then released here. Absent only where a test drives the backoffs alone: nothing
   * is reset.
   */
  resetTasks?(regions: readonly number[], reason: string): readonly number[];
  /** The regions were reset: they wait for their inputs again and are scheduled. */
  rescheduled(regions: readonly number[]): void;
}

export interface RegionRestartsOptions {
  readonly jobId: JobId;
  readonly jobName: string;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly restart: RestartBackoffTimeStrategy;
  readonly failover: FailoverStrategy;
  /**
   * Where the reset tasks' old partitions are released, and where every task failure is reported
   * (`reportFailure`, when it has one) before the restarted regions are rescheduled.
   */
  readonly blockingMaster: ShuffleMaster;
  /** Releases during the job: those of a reset task's partitions under way are awaited before it is rescheduled. */
  readonly releases?: { settled(partitions: Iterable<number>): Promise<void> };
  /** Read only, as `attempts` and `partitions`: the scheduler writes them (through `host`). */
  readonly states: RegionStates;
  readonly attempts: TaskAttempts;
  readonly partitions: PartitionStates;
  readonly builder: DeploymentBuilder;
  readonly logger: Logger;
  /** Milliseconds since the job started. */
  readonly elapsedMs: () => number;
  /** The clock backoffs are timed by, in milliseconds (tests inject one with fake timers). @defaultValue performance.now */
  readonly now?: () => number;
  /** Told of each failover as it happens; what it throws is logged. */
  readonly onFailover?: (failover: FailoverRecord) => void;
  /**
   * How long the decision on a task failure that names a partition unreadable (SHF_ERR_PARTITION_NOT_FOUND,
   * SHF_ERR_DATA_CORRUPTED) waits for `blockingMaster.reportFailure` to take it, when the master has one —
   * the master may name more partitions lost meanwhile (JobShuffleContext.partitionsLost). 0: decided at once.
   * @defaultValue DEFAULT_LOST_REPORT_WAIT_MS
   */
  readonly lostReportWaitMs?: number | undefined;
  /** An adaptive job's skipped subtasks: left out of failover records (FailoverDecisionRequest.isSkipped). @defaultValue none */
  readonly isSkipped?: (v: number) => boolean;
  readonly host: RegionRestartsHost;
}

/** The regions one failover restarts, and when: each failover has its own due time. */
interface PendingRestart {
  /** Its regions (a later failover that restarts one of them takes it over). */
  readonly regions: Set<number>;
  /** When the restart strategy's backoff, counted from the failure, ends (`now()` time). */
  readonly dueAtMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The backoff passed: the regions are reset as soon as every one of their tasks stopped. */
  due: boolean;
  /** The reset began (it awaits the release of the old partitions). */
  resetting: boolean;
  /** Why its tasks are reset (the `tasks-reset` event's reason). */
  readonly reason: string;
}

/**
 * The failure path of a job master (Flink's DefaultScheduler restarting tasks): each task failure is
 * decided (decideFailover) — the job fails, or the regions of the tasks to restart are cancelled. Each
 * failover waits for its own restart strategy backoff, counted from the failure (as Flink schedules
 * `restartTasks` `getBackoffTimeMs()` after the failure: the time its tasks take to stop counts toward
 * it), and for every task of its regions to stop — whichever ends later; then its regions' tasks get new
 * attempts, the partitions their old attempts produced are released (so a late commit of an old attempt
 * loses), the shuffle master has taken every failure report so far (`reportFailure`, so the restarted
 * producers are not placed where a task just failed to reach), and the job master reschedules them. A later failure elsewhere gets its own backoff from its
 * own time; a region it restarts that an earlier failover was restarting moves to the later one (Flink's
 * vertex versions: the later restart owns it). A failure inside a region already restarting is part of
 * that restart. Each failover is recorded.
 */
export class RegionRestarts {
  /** Each failover, in order. */
  readonly failovers: FailoverRecord[] = [];
  readonly #options: RegionRestartsOptions;
  readonly #now: () => number;
  /** The pending restart each region cancelled for a restart belongs to, until it is rescheduled. */
  readonly #restartOf = new Map<number, PendingRestart>();
  readonly #pending = new Set<PendingRestart>();
  /** The failure reports to the shuffle master so far, chained in order; a reset awaits them. */
  #reported: Promise<void> = Promise.resolve();
  /** Decisions waiting (for a report, or behind one that waits), chained in failure order. */
  #deciding: Promise<void> = Promise.resolve();
  #waitingDecisions = 0;
  #failures = 0;

  constructor(options: RegionRestartsOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Task attempts that failed so far. */
  get failures(): number {
    return this.#failures;
  }

  /** Whether any restart is under way (its decision waiting, or waiting for its regions to stop, or for its backoff). */
  get anyUnderWay(): boolean {
    return this.#restartOf.size > 0 || this.#pending.size > 0 || this.#waitingDecisions > 0;
  }

  isRestarting(region: number): boolean {
    return this.#restartOf.has(region);
  }

  /**
   * The one place task failures go: restart (failover strategy + restart strategy) or fail the job.
   *
   * Decided at once — unless the failure names a partition unreadable and the shuffle master takes failure
   * reports: then the decision waits for this failure's report (at most `lostReportWaitMs`), as the master
   * may learn from it that the storage holding that partition is gone and name every partition lost with
   * it (partitionsLost), so this one failover re-runs all their producers instead of one failover per
   * partition as each reader finds one. Later failures are decided after it, in order. A failure whose
   * attempt was replaced, or whose region another failover restarts, by the time it is decided is part of
   * that restart.
   */
  onFailure(v: number, error: Error): void {
    const { topology, regions, attempts, host, logger } = this.#options;
    this.#failures++;
    const failedAtMs = this.#now();
    const failedVertex = topology.executionVertexId(v);
    const attempt = attempts.numberOf(v);
    logger.info({ executionVertexId: failedVertex, attempt, error: error.message }, 'task failed');
    const reported = this.#report(error);
    const decide = (): void => {
      if (!host.isRunning() || this.#restartOf.has(regions.regionOf[v] as number) || attempts.numberOf(v) !== attempt) return;
      this.#decided(decideFailover({ ...this.#options, failed: v, error }), failedAtMs, `${failedVertex} failed: ${error.message}`);
    };
    const waitMs = this.#options.lostReportWaitMs ?? DEFAULT_LOST_REPORT_WAIT_MS;
    const waitForReport = reported !== undefined && waitMs > 0 && host.isRunning() && lostPartitionsOf(error, topology).length > 0;
    if (!waitForReport && this.#waitingDecisions === 0) {
      decide();
      return;
    }
    if (waitForReport) logger.debug({ executionVertexId: failedVertex, waitMs }, 'a failure names a partition unreadable: its decision waits for the shuffle master to take its report');
    // the wait counts from the failure, not from the decisions before it
    const taken = waitForReport ? settledWithin(reported, waitMs) : Promise.resolve();
    this.#waitingDecisions++;
    this.#deciding = this.#deciding
      .then(() => taken)
      .then(decide)
      .catch((decideError: unknown) => logger.warn({ executionVertexId: failedVertex, error: (decideError as Error)?.message ?? String(decideError) }, 'deciding a failover failed'))
      .finally(() => {
        this.#waitingDecisions--;
      });
  }

  /**
   * The job master's own failure (its checkpoints failed more times in a row than tolerated): a global
   * failover — every region restarts, as the restart strategy allows (decideGlobalFailover), taking over
   * the restarts under way — or the job fails. Not a task attempt's failure: `failures` does not count it,
   * and the shuffle master is not told of it.
   */
  onGlobalFailure(error: Error): void {
    const failedAtMs = this.#now();
    this.#options.logger.info({ error: error.message }, 'the job master failed: global failover');
    if (!this.#options.host.isRunning()) return;
    this.#decided(decideGlobalFailover({ ...this.#options, error }), failedAtMs, `the job master failed: ${error.message}`);
  }

  /** Fails the job, or cancels the decision's regions and restarts them once its backoff from `failedAtMs` passed. */
  #decided(decision: FailoverDecision, failedAtMs: number, reason: string): void {
    const { regions, host, logger } = this.#options;
    if (!decision.restart) {
      host.failJob(decision.error);
      return;
    }
    this.failovers.push(decision.record);
    this.#announce(decision.record);
    const { backoffMs, failedTask } = decision.record;
    const restart: PendingRestart = { regions: new Set(), dueAtMs: failedAtMs + backoffMs, timer: undefined, due: false, resetting: false, reason };
    for (const u of decision.vertices) restart.regions.add(regions.regionOf[u] as number);
    logger.info({ executionVertexId: failedTask ?? '(global)', regions: [...restart.regions], tasks: decision.vertices.length, backoffMs }, 'restarting regions');
    for (const r of restart.regions) {
      const earlier = this.#restartOf.get(r);
      if (earlier !== undefined) {
        earlier.regions.delete(r);
        if (earlier.regions.size === 0) this.#drop(earlier);
      }
      this.#restartOf.set(r, restart);
      host.cancelRegion(r, failedTask === undefined ? 'region restarts: the job master failed over globally' : `region restarts after ${failedTask} failed`);
    }
    this.#pending.add(restart);
    const due = (): void => {
      restart.timer = undefined;
      restart.due = true;
      this.#maybeReset(restart);
    };
    // no backoff: due once this failure's handling is done, not a timer turn later (a busy loop delays timers);
    // a promise's reaction, not queueMicrotask (which makes an AsyncResource for each call)
    if (backoffMs === 0) void Promise.resolve().then(() => this.#pending.has(restart) && due());
    else restart.timer = setTimeout(due, Math.max(0, restart.dueAtMs - this.#now()));
  }

  /** Resets the restarts whose backoff passed once their regions' tasks stopped (called as tasks stop). */
  maybeRestart(): void {
    for (const restart of this.#pending) if (restart.due) this.#maybeReset(restart);
  }

  /** Cancels the pending backoffs (the job ends). */
  stop(): void {
    for (const restart of this.#pending) if (restart.timer !== undefined) clearTimeout(restart.timer);
    this.#pending.clear();
  }

  /**
   * Hands the failure to the shuffle master (it may exclude a server the task could not reach), after the
   * reports before it; what it rejects with is logged. Resets await the chain, so restarted producers are
   * registered (placed) only once the master heard of every failure before them. Returns the chain up to
   * this report (undefined when the master takes none).
   */
  #report(error: Error): Promise<void> | undefined {
    const { blockingMaster, jobId, logger } = this.#options;
    if (blockingMaster.reportFailure === undefined) return undefined;
    const report = async (): Promise<void> => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), REPORT_FAILURE_TIMEOUT_MS);
      });
      try {
        const taken = blockingMaster.reportFailure?.({ jobId, error });
        if ((await Promise.race([taken, late])) === 'late') logger.warn({ timeoutMs: REPORT_FAILURE_TIMEOUT_MS }, 'the shuffle master took too long to take a failure report: restarting without waiting');
      } catch (reportError) {
        logger.warn({ error: (reportError as Error)?.message ?? String(reportError) }, 'the shuffle master failed to take a failure report');
      } finally {
        clearTimeout(timer);
      }
    };
    this.#reported = this.#reported.then(report);
    return this.#reported;
  }

  #announce(record: FailoverRecord): void {
    const onFailover = this.#options.onFailover;
    if (onFailover === undefined) return;
    try {
      onFailover(record);
    } catch (error) {
      this.#options.logger.warn({ error: (error as Error).message }, 'onFailover threw');
    }
  }

  #drop(restart: PendingRestart): void {
    if (restart.timer !== undefined) clearTimeout(restart.timer);
    restart.timer = undefined;
    this.#pending.delete(restart);
  }

  #maybeReset(restart: PendingRestart): void {
    if (!this.#options.host.isRunning() || restart.resetting || !this.#pending.has(restart)) return;
    for (const r of restart.regions) if ((this.#options.states.active[r] as number) > 0) return;
    restart.resetting = true;
    void this.#reset(restart);
  }

  async #reset(restart: PendingRestart): Promise<void> {
    const { blockingMaster, builder, host, logger } = this.#options;
    const releases: Promise<void>[] = [];
    const outputs = host.resetTasks?.([...restart.regions], restart.reason) ?? [];
    for (const partition of outputs) {
      const old = builder.takeDescriptor(partition);
      if (old !== undefined) releases.push(blockingMaster.releasePartitionExternally(old).catch((error: unknown) => logger.warn({ partitionId: old.partition.partitionId, error: (error as Error).message }, 'releasing a restarted partition failed')));
    }
    // Released during the job, and that release not settled yet: it must not land on the new attempt.
    if (this.#options.releases !== undefined) releases.push(this.#options.releases.settled(outputs));
    await Promise.all(releases);
    await this.#reported;
    if (!host.isRunning() || !this.#pending.has(restart)) return;
    this.#pending.delete(restart);
    // A later failover may have taken some regions over meanwhile: it resets and reschedules those.
    const rescheduled = [...restart.regions];
    for (const r of rescheduled) this.#restartOf.delete(r);
    logger.debug({ regions: rescheduled, dueAtMs: restart.dueAtMs, atMs: this.#now() }, 'restarted regions rescheduled');
    host.rescheduled(rescheduled);
  }
}

/** Resolves once `promise` settled, or after `ms` (whichever is first); never rejects, leaves no timer behind. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref?.(); // the report, or the job's own work, keeps the process alive meanwhile
  });
  try {
    await Promise.race([promise.then(() => undefined, () => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
