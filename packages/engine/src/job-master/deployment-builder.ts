import {
  type JobId,
  type PartitionDescriptor,
  type ProducerDescriptor,
  type ShuffleDescriptor,
  type ShuffleMaster,
  intermediateResultId,
  resultPartitionId,
} from '@weft/shuffle-api';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import type { FaultInjector } from '../faults/fault-injector.js';
import type { JobPlan, PlannedEdge } from '../graph/job-plan.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';
import type { InputDeployment, InputPartition, OutputDeployment, RegionDeployment, TaskDeployment } from '../runtime/task-deployment.js';
import type { AdaptiveDecisions } from './adaptive-decisions.js';
import type { RegionPlacement } from './region-placement.js';
import type { TaskAttempts } from './task-attempts.js';

export interface DeploymentBuilderOptions {
  readonly plan: JobPlan;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly jobId: JobId;
  /** Registers the BLOCKING partitions. */
  readonly blockingMaster: ShuffleMaster;
  /**
   * Registers the pipelined partitions of regions spread over several executors (at each producer's
   * executor, `producer.location` its `shuffleLocation`). @defaultValue none: regions are never spread
   */
  readonly pipelinedMaster?: ShuffleMaster | undefined;
  /** The current attempt of each execution vertex: the one deployed. */
  readonly attempts: TaskAttempts;
  /** Plants faults in task deployments. */
  readonly faults?: FaultInjector;
  /** The job master's lease epoch (its job event log's), carried by every partition registration. @defaultValue none */
  readonly epoch?: number | undefined;
  /** Each task's memory budget (RunJobOptions.taskMemoryBytes). @defaultValue the executor's default */
  readonly taskMemoryBytes?: number | undefined;
  /** Where tasks spill (RunJobOptions.spillDir). @defaultValue the executor's temp directory */
  readonly spillDir?: string | undefined;
  /** An adaptive job's decided parallelism and input ranges. @defaultValue none: every vertex has its planned parallelism */
  readonly decisions?: AdaptiveDecisions | undefined;
}

/**
 * Builds the deployments of regions: attempt ids, output partitions (registering the BLOCKING ones with
 * the job's blocking ShuffleMaster, whose descriptors it keeps for consumers), and for each input the
 * partitions and subpartition to read.
 */
export class DeploymentBuilder {
  /** Descriptor of each registered (non-pipelined) partition's current attempt, by partition index. */
  readonly #descriptors: (ShuffleDescriptor | undefined)[];
  /** The latest attempt registered here of each PIPELINED_APPROXIMATE partition, by partition id (executors that serve each other only). */
  readonly #approximateDescriptors = new Map<string, ShuffleDescriptor>();
  readonly #planVertexOf = new Map<string, number>();
  readonly #planEdgeOf = new Map<string, PlannedEdge>();
  private readonly topology: ExecutionTopology;
  private readonly regions: PipelinedRegions;
  private readonly jobId: JobId;
  private readonly blockingMaster: ShuffleMaster;
  private readonly pipelinedMaster: ShuffleMaster | undefined;
  private readonly attempts: TaskAttempts;
  private readonly faults: FaultInjector | undefined;
  private readonly epoch: number | undefined;
  readonly #memory: { readonly taskMemoryBytes?: number; readonly spillDir?: string };
  private readonly decisions: AdaptiveDecisions | undefined;

