// A large generated job in the UI API's JSON, for the render benchmark and the canvas-timeline test:
// `vertices` vertices in a chain with a few skip edges, each of parallelism `parallelism` (20 × 500 = 10,000
// tasks by default), pipelined pairs sharing regions, one attempt per task spread over `executors` executors in
// waves, plus `failovers` failovers each restarting one region's tasks (their first attempts failed / reset).
import { type JobDetailResponse, UI_API_VERSION, type UiAttempt, type UiEdge, type UiFailover, type UiRegion, type UiVertex } from '../../src/index.js';

export interface GenerateJobOptions {
  /** @defaultValue 20 */
  readonly vertices?: number;
  /** @defaultValue 500 */
  readonly parallelism?: number;
  /** @defaultValue 16 */
  readonly executors?: number;
  /** @defaultValue 8 */
  readonly failovers?: number;
  /** @defaultValue 'generated-10k' */
  readonly jobId?: string;
}

export function generateJob(options: GenerateJobOptions = {}): JobDetailResponse {
  const vertexCount = options.vertices ?? 20;
  const parallelism = options.parallelism ?? 500;
  const executorCount = options.executors ?? 16;
  const failoverCount = options.failovers ?? 8;
  const jobId = options.jobId ?? 'generated-10k';
  const slotsPerExecutor = 4;
  const taskMs = 40;

  const vertices: UiVertex[] = [];
  const edges: UiEdge[] = [];
  for (let v = 0; v < vertexCount; v++) {
    vertices.push({ id: `v${v}`, name: `stage ${v}`, parallelism, recordsIn: 1_000_000, recordsOut: 1_000_000, state: 'finished', tasksFinished: parallelism });
    if (v > 0) {
      // Every other edge pipelined (POINTWISE): pairs (v0,v1), (v2,v3), … share regions.
      const pipelined = v % 2 === 1;
      edges.push({ id: `v${v - 1}->v${v}`, source: `v${v - 1}`, target: `v${v}`, distribution: pipelined ? 'POINTWISE' : 'ALL_TO_ALL', partitionType: pipelined ? 'PIPELINED' : 'BLOCKING', records: 1_000_000, bytes: 64 * 2 ** 20 });
    }
    if (v >= 3 && v % 4 === 0) edges.push({ id: `v${v - 3}->v${v}`, source: `v${v - 3}`, target: `v${v}`, distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', records: 10_000, bytes: 2 ** 20 });
  }
  const regions: UiRegion[] = [];
  for (let v = 0; v < vertexCount; v += 2) {
    const pair = v + 1 < vertexCount ? [`v${v}`, `v${v + 1}`] : [`v${v}`];
    for (let i = 0; i < parallelism; i++) regions.push({ id: `r${v}-${i}`, tasks: pair.map((id) => `${id}#${i}`), vertices: pair });
  }

  const attempts: UiAttempt[] = [];
  const slots = executorCount * slotsPerExecutor;
  let n = 0;
  for (let v = 0; v < vertexCount; v++) {
    for (let i = 0; i < parallelism; i++, n++) {
      const wave = Math.floor(n / slots);
      const executor = `executor-${String(n % executorCount).padStart(2, '0')}`;
      const startMs = wave * taskMs + (n % 7);
      attempts.push({ task: `v${v}#${i}`, attempt: 0, executor, startMs, endMs: startMs + taskMs - 5, state: 'finished', epoch: 1 });
    }
  }
  const failovers: UiFailover[] = [];
  for (let f = 0; f < failoverCount; f++) {
    const v = (f * 2) % vertexCount;
    const i = (f * 37) % parallelism;
    const region = regions.find((r) => r.id === `r${v}-${i}`) as UiRegion;
    const failed = attempts.find((a) => a.task === region.tasks[region.tasks.length - 1]) as UiAttempt;
    const atMs = failed.startMs + 10;
    for (const task of region.tasks) {
      const index = attempts.findIndex((a) => a.task === task && a.attempt === 0);
      const first = attempts[index] as UiAttempt;
      attempts[index] = { ...first, endMs: atMs, state: task === failed.task ? 'failed' : 'reset' };
      attempts.push({ ...first, attempt: 1, startMs: atMs + 20, endMs: atMs + 20 + taskMs, state: 'finished' });
    }
    failovers.push({
      atMs,
      failedTask: failed.task,
      error: { code: 'WEFT_ERR_TASK_EXECUTOR_LOST', message: `injected fault: kill-worker ${failed.task}@100` },
      strategy: 'region',
      tasksToRestart: region.tasks,
      tasksRunAgain: region.tasks,
      lostPartitions: [],
      backoffMs: 10,
    });
  }
  const durationMs = Math.max(...attempts.map((a) => a.endMs ?? 0));
  const tasks = vertexCount * parallelism;
  return {
    version: UI_API_VERSION,
    job: { jobId, name: 'generated', status: 'succeeded', epoch: 1, startedAtMs: Date.UTC(2026, 11, 1), endedAtMs: Date.UTC(2026, 11, 1) + durationMs, durationMs, tasksTotal: tasks, tasksFinished: tasks, records: 1_000_000, bytes: 64 * 2 ** 20 * (vertexCount - 1), failovers: failoverCount, problem: undefined },
    vertices,
    edges,
    regions,
    attempts,
    failovers,
    restartStrategy: { options: { strategy: 'fixed-delay', attempts: 10, delayMs: 10 }, restarts: failoverCount },
    progress: undefined,
    error: undefined,
  };
}
