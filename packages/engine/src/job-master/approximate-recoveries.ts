import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import type { TaskProgress, TaskResult } from '../runtime/task-events.js';
import type { TaskAttempts } from './task-attempts.js';
import { wallClockMs } from '../runtime/wall-clock.js';

/** One single-task recovery of an approximate job (JobResult.approximateRecoveries). */
export interface ApproximateRecoveryRecord {
  /** The failed task, `"<vertex>#<i>"`. */
  readonly task: string;
  /** The attempt that failed. */
  readonly failedAttempt: number;
  /**
   * From the failure (as the job master saw it) to the moment its new attempt read its first record again,
   * by that attempt's own clock (its `reading` report: a source, when it runs again; a task whose producers
   * had all finished, so nothing was left for it: when it finished) — wall clocks, so across hosts it holds
   * to their clock sync; absent when that never happened (the job ended first).
   */
  readonly durationMs?: number;
  /**
   * Records upstream tasks dropped for it meanwhile (written to its subpartitions while no attempt was
   * attached, or whose tail was skipped for the new attempt): the subpartitions' counters. What a
   * subpartition's upstream backup served the new attempt again (`approximateReplayBytes`: it asked to resume
   * from its restored checkpoint's positions) was not dropped and is not counted.
   */
  readonly recordsDroppedUpstream: number;
  /** Partial records its consumers' gates discarded when its attempt went away: the gates' counters. */
  readonly partialRecordsDiscardedDownstream: number;
  /** Records the failed attempt had processed (its state since the checkpoint it restored from, or all of it without one, is gone). */
  readonly recordsProcessedByFailedAttempt: number;
  /** Records its gates had handed the failed attempt that it did not process (TaskMetrics.recordsUnprocessed). */
  readonly recordsUnprocessedByFailedAttempt: number;
  /**
   * Records the task's state will never see, counted by its new attempt (TaskMetrics.recordsLostOnInputs):
   * on each approximate input channel, from how far the checkpoint it restored had read (0 without one) to
   * the record the channel resumed at — what the failed attempt read since that checkpoint, what died in
   * flight with it (across processes too), what upstream dropped, the record whose tail was skipped. A
   * keyed count of this task therefore ends exactly this many records short. 0 until the new attempt reads
   * again (and for a task without inputs: a source restored from a checkpoint replays instead). A producer
   * that had finished serves the new attempt too (its subpartitions wait for it: the replay, or without a
   * log the end at once, the gap counted); one whose task executor was lost since restarts with it, from
   * the checkpoint. Absent until the new attempt read again or finished (the job ended first).
   */
  readonly recordsLost?: number;
  /**
   * The other tasks its failover restarted (its consumers, transitively, as DESIGN.md's failover of approximate
   * edges has it, and the producers of partitions lost with a task executor), each with the records its new
   * attempt's state will never see (recordsLost, counted the same way; 0 until it reads again) — but not a
   * task whose own failure opened a recovery for that same new attempt (it is reported there), nor one an
   * earlier recovery already lists as that attempt. Absent when it restarted alone.
   */
  readonly restartedWith?: readonly { readonly task: string; readonly recordsLost: number }[];
}

/** What the tracker reads: live task counters and the results of finished tasks. */
export interface ApproximateCountersSource {
  progress(): readonly TaskProgress[];
  readonly results: readonly (TaskResult | undefined)[];
}

interface OpenRecovery {
  readonly v: number;
  readonly task: string;
  readonly failedAttempt: number;
  /** Wall clock (wallClockMs) when the job master saw the failure. */
  readonly failedAtMs: number;
  readonly start: Counters;
  readonly processed: number;
  readonly unprocessed: number;
  durationMs: number | undefined;
  latest: Counters;
  /** The other tasks its failover restarted, and the attempt each restarted as. */
  consumers: readonly { readonly task: string; readonly attemptId: string }[];
}

interface Counters {
  readonly dropped: number;
  readonly partial: number;
}

