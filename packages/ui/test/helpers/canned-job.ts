// A hand-built job in the UI API's JSON (src/api/ui-api.ts), for the app's tests before a real `weft run --ui`
// serves them: word count over four vertices, two pipelined regions spanning read+tokenize, one failover of
// tokenize#1 (an injected worker kill) that reset its region, running with live progress.
import {
  type ClusterResponse,
  type JobDetailResponse,
  type JobListItem,
  type JobListResponse,
  UI_API_VERSION,
  type UiAttempt,
} from '../../src/index.js';

export const CANNED_JOB_ID = 'wc-2026-12-01';
export const CANNED_FAILOVER_CAUSE = 'injected fault: kill-worker tokenize#1@500 (worker process exited with SIGKILL)';
export const CANNED_FAILOVER_CODE = 'WEFT_ERR_TASK_EXECUTOR_LOST';
const STARTED = Date.UTC(2026, 11, 1, 12, 0, 0);

export interface CannedProgress {
  readonly elapsedMs: number;
  readonly recordsRead: number;
  readonly tasksFinished: number;
}

function listItem(progress: CannedProgress, status: JobListItem['status'] = 'running'): JobListItem {
  return {
    jobId: CANNED_JOB_ID,
    name: 'word-count',
    status,
    epoch: 1,
    startedAtMs: STARTED,
    endedAtMs: status === 'running' ? undefined : STARTED + progress.elapsedMs,
    durationMs: progress.elapsedMs,
    tasksTotal: 7,
    tasksFinished: progress.tasksFinished,
    records: progress.recordsRead,
    bytes: 48_000,
    failovers: 1,
    problem: undefined,
  };
}

const attempts: UiAttempt[] = [
  { task: 'read#0', attempt: 0, executor: 'worker-1', startMs: 10, endMs: 900, state: 'finished', epoch: 1 },
  { task: 'tokenize#0', attempt: 0, executor: 'worker-1', startMs: 12, endMs: 950, state: 'finished', epoch: 1 },
  { task: 'read#1', attempt: 0, executor: 'worker-2', startMs: 11, endMs: 400, state: 'reset', epoch: 1 },
  { task: 'tokenize#1', attempt: 0, executor: 'worker-2', startMs: 13, endMs: 400, state: 'failed', epoch: 1 },
  { task: 'read#1', attempt: 1, executor: 'worker-3', startMs: 420, endMs: 1300, state: 'finished', epoch: 1 },
  { task: 'tokenize#1', attempt: 1, executor: 'worker-3', startMs: 421, endMs: 1350, state: 'finished', epoch: 1 },
  { task: 'count#0', attempt: 0, executor: 'worker-1', startMs: 1360, endMs: undefined, state: 'running', epoch: 1 },
  { task: 'count#1', attempt: 0, executor: 'worker-3', startMs: 1362, endMs: undefined, state: 'running', epoch: 1 },
];

