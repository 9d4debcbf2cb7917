/**
 * The JSON the UI server serves and the single-page app reads (`GET /api/...`). Plain JSON, versioned by
 * `UI_API_VERSION`: the app refuses a response of another version with a clear message.
 *
 *   GET /api/jobs                 → JobListResponse
 *   GET /api/jobs/:jobId          → JobDetailResponse           (404 ApiError `WEFT_UI_ERR_UNKNOWN_JOB`)
 *   GET /api/jobs/:jobId/stream   → text/event-stream: `event: job` with a JobDetailResponse each time it
 *                                   changed (at most once a second), `event: end` once the job ended
 *                                   (then the stream closes); `event: problem` with `{ message }` when a read
 *                                   of the log failed (it is tried again a second later)
 *   GET /api/cluster              → ClusterResponse (`available: false` when the UI has no cluster Redis)
 *   GET /metrics                  → Prometheus text (the job master's, or the UI server's own)
 *
 * Everything here is derived from the job event log (`JobEventLog.readRun`) and the live progress snapshot
 * the job master publishes; never from the engine's internals.
 */
export const UI_API_VERSION = 1;

export type UiJobStatus = 'running' | 'succeeded' | 'failed' | 'cancelled' | 'unfinished' | 'unreadable';

/** One row of the jobs list. */
export interface JobListItem {
  readonly jobId: string;
  readonly name: string | undefined;
  /** 'running' when the log is unfinished and its lease was renewed recently; 'unfinished' when it is not. */
  readonly status: UiJobStatus;
  readonly epoch: number;
  readonly startedAtMs: number;
  /** Undefined while the job runs. */
  readonly endedAtMs: number | undefined;
  readonly durationMs: number;
  readonly tasksTotal: number | undefined;
  readonly tasksFinished: number;
  /** Records read by sources / framed bytes written to exchanges (finished attempts; live counters while running). */
  readonly records: number;
  readonly bytes: number;
  readonly failovers: number;
  /** Why the log cannot be read (status 'unreadable'), or a newer log format's message. */
  readonly problem: string | undefined;
}

export interface JobListResponse {
  readonly version: typeof UI_API_VERSION;
  readonly jobs: readonly JobListItem[];
}

export type UiTaskState = 'created' | 'deployed' | 'running' | 'finished' | 'failed' | 'reset';

export interface UiVertex {
  readonly id: string;
  /** The chained operators' names, when known (else the id). */
  readonly name: string;
  readonly parallelism: number;
  readonly recordsIn: number;
  readonly recordsOut: number;
  /** The state most of its subtasks are in (for the node's colour). */
  readonly state: UiTaskState;
  readonly tasksFinished: number;
}

export interface UiEdge {
  readonly id: string;
  readonly source: string;
  readonly target: string;
  readonly distribution: string;
  readonly partitionType: string;
  readonly records: number;
  readonly bytes: number;
}

/** A pipelined region: the execution vertices that are scheduled and restarted together. */
export interface UiRegion {
  readonly id: string;
  readonly tasks: readonly string[];
  /** The job vertices it touches (to outline them in the DAG). */
  readonly vertices: readonly string[];
}

/** One task attempt, for the timeline (times in ms since the job's first event). */
export interface UiAttempt {
  /** `"<vertexId>#<subtask>"`. */
  readonly task: string;
  readonly attempt: number;
  /** The executor it ran on, when the log says (else undefined: drawn in one lane). */
  readonly executor: string | undefined;
  readonly startMs: number;
  /** Undefined while it runs. */
  readonly endMs: number | undefined;
  readonly state: UiTaskState;
  readonly epoch: number;
}

export interface UiFailover {
  readonly atMs: number;
  /** True for a global failover: the job master failed (its checkpoints, more times in a row than tolerated) and every task restarted. */
  readonly global?: true;
  /** The task whose failure it was, `"<vertexId>#<subtask>"`; absent for a global failover. */
  readonly failedTask?: string;
  readonly error: { readonly code?: string; readonly message: string };
  readonly strategy: string;
  readonly tasksToRestart: readonly string[];
  readonly tasksRunAgain: readonly string[];
  readonly lostPartitions: readonly string[];
  readonly backoffMs: number;
}

export interface UiRestartStrategy {
  /** The options as the job was submitted with (e.g. `{ strategy: 'fixed-delay', attempts: 3, delayMs: 1000 }`). */
  readonly options: unknown;
  /** Failovers so far. */
  readonly restarts: number;
}

/** The live counters of a running job (the job master's JobProgress), undefined once it ended. */
export interface UiProgress {
  readonly atMs: number;
  readonly elapsedMs: number;
  readonly tasksFinished: number;
  readonly tasksTotal: number;
  readonly tasksRunning: number;
  readonly recordsRead: number;
  readonly recordsShuffled: number;
  readonly bytesShuffled: number;
  readonly failures: number;
}

export interface JobDetailResponse {
  readonly version: typeof UI_API_VERSION;
  readonly job: JobListItem;
  readonly vertices: readonly UiVertex[];
  readonly edges: readonly UiEdge[];
  readonly regions: readonly UiRegion[];
  readonly attempts: readonly UiAttempt[];
  readonly failovers: readonly UiFailover[];
  readonly restartStrategy: UiRestartStrategy | undefined;
  readonly progress: UiProgress | undefined;
  /** The job's error when it failed. */
  readonly error: { readonly code?: string; readonly message: string } | undefined;
}

export interface UiExecutor {
  readonly id: string;
  readonly address: string;
  readonly slots: number;
  readonly freeSlots: number;
  readonly load: number;
  readonly version: string;
  readonly state: string;
}

export interface UiShuffleServer {
  readonly id: string;
  readonly url: string;
  readonly freeDiskBytes: number | undefined;
  readonly state: string;
}

export interface ClusterResponse {
  readonly version: typeof UI_API_VERSION;
  readonly available: boolean;
  readonly executors: readonly UiExecutor[];
  readonly shuffleServers: readonly UiShuffleServer[];
}

/** Every non-2xx JSON answer. */
export interface ApiError {
  readonly version: typeof UI_API_VERSION;
  readonly error: { readonly code: string; readonly message: string };
}
