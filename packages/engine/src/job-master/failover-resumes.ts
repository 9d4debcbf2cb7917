import type { FailoverRecord } from './failover-record.js';
import { wallClockMs } from '../runtime/wall-clock.js';

/** How long one failover kept its tasks from reading (JobResult.failoverResumes, one per failover, in order). */
export interface FailoverResume {
  /** True for a global failover (FailoverRecord.global): no task failed, so no `failedTask`, `attemptId` or `resumedAfterMs`. */
  readonly global?: true;
  /** The failed execution vertex, `"<vertexId>#<subtask>"` (FailoverRecord.failedTask). */
  readonly failedTask?: string;
  /** Its attempt that failed (FailoverRecord.attemptId). */
  readonly attemptId?: string;
  /**
   * From the failover (when the job master decided it) until the failed task's next attempt read its first
   * record — a source: began to run — by that attempt's `reading` report (its executor's wall clock, so
   * across hosts it holds to their clock sync): when the failed key range flows again, whatever the failover
   * restarted around it. Absent when that attempt never read (the job ended, or it failed first), and for a
   * global failover.
   */
  readonly resumedAfterMs?: number;
  /** How many tasks the failover restarted (FailoverRecord.tasksToRestart: 1 for a single-task recovery, every task for a whole-job restart). */
  readonly tasksRestarted: number;
  /**
   * From the failover until the last of its restarted tasks' next attempts read its first record (its
   * `reading` report, as `resumedAfterMs`) or finished without one (nothing was left for it: when the job
   * master had its `finished` report): when every path through what the failover restarted flows again —
   * the job's whole output, not only the failed key range. For a single-task recovery it is
   * `resumedAfterMs` (or the finish). Absent while any of them has not (the job ended, or one failed first).
   */
  readonly allResumedAfterMs?: number;
  /** The restarted task that resumed last, `"<vertexId>#<subtask>"` (with `allResumedAfterMs`). */
  readonly lastResumedTask?: string;
}

/**
 * Pairs each failover with the `reading` reports of its restarted tasks' next attempts (restarted attempts
 * send one; TaskEvent `reading`), or their `finished` reports when they finished without reading. Wall
 * clock with a fraction of a millisecond (wallClockMs), as those reports carry. Owns nothing to close.
 */
export class FailoverResumes {
  readonly #failovers: { readonly record: FailoverRecord; readonly atMs: number; readonly next: readonly string[] }[] = [];
  /** When each restarted attempt read its first record, by attempt id. */
  readonly #readingAt = new Map<string, number>();
  /** When an awaited attempt finished without a `reading` report first, by attempt id. */
  readonly #finishedAt = new Map<string, number>();
  /** The next attempts some failover waits for that have neither read nor finished yet. */
  readonly #awaited = new Set<string>();
  readonly #now: () => number;

  constructor(now: () => number = wallClockMs) {
    this.#now = now;
  }

  /**
   * A failover was decided now. `restartedAttemptIds`: the current attempts of its `tasksToRestart`, which
   * it gives up (`"<vertex>#<i>@<n>"`; their next attempts, `@<n+1>`, are what it waits for).
   */
  failedOver(record: FailoverRecord, restartedAttemptIds: readonly string[]): void {
    const next = restartedAttemptIds.map(nextAttemptId);
    for (const id of next) this.#awaited.add(id);
    this.#failovers.push({ record, atMs: this.#now(), next });
  }

  /** Attempt `attemptId` read its first record at `atMs` (its executor's wall clock). */
  reading(attemptId: string, atMs: number): void {
    if (!this.#readingAt.has(attemptId)) this.#readingAt.set(attemptId, atMs);
    this.#awaited.delete(attemptId);
  }

  /** Attempt `attemptId` finished now: where it had not read, that is when it resumed (nothing was left for it). */
  finished(attemptId: string): void {
    if (!this.#awaited.delete(attemptId)) return;
    this.#finishedAt.set(attemptId, this.#now());
  }

  /**
   * The attempts the failovers so far wait for that have neither read nor finished yet, in no particular
   * order: some may never (they failed, or a later reset gave them up) — the caller knows which are current.
   */
  unresolved(): string[] {
    return [...this.#awaited];
  }

  records(): FailoverResume[] {
    return this.#failovers.map(({ record, atMs, next }) => {
      const { attemptId, failedTask } = record;
      const readAt = attemptId === undefined ? undefined : this.#readingAt.get(nextAttemptId(attemptId));
      return {
        ...(record.global === true ? { global: true as const } : {}),
        ...(failedTask === undefined ? {} : { failedTask }),
        ...(attemptId === undefined ? {} : { attemptId }),
        ...(readAt === undefined ? {} : { resumedAfterMs: Math.max(0, readAt - atMs) }),
        tasksRestarted: next.length,
        ...this.#allResumed(next, atMs),
      };
    });
  }

  /** The last of `next` to resume, and when, from the failover at `atMs`; nothing while one has not. */
  #allResumed(next: readonly string[], atMs: number): { allResumedAfterMs?: number; lastResumedTask?: string } {
    let last: { id: string; at: number } | undefined;
    for (const id of next) {
      const at = this.#readingAt.get(id) ?? this.#finishedAt.get(id);
      if (at === undefined) return {};
      if (last === undefined || at > last.at) last = { id, at };
    }
    if (last === undefined) return {};
    return { allResumedAfterMs: Math.max(0, last.at - atMs), lastResumedTask: last.id.slice(0, last.id.lastIndexOf('@')) };
  }
}

/** `"<vertex>#<i>@<n>"` → `"<vertex>#<i>@<n+1>"`. */
function nextAttemptId(attemptId: string): string {
  const at = attemptId.lastIndexOf('@');
  return `${attemptId.slice(0, at)}@${Number(attemptId.slice(at + 1)) + 1}`;
}