  constructor(options: DeploymentBuilderOptions) {
    this.topology = options.topology;
    this.regions = options.regions;
    this.jobId = options.jobId;
    this.blockingMaster = options.blockingMaster;
    this.pipelinedMaster = options.pipelinedMaster;
    this.attempts = options.attempts;
    this.faults = options.faults;
    this.epoch = options.epoch;
    this.#memory = {
      ...(options.taskMemoryBytes === undefined ? {} : { taskMemoryBytes: options.taskMemoryBytes }),
      ...(options.spillDir === undefined ? {} : { spillDir: options.spillDir }),
    };
    this.decisions = options.decisions;
    this.#descriptors = new Array<ShuffleDescriptor | undefined>(options.topology.partitionCount);
    options.plan.vertices.forEach((v) => this.#planVertexOf.set(v.id, v.index));
    options.plan.edges.forEach((e) => this.#planEdgeOf.set(e.id, e));
  }

  /** Forgets the descriptor of partition `partition` (its producer restarts) and returns it, to be released. */
  takeDescriptor(partition: number): ShuffleDescriptor | undefined {
    const descriptor = this.#descriptors[partition];
    this.#descriptors[partition] = undefined;
    return descriptor;
  }

  /** A resumed run: partition `partition` of a kept task is readable through `descriptor` (from the ShuffleMaster's listing). */
  restoreDescriptor(partition: number, descriptor: ShuffleDescriptor): void {
    this.#descriptors[partition] = descriptor;
  }

  /** Whether pipelined partitions can be registered here, so a region may be spread over executors. */
  get canSpread(): boolean {
    return this.pipelinedMaster !== undefined;
  }

  /**
   * Builds region `region`'s deployment for `placement` (all its tasks; the caller hands each executor its
   * own). A spread placement's pipelined partitions are registered here, their descriptors in the
   * deployment, so each consumer knows at which executor its producers' partitions live.
   */
  async build(region: number, placement: RegionPlacement): Promise<RegionDeployment> {
    const members = Array.from(this.regions.membersOf(region));
    const outputs = new Map<number, OutputDeployment[]>();
    const pipelined = new Map<string, ShuffleDescriptor>();
    for (let i = 0; i < members.length; i++) {
      const v = members[i] as number;
      const executor = placement.executorOfMember[i] as TaskExecutor;
      outputs.set(v, await this.#outputs(v, executor, placement.spread ? pipelined : undefined));
    }
    const tasks: TaskDeployment[] = members.map((v) => {
      const vertex = this.topology.jobVertexOf(v);
      const subtask = v - vertex.firstExecutionVertex;
      const attempt = this.attempts.numberOf(v);
      const fault = this.faults?.taskFault?.({ executionVertexId: `${vertex.id}#${subtask}`, attempt });
      return {
        ...(fault === undefined ? {} : { fault }),
        ...this.#memory,
        attemptId: this.attempts.attemptIdOf(v),
        executionVertexId: `${vertex.id}#${subtask}`,
        vertexId: vertex.id,
        vertexIndex: this.#planVertexOf.get(vertex.id) as number,
        subtask,
        parallelism: this.decisions?.parallelismOf(vertex.index) ?? vertex.parallelism,
        attempt,
        outputs: outputs.get(v) ?? [],
        inputs: vertex.inputs.map((e) => this.#input(v, this.topology.edges[e] as ExecutionJobEdge, pipelined)),
      };
    });
    return { jobId: this.jobId, region, tasks };
  }

  /** Task `v`'s outputs on `executor`; `spread`: register its pipelined partitions too, into that map. */
  async #outputs(v: number, executor: TaskExecutor, spread: Map<string, ShuffleDescriptor> | undefined): Promise<OutputDeployment[]> {
    const vertex = this.topology.jobVertexOf(v);
    const subtask = v - vertex.firstExecutionVertex;
    const attempt = this.attempts.numberOf(v);
    const producer: ProducerDescriptor = { producerId: this.attempts.attemptIdOf(v), attempt, taskExecutorId: executor.id };
    const out: OutputDeployment[] = [];
    for (const e of vertex.outputs) {
      const edge = this.topology.edges[e] as ExecutionJobEdge;
      const consumers = this.topology.consumersOf(edge, subtask);
      const planned = this.#planEdgeOf.get(edge.id) as PlannedEdge;
      // an undecided consumer reads its decided range of the reserved subpartitions; a broadcast one, the only one
      const broadcastToAdaptive = this.decisions?.isAdaptive(edge.target.index) === true && planned.partitioning.type === 'broadcast';
      const partition: PartitionDescriptor = {
        resultId: intermediateResultId(edge.id),
        partitionId: resultPartitionId(edge.id, subtask),
        partitionIndex: subtask,
        partitionType: edge.partitionType,
        numberOfSubpartitions: broadcastToAdaptive ? 1 : consumers.end - consumers.start,
      };
      if (edge.approximate) {
        const consumerIds = Array.from({ length: consumers.end - consumers.start }, (_, s) => `${edge.target.id}#${consumers.start + s}`);
        const location = executor.shuffleLocation;
        if (this.pipelinedMaster === undefined || location === undefined) {
          // registered by the executor running the producer; its consumers (other regions there) find it by id
          out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: true, approximate: true, consumerIds, partition, producer });
          continue;
        }
        // executors that serve each other (a network shuffle): registered here, at the producer's executor; its
        // consumers anywhere get it with their deployment, or are told it (TaskExecutor.updatePartitionInfo)
        const at: ProducerDescriptor = { ...producer, location: { host: location.host, port: location.port } };
        const descriptor = await this.pipelinedMaster.registerPartitionWithProducer({ jobId: this.jobId, partition, producer: at, ...(this.epoch === undefined ? {} : { epoch: this.epoch }) });
        this.#approximateDescriptors.set(partition.partitionId, descriptor);
        out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: true, approximate: true, consumerIds, partition, producer: at, descriptor });
        continue;
      }
      if (edge.mustBePipelined) {
        const location = executor.shuffleLocation;
        if (spread === undefined || this.pipelinedMaster === undefined || location === undefined) {
          out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: true, partition, producer });
          continue;
        }
        const at: ProducerDescriptor = { ...producer, location: { host: location.host, port: location.port } };
        const descriptor = await this.pipelinedMaster.registerPartitionWithProducer({ jobId: this.jobId, partition, producer: at, ...(this.epoch === undefined ? {} : { epoch: this.epoch }) });
        spread.set(partition.partitionId, descriptor);
        out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: true, partition, producer: at, descriptor });
        continue;
      }
      const descriptor = await this.blockingMaster.registerPartitionWithProducer({ jobId: this.jobId, partition, producer, ...(this.epoch === undefined ? {} : { epoch: this.epoch }) });
      this.#descriptors[edge.firstPartition + subtask] = descriptor;
      const report = this.decisions?.isAdaptive(edge.target.index) === true;
      out.push({ edgeIndex: planned.index, edgeId: edge.id, pipelined: false, partition, producer, descriptor, ...(report ? { reportSubpartitionBytes: true } : {}) });
    }
    return out;
  }

  #input(v: number, edge: ExecutionJobEdge, pipelined: ReadonlyMap<string, ShuffleDescriptor>): InputDeployment {
    const vertex = edge.target;
    const subtask = v - vertex.firstExecutionVertex;
    const decided = this.decisions?.decisionOf(vertex.index)?.inputs?.find((i) => i.edgeId === edge.id)?.subtasks[subtask];
    if (this.decisions?.isAdaptive(vertex.index) === true && decided === undefined) throw new Error(`unreachable: ${vertex.id}#${subtask} deployed before its vertex was decided`);
    let producers = this.topology.producersOf(edge, subtask);
    if (decided !== undefined) producers = { start: decided.partitions.start, end: decided.partitions.end + 1 };
    else if (this.decisions?.isAdaptive(edge.source.index) === true) producers = { start: 0, end: this.decisions.parallelismOf(edge.source.index) as number };
    const partitions: InputPartition[] = [];
    for (let k = producers.start; k < producers.end; k++) {
      const producerVertex = edge.source.firstExecutionVertex + k;
      // an approximate producer that finished still serves a new consumer attempt: from its restored position
      // (the replay of what it wrote since, then its end); one lost with its task executor restarts with it
      const descriptor = edge.approximate ? this.#approximateDescriptors.get(`${edge.id}#${k}`) : edge.mustBePipelined ? pipelined.get(`${edge.id}#${k}`) : this.#descriptors[edge.firstPartition + k];
      if (!edge.mustBePipelined && !edge.approximate && descriptor === undefined) throw new Error(`unreachable: partition ${edge.id}#${k} was never registered`);
      partitions.push({
        partitionId: `${edge.id}#${k}`,
        producerAttemptId: this.attempts.attemptIdOf(producerVertex),
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
      pipelined: edge.mustBePipelined || edge.approximate,
      ...(edge.approximate ? { approximate: true } : {}),
      partitions,
      subpartitions: decided === undefined ? { start: subpartition, end: subpartition } : { ...decided.subpartitions },
    };
  }
}
