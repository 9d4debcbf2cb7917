import type { ShuffleDescriptor, StoredPartition } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { ReplayedRun } from '../event-log/replay-job-log.js';
import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import type { FailoverStrategy } from '../failover/failover-strategy.js';
import type { SinkOutput } from '../operators/stream-operator.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { TaskResult } from '../runtime/task-events.js';
import type { VertexInitializedData } from './job-events.js';
import { blockingOutputsOf } from './partition-states.js';

export interface RecoveryPlanRequest {
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly failover: FailoverStrategy;
  readonly replayed: ReplayedRun;
  /** What the ShuffleMaster's `listPartitions(jobId)` answered: the committed partitions that exist. */
  readonly listing: readonly StoredPartition[];
  /** Whether a finished text-sink attempt's part file still exists. */
  readonly sinkFileExists: (file: string) => boolean;
  /** An adaptive job: whether a job vertex's parallelism is decided at run time (its logged decision is reused). @defaultValue none is */
  readonly isAdaptive?: (vertexId: string) => boolean;
}

/** How a resumed run starts: what it keeps of the earlier runs and what it runs again. */
export interface RecoveryPlan {
  /** Tasks kept finished (ExecutionTopology numbering), with their logged result. */
  readonly kept: ReadonlyMap<number, TaskResult>;
  /** The attempt number each task starts with: a kept task's finished one; for the others one above every logged one. */
  readonly attempts: Int32Array;
  /** Descriptors of the kept tasks' partitions the listing found (partition index → descriptor). */
  readonly descriptors: ReadonlyMap<number, ShuffleDescriptor>;
  /** Tasks an earlier run logged finished that run again (they get a `tasks-reset`), ascending. */
  readonly reset: readonly number[];
  /** Listed partitions no kept task owns: the dead run's garbage, to release. */
  readonly garbage: readonly StoredPartition[];
  /** Required partitions the listing lacked (their producers were reset through the failover strategy). */
  readonly missing: readonly string[];
  /** Sinks an earlier run published: they stay published. */
  readonly publishedSinks: ReadonlyMap<string, string>;
  /** The logged decisions of adaptive vertices (restored, never decided again). */
  readonly decisions: readonly VertexInitializedData[];
  /** Reserved subtasks beyond a logged decision: finished without running (kept, unless their region reruns). */
  readonly skipped: ReadonlySet<number>;
}

/**
 * Reconciles a replayed history with the partitions that exist (docs/DESIGN.md, JobMaster failover):
 * a task counts as finished when its `task-finished` stands and, for a text sink, its part file exists
 * (or its sink was published); a pipelined region with an unfinished task runs again whole (its
 * pipelined data is gone). Then, for each blocking result partition: producer not kept → released;
 * some consumer runs again → it must exist with the kept attempt, else its producer is reset through the
 * failover strategy (its region and the consumer regions), repeatedly until nothing changes; all
 * consumers kept → kept if found. Pure: reads its inputs only.
 *
 * Throws `WEFT_ERR_EVENT_LOG` (`context.problem`) when the history does not fit the job (an unknown
 * execution vertex or partition): the caller restarts the job cleanly instead.
 */