export function cannedJobDetail(progress: CannedProgress = { elapsedMs: 1500, recordsRead: 1200, tasksFinished: 4 }): JobDetailResponse {
  return {
    version: UI_API_VERSION,
    job: listItem(progress),
    vertices: [
      { id: 'read', name: 'read lines', parallelism: 2, recordsIn: progress.recordsRead, recordsOut: progress.recordsRead, state: 'finished', tasksFinished: 2 },
      { id: 'tokenize', name: 'tokenize + combine', parallelism: 2, recordsIn: progress.recordsRead, recordsOut: 3400, state: 'finished', tasksFinished: 2 },
      { id: 'count', name: 'count', parallelism: 2, recordsIn: 3400, recordsOut: 0, state: 'running', tasksFinished: 0 },
      { id: 'write', name: 'write output', parallelism: 1, recordsIn: 0, recordsOut: 0, state: 'created', tasksFinished: 0 },
    ],
    edges: [
      { id: 'read->tokenize', source: 'read', target: 'tokenize', distribution: 'POINTWISE', partitionType: 'PIPELINED', records: progress.recordsRead, bytes: 96_000 },
      { id: 'tokenize->count', source: 'tokenize', target: 'count', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', records: 3400, bytes: 48_000 },
      { id: 'count->write', source: 'count', target: 'write', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', records: 0, bytes: 0 },
    ],
    regions: [
      { id: 'r0', tasks: ['read#0', 'tokenize#0'], vertices: ['read', 'tokenize'] },
      { id: 'r1', tasks: ['read#1', 'tokenize#1'], vertices: ['read', 'tokenize'] },
      { id: 'r2', tasks: ['count#0'], vertices: ['count'] },
      { id: 'r3', tasks: ['count#1'], vertices: ['count'] },
      { id: 'r4', tasks: ['write#0'], vertices: ['write'] },
    ],
    attempts,
    failovers: [
      {
        atMs: 400,
        failedTask: 'tokenize#1',
        error: { code: CANNED_FAILOVER_CODE, message: CANNED_FAILOVER_CAUSE },
        strategy: 'region',
        tasksToRestart: ['read#1', 'tokenize#1'],
        tasksRunAgain: ['read#1', 'tokenize#1'],
        lostPartitions: [],
        backoffMs: 10,
      },
    ],
    restartStrategy: { options: { strategy: 'fixed-delay', attempts: 3, delayMs: 10 }, restarts: 1 },
    progress: {
      atMs: STARTED + progress.elapsedMs,
      elapsedMs: progress.elapsedMs,
      tasksFinished: progress.tasksFinished,
      tasksTotal: 7,
      tasksRunning: 2,
      recordsRead: progress.recordsRead,
      recordsShuffled: 3400,
      bytesShuffled: 48_000,
      failures: 1,
    },
    error: undefined,
  };
}

export const CANNED_FINISHED_JOB_ID = 'wc-2026-11-30';
export const CANNED_UNREADABLE_PROBLEM = 'log format version 3 not supported (this weft reads 1)';

/** The canned job once it succeeded: every attempt ended, no live progress. */
export function cannedFinishedJobDetail(jobId = CANNED_FINISHED_JOB_ID): JobDetailResponse {
  const running = cannedJobDetail({ elapsedMs: 2200, recordsRead: 5000, tasksFinished: 7 });
  return {
    ...running,
    job: { ...running.job, jobId, status: 'succeeded', endedAtMs: running.job.startedAtMs + 2200, tasksFinished: 7 },
    vertices: running.vertices.map((v) => ({ ...v, state: 'finished', tasksFinished: v.parallelism })),
    attempts: [
      ...running.attempts.map((a) => (a.endMs === undefined ? { ...a, endMs: 2000, state: 'finished' as const } : a)),
      { task: 'write#0', attempt: 0, executor: 'worker-1', startMs: 2010, endMs: 2190, state: 'finished', epoch: 1 },
    ],
    progress: undefined,
  };
}

export function cannedJobList(): JobListResponse {
  const finished: JobListItem = {
    ...cannedFinishedJobDetail().job,
    startedAtMs: STARTED - 86_400_000,
    endedAtMs: STARTED - 86_400_000 + 2200,
  };
  const unreadable: JobListItem = {
    ...listItem({ elapsedMs: 0, recordsRead: 0, tasksFinished: 0 }, 'unreadable'),
    jobId: 'from-a-newer-weft',
    name: undefined,
    startedAtMs: STARTED - 2 * 86_400_000,
    tasksTotal: undefined,
    failovers: 0,
    problem: CANNED_UNREADABLE_PROBLEM,
  };
  return { version: UI_API_VERSION, jobs: [cannedJobDetail().job, finished, unreadable] };
}

export function cannedCluster(available = false): ClusterResponse {
  if (!available) return { version: UI_API_VERSION, available: false, executors: [], shuffleServers: [] };
  return {
    version: UI_API_VERSION,
    available: true,
    executors: [
      { id: 'te-1', address: 'http://127.0.0.2:7001', slots: 4, freeSlots: 2, load: 0.5, version: '0.1.0', state: 'registered' },
      { id: 'te-2', address: 'http://127.0.0.3:7001', slots: 4, freeSlots: 4, load: 0, version: '0.1.0', state: 'registered' },
    ],
    shuffleServers: [{ id: 'ss-1', url: 'http://127.0.0.4:7100', freeDiskBytes: 50 * 2 ** 30, state: 'up' }],
  };
}
