import { computePipelinedRegions, defaultEdgeId, type JobRunRecord, type JobTopology, type LoggedJobEvent, type PublishedJobProgress } from '@weft/engine';
import { type JobDetailResponse, type JobListItem, UI_API_VERSION, type UiEdge, type UiFailover, type UiRegion, type UiTaskState, type UiVertex } from '../api/ui-api.js';
import { type FoldedJob, foldJobEvents, liveProgress, uiJobStatus } from './fold-job-events.js';

/** What one job's views are made of: its record in `listRuns()`, its events (or why they cannot be read), its published progress. */
export interface JobViewSource {
  readonly run: JobRunRecord;
  /** `readRun(jobId)`; an Error when it threw (a newer format, corruption). */
  readonly events: readonly LoggedJobEvent[] | Error;
  readonly progress: PublishedJobProgress | undefined;
  /** The reader's clock (ms since the epoch), for 'running' and a running job's duration. */
  readonly nowMs: number;
}

const EMPTY = foldJobEvents([]);

function fold(source: JobViewSource): { folded: FoldedJob; problem: string | undefined } {
  if (source.events instanceof Error) return { folded: EMPTY, problem: source.events.message };
  return { folded: foldJobEvents(source.events), problem: source.run.problem };
}

/** Source vertices (no input edge) of a topology: their records in are the job's records read. */
function sources(topology: JobTopology | undefined): Set<string> {
  const targets = new Set((topology?.edges ?? []).map((e) => e.target));
  return new Set((topology?.vertices ?? []).map((v) => v.id).filter((id) => !targets.has(id)));
}

const vertexOf = (task: string): string => task.slice(0, task.lastIndexOf('#'));

/** One row of the jobs list (GET /api/jobs). */
export function toJobListItem(source: JobViewSource): JobListItem {
  const { folded, problem } = fold(source);
  return listItem(source, folded, problem);
}

function listItem(source: JobViewSource, folded: FoldedJob, problem: string | undefined): JobListItem {
  const { run, nowMs } = source;
  const status = source.events instanceof Error ? 'unreadable' : uiJobStatus(run, nowMs);
  const live = liveProgress(status, run, source.progress);
  const startedAtMs = folded.firstAtMs || run.firstAtMs;
  const endedAtMs = status === 'succeeded' || status === 'failed' || status === 'cancelled' ? (folded.endedAtMs ?? run.lastAtMs) : undefined;
  const until = endedAtMs ?? (status === 'running' ? nowMs : run.lastAtMs);
  const read = sources(folded.topology);
  let records = 0;
  let bytes = 0;
  for (const [task, metrics] of folded.finished) {
    if (read.has(vertexOf(task))) records += metrics.recordsIn;
    for (const o of metrics.outputs) bytes += o.bytes;
  }
  return {
    jobId: run.jobId,
    name: folded.name ?? run.jobName,
    status,
    epoch: run.epoch,
    startedAtMs,
    endedAtMs,
    durationMs: Math.max(0, until - startedAtMs),
    tasksTotal: run.tasksTotal ?? live?.tasksTotal,
    tasksFinished: live === undefined ? run.tasksFinished : Math.max(run.tasksFinished, live.tasksFinished),
    records: live === undefined ? records : Math.max(records, live.recordsRead),
    bytes: live === undefined ? bytes : Math.max(bytes, live.bytesShuffled),
    failovers: folded.failovers.length,
    problem,
  };
}

/** The state most of a vertex's subtasks are in ('created' for those no event named yet). */
function majority(states: readonly UiTaskState[]): UiTaskState {
  const counts = new Map<UiTaskState, number>();
  for (const s of states) counts.set(s, (counts.get(s) ?? 0) + 1);
  let best: UiTaskState = 'created';
  let most = 0;
  // ties go to the more eventful state (failed over running over finished …)
  for (const s of ['failed', 'running', 'deployed', 'reset', 'finished', 'created'] as const) {
    const n = counts.get(s) ?? 0;
    if (n > most) [best, most] = [s, n];
  }
  return best;
}

/** The topology with each vertex's logged (decided) parallelism. */
function decidedTopology(folded: FoldedJob): JobTopology | undefined {
  const topology = folded.topology;
  if (topology === undefined) return undefined;
  return { vertices: topology.vertices.map((v) => ({ id: v.id, parallelism: folded.parallelism.get(v.id) ?? v.parallelism })), edges: topology.edges.map((e) => ({ ...e, id: e.id ?? defaultEdgeId(e.source, e.target) })) };
}

