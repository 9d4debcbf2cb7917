// What a finished run reports about its graph (JobResult's topology, regions, edges and vertices), from
// the plan, the decisions of an adaptive run and the finished attempts' metrics.
import type { LoadedJob } from '../graph/load-job.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { JobTopology } from '../topology/job-topology.js';
import type { VertexInitializedData } from './job-events.js';
import type { EdgeSummary, VertexSummary } from './job-progress.js';

/** The topology with each decided vertex at its decided parallelism. */
export function decidedTopology(topology: JobTopology, decisions: readonly VertexInitializedData[]): JobTopology {
  if (decisions.length === 0) return topology;
  const decided = new Map(decisions.map((d) => [d.vertexId, d.parallelism]));
  return { ...topology, vertices: topology.vertices.map((v) => ({ ...v, parallelism: decided.get(v.id) ?? v.parallelism })) };
}

/** Regions made only of skipped subtasks (an adaptive run's reserved subtasks beyond their decided parallelism). */
export function countSkippedRegions(regions: PipelinedRegions, isSkipped: (v: number) => boolean): number {
  let n = 0;
  for (let r = 0; r < regions.regionCount; r++) if (Array.from(regions.membersOf(r)).every(isSkipped)) n++;
  return n;
}

/** Records and bytes per edge, summed over the finished attempts' outputs. */
export function summarizeEdges(loaded: LoadedJob, results: readonly { metrics: { outputs: readonly { edgeIndex: number; records: number; bytes: number }[] } }[]): EdgeSummary[] {
  const plan = loaded.plan;
  const totals = plan.edges.map(() => ({ records: 0, bytes: 0 }));
  for (const result of results) {
    for (const o of result.metrics.outputs) {
      const t = totals[o.edgeIndex];
      if (t === undefined) continue;
      t.records += o.records;
      t.bytes += o.bytes;
    }
  }
  return plan.edges.map((e, i) => ({
    id: e.id,
    source: plan.vertices[e.source]?.id ?? '',
    target: plan.vertices[e.target]?.id ?? '',
    distribution: e.distribution,
    partitionType: e.partitionType,
    records: totals[i]?.records ?? 0,
    bytes: totals[i]?.bytes ?? 0,
  }));
}

/** Per vertex: its parallelism (decided where it was), the records it read, its fused operators. */
export function summarizeVertices(loaded: LoadedJob, results: readonly { attemptId: string; metrics: { recordsIn: number; lateRecordsDropped?: number } }[], decisions: readonly VertexInitializedData[]): VertexSummary[] {
  const decided = new Map(decisions.map((d) => [d.vertexId, d]));
  const recordsIn = new Map<string, number>();
  const late = new Map<string, number>();
  for (const r of results) {
    const vertex = r.attemptId.slice(0, r.attemptId.lastIndexOf('#'));
    recordsIn.set(vertex, (recordsIn.get(vertex) ?? 0) + r.metrics.recordsIn);
    if (r.metrics.lateRecordsDropped !== undefined) late.set(vertex, (late.get(vertex) ?? 0) + r.metrics.lateRecordsDropped);
  }
  return loaded.plan.vertices.map((v) => {
    const d = decided.get(v.id);
    return {
      id: v.id,
      name: v.name,
      parallelism: d?.parallelism ?? v.parallelism,
      ...(d === undefined ? {} : { decided: { bytesIn: d.bytesIn ?? 0, inputs: d.inputs ?? [], ...(d.skewedSplits === undefined ? {} : { skewedSplits: d.skewedSplits }) } }),
      recordsIn: recordsIn.get(v.id) ?? 0,
      ...(late.has(v.id) ? { lateRecordsDropped: late.get(v.id) as number } : {}),
      fusions: v.fusions,
    };
  });
}