/**
 * Follows the single-task recoveries of an approximate job (ALL_EDGES_PIPELINED_APPROXIMATE) for the run
 * summary: each failure of a task opens one; it is resumed once the task's new attempt reports that it
 * reads again (`resumed`, from its `reading` task event; `finished`, when it finished first). Its
 * losses are counted by the shuffle, not estimated: the records upstream subpartitions dropped for the
 * task (OutputMetrics.recordsLostByConsumer) and the partial records downstream gates discarded from it
 * (TaskMetrics.partialRecordsDiscardedByProducer), each as the rise of the sum over all tasks' counters
 * since the task's previous recovery (nothing is lost while an attempt is attached; the first losses come
 * before the failure's report does) — read again when the task resumes and when the run ends, the highest
 * reading kept.
 * An attempt that failed or was cancelled (a consumer restarted with the failed task) counts with the last
 * counters its executor reported with it (TaskEvent.metrics; absent, its counts are lost: a lower bound).
 *
 * Owns no timer: it is driven by the scheduler's task events.
 */
export class ApproximateRecoveries {
  readonly #topology: ExecutionTopology;
  readonly #source: ApproximateCountersSource;
  /** Wall clock: the `reading` reports' `atMs` are executors' wallClockMs(). */
  readonly #now: () => number;
  readonly #records: OpenRecovery[] = [];
  /** The last counters of attempts that failed or were cancelled (their live ones are gone), by attempt id. */
  readonly #stopped = new Map<string, TaskMetrics>();

  constructor(request: { readonly topology: ExecutionTopology; readonly source: ApproximateCountersSource; readonly now?: () => number }) {
    this.#topology = request.topology;
    this.#source = request.source;
    this.#now = request.now ?? wallClockMs;
  }

  /** An attempt failed or was cancelled: its last counters (TaskEvent.metrics) keep counting. */
  stopped(attemptId: string, metrics: TaskMetrics): void {
    this.#stopped.set(attemptId, metrics);
  }

  /** Execution vertex `v`'s attempt `attempt` failed: a recovery opens. */
  failed(v: number, attempt: number, metrics: TaskMetrics | undefined): void {
    const task = this.#topology.executionVertexId(v);
    // nothing is lost for or from a task while its attempt is attached: what was counted since its last
    // recovery resumed (or since the start) is this failure's — even what was counted before its report arrived
    const previous = this.#records.findLast((r) => r.task === task);
    const start = previous?.latest ?? { dropped: 0, partial: 0 };
    this.#records.push({ v, task, failedAttempt: attempt, failedAtMs: this.#now(), start, latest: start, durationMs: undefined, processed: metrics?.recordsIn ?? 0, unprocessed: metrics?.recordsUnprocessed ?? 0, consumers: [] });
  }

  /**
   * The failover of `failedTask`'s open recovery restarts `consumers` with it (other tasks than it: its
   * consumers, producers of lost partitions), each as attempt `attemptId`: their losses are reported with it.
   */
  restartedWith(failedTask: string, consumers: readonly { readonly task: string; readonly attemptId: string }[]): void {
    const open = this.#records.findLast((r) => r.task === failedTask);
    if (open === undefined || open.durationMs !== undefined) return;
    open.consumers = consumers;
  }

  /**
   * Execution vertex `v`'s current attempt read its first record at `atMs` (its executor's wall clock; its
   * `reading` report): the newest open recovery of `v` ends, its counters read now.
   */
  resumed(v: number, atMs: number): void {
    this.#resume(v, atMs);
  }

  /** Execution vertex `v`'s current attempt finished (before it read anything: nothing was left for it). */
  finished(v: number): void {
    this.#resume(v, this.#now());
  }

  #resume(v: number, atMs: number): void {
    const open = this.#records.findLast((r) => r.v === v);
    if (open === undefined || open.durationMs !== undefined) return;
    open.durationMs = Math.max(0, atMs - open.failedAtMs);
    open.latest = max(open.latest, this.#read(open.task));
  }

  /**
   * Execution vertex `v`'s attempt `attempt` (`attemptId`) failed or was lost with its executor: its last
   * counters are kept, and a recovery opens while the job runs (a failing job recovers nothing).
   */
  lost(v: number, attemptId: string, attempt: number, metrics: TaskMetrics | undefined, jobRunning: boolean): void {
    if (metrics !== undefined) this.stopped(attemptId, metrics);
    if (jobRunning) this.failed(v, attempt, metrics);
  }

