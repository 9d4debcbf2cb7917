import {
  type JobId,
  type PartitionDescriptor,
  type ProducerDescriptor,
  type ShuffleDescriptor,
  type ShuffleMaster,
  type TaskExecutorId,
  executionAttemptId,
  executionVertexId,
  intermediateResultId,
  resultPartitionId,
} from '@weft/shuffle-api';
import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { JobPlan, PlannedEdge } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { InputDeployment, InputPartition, OutputDeployment, RegionDeployment, TaskDeployment } from '../runtime/task-deployment.js';

/**
 * Builds the deployments of regions: attempt ids, output partitions (registering the BLOCKING ones with
 * the job's blocking ShuffleMaster, whose descriptors it keeps for consumers), and for each input the
 * partitions and subpartition to read.
 */
export class DeploymentBuilder {
  /** Descriptor of each registered (non-pipelined) partition's current attempt, by partition index. */
  readonly descriptors: (ShuffleDescriptor | undefined)[];
  readonly #planVertexOf = new Map<string, number>();
  readonly #planEdgeOf = new Map<string, PlannedEdge>();

  constructor(
    private readonly plan: JobPlan,
    private readonly topology: ExecutionTopology,
    private readonly regions: PipelinedRegions,
    private readonly jobId: JobId,
    private readonly blockingMaster: ShuffleMaster,
    private readonly attempts: Int32Array,
    private readonly faults?: FaultInjector,
  ) {
    this.descriptors = new Array<ShuffleDescriptor | undefined>(topology.partitionCount);
    plan.vertices.forEach((v) => this.#planVertexOf.set(v.id, v.index));
    plan.edges.forEach((e) => this.#planEdgeOf.set(e.id, e));
  }

  /** `"<vertex>#<i>@<attempt>"` of execution vertex `v`'s current attempt. */
  attemptIdOf(v: number): string {
    return executionAttemptId(executionVertexId(this.topology.jobVertexOf(v).id, v - this.topology.jobVertexOf(v).firstExecutionVertex), this.attempts[v] as number);
  }

  async build(region: number, executor: TaskExecutorId): Promise<RegionDeployment> {
    const members = Array.from(this.regions.membersOf(region));
    const outputs = new Map<number, OutputDeployment[]>();
    for (const v of members) outputs.set(v, await this.#outputs(v, executor));
    const tasks: TaskDeployment[] = members.map((v) => {
      const vertex = this.topology.jobVertexOf(v);
      const subtask = v - vertex.firstExecutionVertex;
      const fault = this.faults?.taskFault?.({ executionVertexId: `${vertex.id}#${subtask}`, attempt: this.attempts[v] as number });
      return {
        ...(fault === undefined ? {} : { fault }),
        attemptId: this.attemptIdOf(v),
        executionVertexId: `${vertex.id}#${subtask}`,
        vertexId: vertex.id,
        vertexIndex: this.#planVertexOf.get(vertex.id) as number,
        subtask,
        parallelism: vertex.parallelism,
        attempt: this.attempts[v] as number,
        outputs: outputs.get(v) ?? [],
        inputs: vertex.inputs.map((e) => this.#input(v, this.topology.edges[e] as ExecutionJobEdge)),
      };
    });
    return { jobId: this.jobId, region, tasks };
  }

  async #outputs(v: number, executor: TaskExecutorId): Promise<OutputDeployment[]> {
    const vertex = this.topology.jobVertexOf(v);
    const subtask = v - vertex.firstExecutionVertex;
    const attempt = this.attempts[v] as number;
    const producer: ProducerDescriptor = { producerId: executionAttemptId(executionVertexId(vertex.id, subtask), attempt), attempt, taskExecutorId: executor };
    const out: OutputDeployment[] = [];
    for (const e of vertex.outputs) {
      const edge = this.topology.edges[e] as ExecutionJobEdge;
      const consumers = this.topology.consumersOf(edge, subtask);
      const partition: PartitionDescriptor = {
        resultId: intermediateResultId(edge.id),
        partitionId: resultPartitionId(edge.id, subtask),
        partitionIndex: subtask,
        partitionType: edge.partitionType,
        numberOfSubpartitions: consumers.end - consumers.start,
      };
      const planned = this.#planEdgeOf.get(edge.id) as PlannedEdge;
      if (edge.mustBePipelined) {
        out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: true, partition, producer });
        continue;
      }
      const descriptor = await this.blockingMaster.registerPartitionWithProducer({ jobId: this.jobId, partition, producer });
      this.descriptors[edge.firstPartition + subtask] = descriptor;
      out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: false, partition, producer, descriptor });
    }
    return out;
  }

  #input(v: number, edge: ExecutionJobEdge): InputDeployment {
    const vertex = edge.target;
    const subtask = v - vertex.firstExecutionVertex;
    const producers = this.topology.producersOf(edge, subtask);
    const partitions: InputPartition[] = [];
    for (let k = producers.start; k < producers.end; k++) {
      const producerVertex = edge.source.firstExecutionVertex + k;
      const descriptor = edge.mustBePipelined ? undefined : this.descriptors[edge.firstPartition + k];
      if (!edge.mustBePipelined && descriptor === undefined) throw new Error(`unreachable: partition ${edge.id}#${k} was never registered`);
      partitions.push({
        partitionId: `${edge.id}#${k}`,
        producerAttemptId: this.attemptIdOf(producerVertex),
        sameRegion: this.regions.regionOf[producerVertex] === this.regions.regionOf[v],
        ...(descriptor === undefined ? {} : { descriptor }),
      });
    }
    const subpartition = edge.distribution === 'ALL_TO_ALL' ? subtask : subtask - this.topology.consumersOf(edge, producers.start).start;
    const planned = this.#planEdgeOf.get(edge.id) as PlannedEdge;
    return {
      edgeIndex: planned.index,
      edgeId: edge.id,
      inputIndex: planned.targetInput,
      pipelined: edge.mustBePipelined,
      partitions,
      subpartitions: { start: subpartition, end: subpartition },
    };
  }
}