/** The job page (GET /api/jobs/:jobId): graph, regions, attempts, failovers, restart strategy, live counters. */
export function toJobDetail(source: JobViewSource): JobDetailResponse {
  const { folded, problem } = fold(source);
  const job = listItem(source, folded, problem);
  const topology = decidedTopology(folded);
  const vertices: UiVertex[] = [];
  const edges: UiEdge[] = [];
  let regions: UiRegion[] = [];
  if (topology !== undefined) {
    const edgeTotals = topology.edges.map(() => ({ records: 0, bytes: 0 }));
    const perVertex = new Map(topology.vertices.map((v) => [v.id, { recordsIn: 0, recordsOut: 0, tasksFinished: 0 }]));
    for (const [task, metrics] of folded.finished) {
      const totals = perVertex.get(vertexOf(task));
      if (totals === undefined) continue;
      totals.recordsIn += metrics.recordsIn;
      totals.tasksFinished++;
      for (const o of metrics.outputs) {
        totals.recordsOut += o.records;
        const edge = edgeTotals[o.edgeIndex];
        if (edge === undefined) continue;
        edge.records += o.records;
        edge.bytes += o.bytes;
      }
    }
    // a running job's live counters (finished and running attempts) over the logged ones (finished only)
    const live = liveProgress(job.status, source.run, source.progress);
    for (const lv of live?.vertices ?? []) {
      const totals = perVertex.get(lv.id);
      if (totals === undefined) continue;
      totals.recordsIn = Math.max(totals.recordsIn, lv.recordsIn);
      totals.recordsOut = Math.max(totals.recordsOut, lv.recordsOut);
    }
    for (const v of topology.vertices) {
      const totals = perVertex.get(v.id) ?? { recordsIn: 0, recordsOut: 0, tasksFinished: 0 };
      const states = Array.from({ length: v.parallelism }, (_, i) => folded.taskStates.get(`${v.id}#${i}`) ?? 'created');
      vertices.push({ id: v.id, name: folded.vertexNames[v.id] ?? v.id, parallelism: v.parallelism, recordsIn: totals.recordsIn, recordsOut: totals.recordsOut, state: majority(states), tasksFinished: totals.tasksFinished });
    }
    topology.edges.forEach((e, i) => edges.push({ id: e.id, source: e.source, target: e.target, distribution: e.distribution, partitionType: e.partitionType, ...(edgeTotals[i] as { records: number; bytes: number }) }));
    regions = computePipelinedRegions(topology).map((tasks, i) => ({ id: `region-${i}`, tasks, vertices: [...new Set(tasks.map(vertexOf))] }));
  }
  const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((x): x is string => typeof x === 'string') : []);
  const failovers: UiFailover[] = folded.failovers.map(({ atMs, data }) => {
    const error = (typeof data['error'] === 'object' && data['error'] !== null ? data['error'] : {}) as Record<string, unknown>;
    return {
      atMs,
      ...(data['global'] === true ? { global: true as const } : {}),
      ...(typeof data['failedTask'] === 'string' ? { failedTask: data['failedTask'] } : {}),
      error: { ...(typeof error['code'] === 'string' ? { code: error['code'] } : {}), message: String(error['message'] ?? '') },
      strategy: String(data['strategy'] ?? ''),
      tasksToRestart: strings(data['tasksToRestart']),
      tasksRunAgain: strings(data['tasksRunAgain']),
      lostPartitions: strings(data['lostPartitions']),
      backoffMs: Number(data['backoffMs'] ?? 0),
    };
  });
  const live = liveProgress(job.status, source.run, source.progress);
  return {
    version: UI_API_VERSION,
    job,
    vertices,
    edges,
    regions,
    attempts: folded.attempts.map((a) => ({ ...a })),
    failovers,
    restartStrategy: folded.restartStrategy === undefined ? undefined : { options: folded.restartStrategy, restarts: failovers.length },
    progress:
      live === undefined
        ? undefined
        : { atMs: live.atMs, elapsedMs: live.elapsedMs, tasksFinished: live.tasksFinished, tasksTotal: live.tasksTotal, tasksRunning: live.tasksRunning, recordsRead: live.recordsRead, recordsShuffled: live.recordsShuffled, bytesShuffled: live.bytesShuffled, failures: live.failures },
    error: folded.error,
  };
}
