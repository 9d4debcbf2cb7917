import { invalidEngineArgument } from '../errors/engine-error.js';
import type { JobPlan } from '../graph/job-plan.js';

const CHECKPOINTABLE_SOURCES: ReadonlySet<string> = new Set(['generator-source', 'directory-source', 'stream-source']);

/** A checkpointed job's plan: every edge pipelined (approximate ones too), every source able to rewind, one input per operator. */
export function checkCheckpointable(plan: JobPlan): void {
  for (const edge of plan.edges) {
    if (edge.partitionType !== 'PIPELINED' && edge.partitionType !== 'PIPELINED_BOUNDED' && edge.partitionType !== 'PIPELINED_APPROXIMATE') {
      throw invalidEngineArgument('checkpointing', `edge ${edge.id} is ${edge.partitionType}: a checkpointed job's edges are all pipelined (exchange mode ALL_EDGES_PIPELINED, or ALL_EDGES_PIPELINED_APPROXIMATE)${plan.exchangeMode === 'ALL_EDGES_PIPELINED' || plan.exchangeMode === 'ALL_EDGES_PIPELINED_APPROXIMATE' ? ' (a per-edge exchange override)' : `, but the job runs ${plan.exchangeMode} (its own defineJob exchangeMode, or runJob's / --exchange-mode)`}`);
    }
  }
  for (const vertex of plan.vertices) {
    const head = vertex.operators[0]?.node;
    if (head === undefined) continue;
    if (vertex.inputs.length === 0 && !CHECKPOINTABLE_SOURCES.has(head.spec.kind)) {
      throw invalidEngineArgument('checkpointing', `source ${JSON.stringify(head.name)} (${head.spec.kind}) cannot rewind to a checkpoint; a checkpointed job's sources are ctx.generate(…), ctx.watchDirectory(…) or ctx.readRedisStream(…)`);
    }
    if (new Set(plan.edges.filter((e) => e.target === vertex.index).map((e) => e.targetInput)).size > 1) {
      throw invalidEngineArgument('checkpointing', `operator ${JSON.stringify(head.name)} (${head.spec.kind}) has two inputs: checkpoints are taken of one-input operators only yet`);
    }
  }
}
