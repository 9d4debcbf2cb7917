import { EngineError } from '../errors/engine-error.js';
import type { SinkOutput } from '../operators/stream-operator.js';
import type { TaskMetrics } from '../runtime/task-deployment.js';
import type { JobEventOf, VertexInitializedData } from '../job-master/job-events.js';
import { JOB_EVENT_FORMAT_VERSION, type LoggedJobEvent } from './job-event-log.js';

/** What an earlier run's `task-finished` says of one task that still counts as finished. */
export interface ReplayedTask {
  readonly attempt: number;
  readonly partitions: readonly { readonly partitionId: string; readonly bytes?: number }[];
  readonly metrics: TaskMetrics;
  /** What its sinks wrote (absent in events of a weft that did not log them: such a sink task runs again). */
  readonly sinks: readonly SinkOutput[] | undefined;
  readonly durationMs: number;
}

/** A job's history, replayed (docs/DESIGN.md, JobMaster failover; Flink FLIP-383). */
export interface ReplayedRun {
  /** The first `job-submitted` (every later one must agree with it). */
  readonly submitted: JobEventOf<'job-submitted'>['data'];
  /** The logged parallelism of each job vertex (never re-decided). */
  readonly parallelism: ReadonlyMap<string, number>;
  /** The decisions of an adaptive run's vertices (`vertex-initialized` with `decided`), by vertex id: reused, never re-decided. */
  readonly decisions: ReadonlyMap<string, VertexInitializedData>;
  /** Tasks finished by a `task-finished` no later `tasks-reset` names, by execution vertex id. */
  readonly finished: ReadonlyMap<string, ReplayedTask>;
  /** The highest attempt number any event names, by execution vertex id. */
  readonly highestAttempt: ReadonlyMap<string, number>;
  /** Sinks an earlier run published (`sink-published`): they stay published. */
  readonly publishedSinks: ReadonlyMap<string, string>;
  /** The type of the last terminal event (`job-finished`, `job-failed`, `job-cancelled`) after the last `job-submitted`; undefined while unfinished. */
  readonly terminal: 'job-finished' | 'job-failed' | 'job-cancelled' | undefined;
}

/**
 * Replays a job's logged history: `task-finished` keeps a task finished unless a later `tasks-reset`
 * names it; `vertex-initialized` gives the decided parallelism; the highest attempt of every task is kept
 * so new attempts are numbered above it. Returns undefined for an empty history (an unknown job id).
 * Throws `WEFT_ERR_EVENT_LOG` (with `context.problem`) for a history it cannot replay: no `job-submitted`
 * first, events of a newer format version, a later `job-submitted` or `vertex-initialized` that disagrees.
 */
export function replayJobLog(jobId: string, history: readonly LoggedJobEvent[]): ReplayedRun | undefined {
  if (history.length === 0) return undefined;
  const bad = (problem: string): EngineError => new EngineError('WEFT_ERR_EVENT_LOG', `the event log of job ${jobId} cannot be replayed: ${problem}`, { context: { jobId, problem } });
  let submitted: ReplayedRun['submitted'] | undefined;
  const parallelism = new Map<string, number>();
  const decisions = new Map<string, VertexInitializedData>();
  const finished = new Map<string, ReplayedTask>();
  const highestAttempt = new Map<string, number>();
  const publishedSinks = new Map<string, string>();
  let terminal: ReplayedRun['terminal'];
  const seen = (task: string, attempt: number): void => {
    if (!Number.isInteger(attempt) || attempt < 0) throw bad(`event names attempt ${String(attempt)} of ${task}`);
    highestAttempt.set(task, Math.max(attempt, highestAttempt.get(task) ?? 0));
  };
  for (const event of history) {
    if (event.v > JOB_EVENT_FORMAT_VERSION) throw bad(`event ${event.seq} has format version ${event.v}, newer than this weft's ${JOB_EVENT_FORMAT_VERSION}`);
    const data = (event.data ?? {}) as Record<string, unknown>;
    if (submitted === undefined && event.type !== 'job-submitted') throw bad(`its first event is ${event.type}, not job-submitted`);
    switch (event.type) {
      case 'job-submitted': {
        const next = data as unknown as ReplayedRun['submitted'];
        if (submitted === undefined) submitted = next;
        else if (next.jobModuleHash !== submitted.jobModuleHash || JSON.stringify(next.args) !== JSON.stringify(submitted.args)) throw bad(`event ${event.seq} submits another job module or other arguments`);
        terminal = undefined;
        break;
      }
      case 'vertex-initialized': {
        const vertexId = String(data['vertexId']);
        const p = Number(data['parallelism']);
        const before = parallelism.get(vertexId);
        if (before !== undefined && before !== p) throw bad(`vertex ${vertexId} was initialized with parallelism ${before}, then ${p}`);
        parallelism.set(vertexId, p);
        if (data['decided'] === true) decisions.set(vertexId, data as unknown as VertexInitializedData);
        break;
      }
      case 'task-deployed':
        seen(String(data['executionVertexId']), Number(data['attempt']));
        break;
      case 'task-finished': {
        const d = data as unknown as JobEventOf<'task-finished'>['data'] & { sinks?: SinkOutput[]; durationMs?: number };
        seen(d.executionVertexId, d.attempt);
        finished.set(d.executionVertexId, { attempt: d.attempt, partitions: d.partitions ?? [], metrics: d.metrics, sinks: d.sinks, durationMs: d.durationMs ?? 0 });
        break;
      }
      case 'tasks-reset':
        for (const task of (data['tasks'] as string[] | undefined) ?? []) finished.delete(task);
        break;
      case 'sink-published':
        publishedSinks.set(String(data['sink']), String(data['path']));
        break;
      case 'job-finished':
      case 'job-failed':
      case 'job-cancelled':
        terminal = event.type;
        break;
      default:
        break; // failover, partitions-released, and types a replay does not need
    }
  }
  return { submitted: submitted as ReplayedRun['submitted'], parallelism, decisions, finished, highestAttempt, publishedSinks, terminal };
}