  /** The recoveries so far, counters read once more now. */
  records(): ApproximateRecoveryRecord[] {
    this.#refresh();
    // a task restarted with another's recovery that failed itself too (a lost worker's tasks) reports its new attempt once: in its own
    const own = new Set(this.#records.map((r) => `${r.task}@${r.failedAttempt + 1}`));
    // two failovers under way together (a lost worker's tasks) may both restart a consumer as the same attempt: the first reports it
    const listed = new Set<string>();
    return this.#records.map((r) => {
      const consumers = r.consumers.filter((c) => !own.has(c.attemptId) && !listed.has(c.attemptId));
      for (const c of consumers) listed.add(c.attemptId);
      const lost = this.#lostBy(`${r.task}@${r.failedAttempt + 1}`);
      return {
        task: r.task,
        failedAttempt: r.failedAttempt,
        ...(r.durationMs === undefined ? {} : { durationMs: r.durationMs }),
        recordsDroppedUpstream: r.latest.dropped - r.start.dropped,
        partialRecordsDiscardedDownstream: r.latest.partial - r.start.partial,
        recordsProcessedByFailedAttempt: r.processed,
        recordsUnprocessedByFailedAttempt: r.unprocessed,
        ...(lost > 0 || r.durationMs !== undefined ? { recordsLost: lost } : {}),
        ...(consumers.length === 0 ? {} : { restartedWith: consumers.map((c) => ({ task: c.task, recordsLost: this.#lostBy(c.attemptId) })) }),
      };
    });
  }

  /** The job ended: the counters are read a last time; `records()` still answers. Idempotent. */
  stop(): void {
    this.#refresh();
  }

  /** Reads each task's newest recovery again (an earlier one ended with its resume: the next failure starts from it). */
  #refresh(): void {
    // a task's recoveries are in the order of its failures: its newest is its last (one pass, not one per pair)
    const newest = new Set<string>();
    for (let i = this.#records.length - 1; i >= 0; i--) {
      const r = this.#records[i] as OpenRecovery;
      if (newest.has(r.task)) continue;
      newest.add(r.task);
      r.latest = max(r.latest, this.#read(r.task));
    }
  }

  /** What attempt `attemptId` counted lost on its inputs (live, finished, or as last reported when it stopped). */
  #lostBy(attemptId: string): number {
    let lost = 0;
    for (const p of this.#source.progress()) if (p.attemptId === attemptId) lost = Math.max(lost, p.metrics.recordsLostOnInputs ?? 0);
    for (const result of this.#source.results) if (result?.attemptId === attemptId) lost = Math.max(lost, result.metrics.recordsLostOnInputs ?? 0);
    lost = Math.max(lost, this.#stopped.get(attemptId)?.recordsLostOnInputs ?? 0);
    return lost;
  }

  /** The sums, over every live and finished task, of what was lost for and from `task`. */
  #read(task: string): Counters {
    let dropped = 0;
    let partial = 0;
    const add = (metrics: TaskMetrics): void => {
      for (const output of metrics.outputs) dropped += output.recordsLostByConsumer?.[task] ?? 0;
      partial += metrics.partialRecordsDiscardedByProducer?.[task] ?? 0;
    };
    const live = new Set<string>();
    for (const p of this.#source.progress()) {
      live.add(p.attemptId);
      add(p.metrics);
    }
    for (const result of this.#source.results) if (result !== undefined && !live.has(result.attemptId)) add(result.metrics);
    for (const [attemptId, metrics] of this.#stopped) if (!live.has(attemptId)) add(metrics);
    return { dropped, partial };
  }
}

function max(a: Counters, b: Counters): Counters {
  return { dropped: Math.max(a.dropped, b.dropped), partial: Math.max(a.partial, b.partial) };
}

/**
 * The recoveries tracker of a job with a PIPELINED_APPROXIMATE edge (undefined for others), reading the
 * executors' live counters and the finished attempts' results.
 */
export function approximateRecoveriesOf(request: { readonly topology: ExecutionTopology; readonly slots: { progress(): readonly TaskProgress[] }; readonly attempts: TaskAttempts }): ApproximateRecoveries | undefined {
  const { topology, slots, attempts } = request;
  if (!topology.edges.some((e) => e.approximate)) return undefined;
  return new ApproximateRecoveries({
    topology,
    source: {
      progress: () => slots.progress(),
      get results() {
        return attempts.results;
      },
    },
  });
}
