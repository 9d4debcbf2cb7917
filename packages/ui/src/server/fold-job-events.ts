import type { JobEventError, JobProgress, JobRunRecord, JobTopology, LoggedJobEvent, PublishedJobProgress, TaskMetrics } from '@weft/engine';
import type { UiAttempt, UiJobStatus, UiTaskState } from '../api/ui-api.js';

/** An unfinished run whose lease was renewed this recently counts as running (its job master renews every second). */
export const RUNNING_LEASE_WINDOW_MS = 5_000;

/** What a job's events say, folded once (the list and the detail page both read it). */
export interface FoldedJob {
  readonly name: string | undefined;
  readonly topology: JobTopology | undefined;
  /** The logged (decided) parallelism of each job vertex. */
  readonly parallelism: ReadonlyMap<string, number>;
  readonly vertexNames: Readonly<Record<string, string>>;
  readonly restartStrategy: unknown;
  /** ms since the epoch of the first event (0 when none). */
  readonly firstAtMs: number;
  /** ms since the epoch of the terminal event, when the run ended. */
  readonly endedAtMs: number | undefined;
  readonly terminal: 'succeeded' | 'failed' | 'cancelled' | undefined;
  readonly error: JobEventError | undefined;
  /** Every attempt in deployment order; times in ms since `firstAtMs`. */
  readonly attempts: readonly UiAttempt[];
  /** The current state of each execution vertex that any event named. */
  readonly taskStates: ReadonlyMap<string, UiTaskState>;
  /** The metrics of each task's finished attempt that no later reset gave up. */
  readonly finished: ReadonlyMap<string, TaskMetrics>;
  readonly failovers: readonly { readonly atMs: number; readonly data: Record<string, unknown> }[];
}

interface MutableAttempt {
  task: string;
  attempt: number;
  executor: string | undefined;
  startMs: number;
  endMs: number | undefined;
  state: UiTaskState;
  epoch: number;
}

const record = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {});

/**
 * Folds a job's logged events (job-master/job-events.ts in @weft/engine) into what the UI shows. Tolerant:
 * unknown event types and missing optional fields (an older weft's `task-deployed` without `executor`) are
 * skipped, never an error. Attempts: `task-deployed` opens one (running), `task-finished` ends it
 * (finished), a `failover` ends its failed task's (failed), `tasks-reset` ends the reset tasks' open ones
 * (reset), a later `job-submitted` (a resume: the earlier job master is gone) ends every open one (reset),
 * and the job's end closes what is still open (failed).
 */
