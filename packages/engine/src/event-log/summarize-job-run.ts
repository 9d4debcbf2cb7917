import type { JobEventType } from '../job-master/job-events.js';
import type { JobRunRecord, JobRunStatus, LoggedJobEvent } from './job-event-log.js';

/** What a store knows about a run besides its events. */
export interface JobRunLease {
  readonly jobId: string;
  /** Newest epoch, 0 when unknown. */
  readonly epoch: number;
  readonly owner: string | undefined;
  /** When the newest lease was taken, ms since the epoch; 0 when unknown. */
  readonly takenAtMs: number;
  /** When its holder last renewed it (ms since the epoch); undefined when never (or unknown). */
  readonly renewedAtMs?: number | undefined;
}

const TERMINAL: Readonly<Partial<Record<JobEventType, JobRunStatus>>> = {
  'job-finished': 'succeeded',
  'job-failed': 'failed',
  'job-cancelled': 'cancelled',
};

function field(data: unknown, name: string): unknown {
  return typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[name] : undefined;
}

/** The record of a run whose log cannot be read: status 'unreadable', `problem` the error's message. */
export function summarizeUnreadableJobRun(lease: JobRunLease, error: unknown): JobRunRecord {
  return {
    ...summarizeJobRun(lease, []),
    status: 'unreadable',
    problem: error instanceof Error ? error.message : String(error),
  };
}

/**
 * Sums up one run's events (`listRuns()` of every JobEventLog): status from the last terminal event
 * (a later 'job-submitted' — a resume — makes it unfinished again), tasks finished = execution vertices
 * with a 'task-finished' not named by a later 'tasks-reset'. Unknown event types are ignored.
 */
export function summarizeJobRun(lease: JobRunLease, events: readonly LoggedJobEvent[]): JobRunRecord {
  let status: JobRunStatus = 'unfinished';
  let jobName: string | undefined;
  let tasksTotal: number | undefined;
  const finished = new Set<string>();
  /** An adaptive run: each decided vertex's reserved subtasks beyond its decision are not tasks. */
  const reserved = new Map<string, number>();
  const skipped = new Map<string, number>();
  /** Vertices with a 'vertex-initialized' event: fixed ones at submission, adaptive ones once decided. */
  const initialized = new Set<string>();
  for (const event of events) {
    const terminal = TERMINAL[event.type as JobEventType];
    if (terminal !== undefined) status = terminal;
    switch (event.type) {
      case 'job-submitted': {
        status = 'unfinished';
        const name = field(event.data, 'name');
        if (jobName === undefined && typeof name === 'string') jobName = name;
        const total = field(event.data, 'tasksTotal');
        if (typeof total === 'number') tasksTotal = total;
        const topology = field(event.data, 'topology') as { vertices?: { id?: unknown; parallelism?: unknown }[] } | undefined;
        for (const v of topology?.vertices ?? []) if (typeof v.id === 'string' && typeof v.parallelism === 'number') reserved.set(v.id, v.parallelism);
        break;
      }
      case 'vertex-initialized': {
        const id = field(event.data, 'vertexId');
        const p = field(event.data, 'parallelism');
        if (typeof id === 'string') initialized.add(id);
        const size = typeof id === 'string' ? reserved.get(id) : undefined;
        if (field(event.data, 'decided') === true && typeof p === 'number' && size !== undefined) skipped.set(id as string, Math.max(0, size - p));
        break;
      }
      case 'task-finished': {
        const id = field(event.data, 'executionVertexId');
        if (typeof id === 'string') finished.add(id);
        break;
      }
      case 'tasks-reset': {
        const tasks = field(event.data, 'tasks');
        if (Array.isArray(tasks)) for (const id of tasks) if (typeof id === 'string') finished.delete(id);
        break;
      }
    }
  }
  const first = events[0];
  const last = events[events.length - 1];
  // a log with no vertex-initialized at all (an older weft) says nothing about undecided vertices
  const undecided = initialized.size > 0 && [...reserved.keys()].some((id) => !initialized.has(id));
  return {
    jobId: lease.jobId,
    epoch: lease.epoch,
    events: events.length,
    firstAtMs: first?.atMs ?? lease.takenAtMs,
    lastAtMs: last?.atMs ?? lease.takenAtMs,
    lastType: last?.type,
    owner: lease.owner,
    // a renewal older than the lease itself is an earlier epoch's
    leaseRenewedAtMs: lease.takenAtMs > 0 ? Math.max(lease.takenAtMs, lease.renewedAtMs ?? 0) : lease.renewedAtMs,
    jobName,
    tasksTotal: tasksTotal === undefined ? undefined : tasksTotal - [...skipped.values()].reduce((a, b) => a + b, 0),
    ...(undecided && tasksTotal !== undefined ? { tasksTotalIsUpperBound: true } : {}),
    tasksFinished: finished.size,
    status,
    problem: undefined,
  };
}