export function planRecovery(request: RecoveryPlanRequest): RecoveryPlan {
  const { topology, regions, failover, replayed, listing, sinkFileExists } = request;
  const n = topology.executionVertexCount;
  const bad = (problem: string): EngineError => new EngineError('WEFT_ERR_EVENT_LOG', `the event log does not fit the job: ${problem}`, { context: { problem } });
  const isAdaptive = request.isAdaptive ?? (() => false);
  const skipped = new Set<number>();
  for (const [vertexId, p] of replayed.parallelism) {
    const vertex = topology.vertex(vertexId);
    if (vertex === undefined) throw bad(`it initialized vertex ${vertexId}, which the job does not have`);
    if (isAdaptive(vertexId)) {
      const decision = replayed.decisions.get(vertexId);
      if (decision === undefined || !Number.isInteger(p) || p < 1 || p > vertex.parallelism) throw bad(`vertex ${vertexId} was initialized with parallelism ${p}, the job now decides it at run time (at most ${vertex.parallelism})`);
      const inputs = decision.inputs ?? [];
      if (inputs.length !== vertex.inputs.length || inputs.some((input, i) => input.edgeId !== topology.edges[vertex.inputs[i] as number]?.id || input.subtasks?.length !== p)) {
        throw bad(`the logged input ranges of vertex ${vertexId} do not match its inputs`);
      }
      for (let i = p; i < vertex.parallelism; i++) skipped.add(vertex.firstExecutionVertex + i);
    } else if (vertex.parallelism !== p) throw bad(`vertex ${vertexId} was initialized with parallelism ${p}, the job now plans ${vertex.parallelism}`);
  }
  const attempts = new Int32Array(n);
  for (const [task, attempt] of replayed.highestAttempt) {
    const v = topology.indexOfExecutionVertex(task);
    if (v < 0) throw bad(`it names task ${task}, which the job does not have`);
    attempts[v] = attempt + 1;
  }
  const finished = new Map<number, TaskResult>();
  const loggedFinished: number[] = [];
  for (const [task, logged] of replayed.finished) {
    const v = topology.indexOfExecutionVertex(task);
    if (v < 0) throw bad(`it names task ${task}, which the job does not have`);
    loggedFinished.push(v);
    if (logged.sinks === undefined) continue;
    const sinks: readonly SinkOutput[] = logged.sinks;
    const outputsThere = sinks.every((s) => s.kind !== 'text-file' || replayed.publishedSinks.has(s.sink) || sinkFileExists(s.file));
    if (!outputsThere) continue;
    finished.set(v, { attemptId: `${task}@${logged.attempt}`, durationMs: logged.durationMs, metrics: logged.metrics, sinks });
  }
  // skipped subtasks never ran: they finish again at once, with nothing to keep
  for (const v of skipped) finished.set(v, { attemptId: `${topology.executionVertexId(v)}@${attempts[v] as number}`, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] });
  const listed = new Map<number, StoredPartition>();
  for (const stored of listing) {
    const p = topology.indexOfResultPartition(stored.descriptor.partition.partitionId);
    if (p >= 0) listed.set(p, stored);
  }
  const producerOf = (p: number): number => topology.producerOfPartition(p);
  /** The listed copy of partition `p` when it is the one its finished producer's attempt committed. */
  const foundFor = (p: number): StoredPartition | undefined => {
    const stored = listed.get(p);
    const result = finished.get(producerOf(p));
    return stored !== undefined && result !== undefined && stored.descriptor.producer.attempt === attemptOfResult(result) ? stored : undefined;
  };
  // regions that run again: every one with a task not finished
  const rerun = new Uint8Array(regions.regionCount);
  const rerunRegion = (r: number): boolean => {
    if (rerun[r] === 1) return false;
    rerun[r] = 1;
    return true;
  };
  for (let v = 0; v < n; v++) if (!finished.has(v)) rerunRegion(regions.regionOf[v] as number);
  const missing = new Set<string>();
  for (let changed = true; changed; ) {
    changed = false;
    for (let p = 0; p < topology.partitionCount; p++) {
      const edge = topology.edgeOfPartition(p);
      if (edge.mustBePipelined || edge.approximate) continue;
      const producer = producerOf(p);
      if (skipped.has(producer) || rerun[regions.regionOf[producer] as number] === 1) continue;
      if (!consumersOf(topology, edge, p).some((c) => rerun[regions.regionOf[c] as number] === 1)) continue;
      if (foundFor(p) !== undefined) continue;
      const partitionId = topology.resultPartitionId(p);
      missing.add(partitionId);
      for (const v of failover.verticesToRestart({ failedVertex: topology.executionVertexId(producer), lostPartitions: [partitionId] })) {
        if (rerunRegion(regions.regionOf[v] as number)) changed = true;
      }
    }
  }
  const kept = new Map<number, TaskResult>();
  const reset: number[] = [];
  for (let v = 0; v < n; v++) {
    const result = finished.get(v);
    if (result === undefined || rerun[regions.regionOf[v] as number] === 1) continue;
    kept.set(v, result);
    attempts[v] = attemptOfResult(result);
  }
  // every logged finish that no longer counts (its region runs again, or its sink's part file is gone)
  for (const v of loggedFinished.sort((x, y) => x - y)) if (!kept.has(v) && !skipped.has(v)) reset.push(v);
  const descriptors = new Map<number, ShuffleDescriptor>();
  for (const v of kept.keys()) {
    for (const p of blockingOutputsOf(topology, v)) {
      const stored = foundFor(p);
      if (stored !== undefined) descriptors.set(p, stored.descriptor);
    }
  }
  const garbage = listing.filter((stored) => {
    const p = topology.indexOfResultPartition(stored.descriptor.partition.partitionId);
    return p < 0 || descriptors.get(p) !== stored.descriptor;
  });
  return { kept, attempts, descriptors, reset, garbage, missing: [...missing].sort(), publishedSinks: replayed.publishedSinks, decisions: [...replayed.decisions.values()], skipped };
}

function attemptOfResult(result: TaskResult): number {
  return Number(result.attemptId.slice(result.attemptId.lastIndexOf('@') + 1));
}

/** The execution vertices consuming partition `p` of `edge`. */
function consumersOf(topology: ExecutionTopology, edge: ExecutionJobEdge, p: number): number[] {
  const range = topology.consumersOf(edge, p - edge.firstPartition);
  const out: number[] = [];
  for (let k = range.start; k < range.end; k++) out.push(edge.target.firstExecutionVertex + k);
  return out;
}