export function foldJobEvents(events: readonly LoggedJobEvent[]): FoldedJob {
  const firstAtMs = events[0]?.atMs ?? 0;
  let name: string | undefined;
  let topology: JobTopology | undefined;
  let vertexNames: Record<string, string> = {};
  let restartStrategy: unknown;
  let endedAtMs: number | undefined;
  let terminal: FoldedJob['terminal'];
  let error: JobEventError | undefined;
  const parallelism = new Map<string, number>();
  const attempts: MutableAttempt[] = [];
  const open = new Map<string, MutableAttempt>();
  const taskStates = new Map<string, UiTaskState>();
  const finished = new Map<string, TaskMetrics>();
  const failovers: { atMs: number; data: Record<string, unknown> }[] = [];
  const end = (task: string, atMs: number, state: UiTaskState): void => {
    const attempt = open.get(task);
    if (attempt === undefined) return;
    attempt.endMs = atMs;
    attempt.state = state;
    open.delete(task);
  };
  const endAll = (atMs: number, state: UiTaskState): void => {
    for (const task of [...open.keys()]) {
      end(task, atMs, state);
      taskStates.set(task, state);
    }
  };
  for (const event of events) {
    const data = record(event.data);
    const at = event.atMs - firstAtMs;
    switch (event.type) {
      case 'job-submitted': {
        endAll(at, 'reset');
        if (name === undefined && typeof data['name'] === 'string') name = data['name'];
        if (topology === undefined && typeof data['topology'] === 'object' && data['topology'] !== null) topology = data['topology'] as JobTopology;
        if (typeof data['vertexNames'] === 'object' && data['vertexNames'] !== null) vertexNames = data['vertexNames'] as Record<string, string>;
        const options = record(data['options']);
        if (options['restartStrategy'] !== undefined) restartStrategy = options['restartStrategy'];
        endedAtMs = undefined;
        terminal = undefined;
        error = undefined;
        break;
      }
      case 'vertex-initialized':
        if (typeof data['vertexId'] === 'string' && typeof data['parallelism'] === 'number') parallelism.set(data['vertexId'], data['parallelism']);
        break;
      case 'task-deployed': {
        const task = String(data['executionVertexId']);
        end(task, at, 'reset');
        const attempt: MutableAttempt = { task, attempt: Number(data['attempt'] ?? 0), executor: typeof data['executor'] === 'string' ? data['executor'] : undefined, startMs: at, endMs: undefined, state: 'running', epoch: event.epoch };
        attempts.push(attempt);
        open.set(task, attempt);
        taskStates.set(task, 'running');
        break;
      }
      case 'task-finished': {
        const task = String(data['executionVertexId']);
        end(task, at, 'finished');
        taskStates.set(task, 'finished');
        const metrics = record(data['metrics']);
        finished.set(task, { recordsIn: Number(metrics['recordsIn'] ?? 0), outputs: Array.isArray(metrics['outputs']) ? (metrics['outputs'] as TaskMetrics['outputs']) : [] });
        break;
      }
      case 'failover': {
        failovers.push({ atMs: at, data });
        // a global failover names no task: its tasks-reset event ends them
        if (typeof data['failedTask'] !== 'string') break;
        end(data['failedTask'], at, 'failed');
        taskStates.set(data['failedTask'], 'failed');
        break;
      }
      case 'tasks-reset':
        for (const task of Array.isArray(data['tasks']) ? (data['tasks'] as unknown[]) : []) {
          if (typeof task !== 'string') continue;
          end(task, at, 'reset');
          finished.delete(task);
          // a task never deployed loses nothing by a reset: it stays created
          if (taskStates.has(task)) taskStates.set(task, 'reset');
        }
        break;
      case 'job-finished':
      case 'job-failed':
      case 'job-cancelled':
        endAll(at, 'failed');
        endedAtMs = event.atMs;
        terminal = event.type === 'job-finished' ? 'succeeded' : event.type === 'job-failed' ? 'failed' : 'cancelled';
        if (event.type === 'job-failed') {
          const e = record(data['error']);
          error = { ...(typeof e['code'] === 'string' ? { code: e['code'] } : {}), message: String(e['message'] ?? 'the job failed') };
        } else if (event.type === 'job-cancelled') error = { message: String(data['reason'] ?? 'the job was cancelled') };
        break;
      default:
        break; // partitions-released, sink-published, and types of a newer weft
    }
  }
  return { name, topology, parallelism, vertexNames, restartStrategy, firstAtMs, endedAtMs, terminal, error, attempts, taskStates, finished, failovers };
}

/** The UI status of a run: its log's, with an unfinished run 'running' while its lease is fresh. */
export function uiJobStatus(run: JobRunRecord, nowMs: number): UiJobStatus {
  if (run.status !== 'unfinished') return run.status;
  return run.leaseRenewedAtMs !== undefined && nowMs - run.leaseRenewedAtMs <= RUNNING_LEASE_WINDOW_MS ? 'running' : 'unfinished';
}

/** The published progress, when it is the newest epoch's and the job still runs. */
export function liveProgress(status: UiJobStatus, run: JobRunRecord, progress: PublishedJobProgress | undefined): (JobProgress & { atMs: number }) | undefined {
  if (status !== 'running' || progress === undefined || progress.epoch !== run.epoch) return undefined;
  return { ...progress.progress, atMs: progress.atMs };
}
