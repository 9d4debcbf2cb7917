import type { FailoverRecord } from './failover-record.js';
import { wallClockMs } from '../runtime/wall-clock.js';

/** How long one failover kept its failed task from reading (JobResult.failoverResumes, one per failover, in order). */
export interface FailoverResume {
  /** The failed execution vertex, `"<vertexId>#<subtask>"` (FailoverRecord.failedTask). */
  readonly failedTask: string;
  /** Its attempt that failed (FailoverRecord.attemptId). */
  readonly attemptId: string;
  /**
   * From the failover (when the job master decided it) until the failed task's next attempt read its first
   * record — a source: began to run — by that attempt's `reading` report (its executor's wall clock, so
   * across hosts it holds to their clock sync): when the failed key range flows again, whatever the failover
   * restarted around it. Absent when that attempt never read (the job ended, or it failed first).
   */
  readonly resumedAfterMs?: number;
}

/**
 * Pairs each failover with the `reading` report of its failed task's next attempt (restarted attempts send
 * one; TaskEvent `reading`). Wall clock with a fraction of a millisecond (wallClockMs), as those reports
 * carry. Owns nothing to close.
 */
export class FailoverResumes {
  readonly #failovers: { readonly record: FailoverRecord; readonly atMs: number }[] = [];
  /** When each restarted attempt read its first record, by attempt id. */
  readonly #readingAt = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = wallClockMs) {
    this.#now = now;
  }

  /** A failover was decided now. */
  failedOver(record: FailoverRecord): void {
    this.#failovers.push({ record, atMs: this.#now() });
  }

  /** Attempt `attemptId` read its first record at `atMs` (its executor's wall clock). */
  reading(attemptId: string, atMs: number): void {
    if (!this.#readingAt.has(attemptId)) this.#readingAt.set(attemptId, atMs);
  }

  records(): FailoverResume[] {
    return this.#failovers.map(({ record, atMs }) => {
      const readAt = this.#readingAt.get(nextAttemptId(record.attemptId));
      return { failedTask: record.failedTask, attemptId: record.attemptId, ...(readAt === undefined ? {} : { resumedAfterMs: Math.max(0, readAt - atMs) }) };
    });
  }
}

/** `"<vertex>#<i>@<n>"` → `"<vertex>#<i>@<n+1>"`. */
function nextAttemptId(attemptId: string): string {
  const at = attemptId.lastIndexOf('@');
  return `${attemptId.slice(0, at)}@${Number(attemptId.slice(at + 1)) + 1}`;
}
