import type { InputChannelInfo, InputGate, Logger, ResultPartitionWriter } from '@weft/shuffle-api';
import { noopLogger } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';
import type { JobPlan, PlannedVertex } from '../graph/job-plan.js';
import type { ExternalFileSystem } from '../io/external-file-system.js';
import type { StreamConnector } from '../io/stream-connector.js';
import { createOperator, type RuntimeOperator } from '../operators/create-operator.js';
import type { OperatorContext, Output, SinkOutput, StreamOperator } from '../operators/stream-operator.js';
import type { RecordSerializerFactory } from '../serialization/record-serializer.js';
import { defaultTaskMemoryBytes, type MemoryConsumer } from '../memory/memory-manager.js';
import { writerMemoryBytes, writerReservedBytes } from '../memory/shuffle-buffer-shares.js';
import { createTaskMemory, type TaskMemory } from '../memory/task-memory.js';
import { TaskBackpressure } from './backpressure.js';
import { BarrierAligner, CANCEL_CHECKPOINT_EVENT } from './barrier-aligner.js';
import { INPUT_POSITIONS_UID, InputPositions } from './input-positions.js';
import { wallClockMs } from './wall-clock.js';
import { OperatorStateHolder } from './operator-state-holder.js';
import { TaskWatermarks } from './task-watermarks.js';
import { channelCount, inputChannelsOf, type TaskInputChannels } from './input-channels-of.js';
import type { TaskCheckpointing, TaskSnapshot } from './task-checkpointing.js';
import { createChannelSelector } from './channel-selector.js';
import { FaultTrigger } from './fault-trigger.js';
import type { CheckpointFaultMoment } from '../faults/fault-injector.js';
import { GuardedSourceOutput } from './guarded-source-output.js';
import { DISCARD_OUTPUT, FanOutOutput, NetworkOutput } from './network-output.js';
import type { InputDeployment, OutputDeployment, TaskDeployment, TaskMetrics } from './task-deployment.js';
import type { TaskResult } from './task-events.js';
import { TaskGates } from './task-gates.js';

/** How a task obtains its writers and gates: the region runner resolves descriptors and waits. */
export interface TaskIo {
  /** `memoryBytes`: the writer's share of the task's budget (CreateWriterRequest.memoryBytes). */
  createWriter(output: OutputDeployment, memoryBytes: number): Promise<ResultPartitionWriter>;
  /** `memoryBytes`: the gate's share of the task's budget while open; `resumeFrom`: an approximate input's restored positions (CreateInputGateRequest's). */
  createGate(input: InputDeployment, memoryBytes: number, resumeFrom?: readonly (number | undefined)[]): Promise<InputGate>;
}

/** The MemoryConsumer a task's shuffle writers and gates reserve their shares through (shuffle-buffer-shares.ts). */
export const SHUFFLE_BUFFERS_CONSUMER = 'shuffle buffers';

export interface StreamTaskOptions {
  readonly plan: JobPlan;
  readonly deployment: TaskDeployment;
  readonly jobId: string;
  readonly io: TaskIo;
  /** Aborting cancels the task: its reads and waits reject with the signal's reason. */
  readonly signal: AbortSignal;
  readonly cwd: string;
  /** Where `<scheme>://` inputs and outputs live. */
  readonly fileSystems: readonly ExternalFileSystem[];
  /** Where stream sources read. @defaultValue [] */
  readonly streamConnectors?: readonly StreamConnector[];
  readonly serializer: RecordSerializerFactory;
  readonly logger?: Logger;
  /** Kills the process running the task (a planted `kill-process` fault); absent in the job master's process. */
  readonly killProcess?: () => void;
  /** Called once, with the wall clock (Date.now()), when the task reads its first record — a source, when it begins to run. @defaultValue none */
  readonly onFirstRecord?: (atMs: number) => void;
  /** An approximate input channel of partition `partitionId` lost its producer attempt (false), or reads a new one again (true). @defaultValue none */
  readonly onInputAvailability?: (partitionId: string, available: boolean) => void;
  /**
   * The task's link to its job's checkpoints, asked for when the task starts (a rejection fails the task);
   * absent, or resolving undefined, in jobs that take no checkpoints: barriers are then ignored.
   */
  readonly checkpointing?: () => Promise<TaskCheckpointing | undefined>;
}

/**
 * One execution attempt of a subtask: the operator chain of its job vertex between the gates of its
 * inputs and the writers of its outputs (Flink's StreamTask).
 *
 * `run()`: create writers, build the chain (each operator emitting into the next, or into network outputs
 * that serialize and route records), open it, run the source or read the inputs (each gate in its own
 * loop, input phases one after another), finish the operators in chain order, then `finish()` the writers
 * — the commit. On any error the writers are failed (consumers see SHF_ERR_PRODUCER_FAILED) and the
 * error is rethrown; on cancellation the signal's reason is thrown instead. Everything opened is closed.
 */
export class StreamTask {
  readonly #options: StreamTaskOptions;
  #onFirstRecord: ((atMs: number) => void) | undefined;
  readonly #vertex: PlannedVertex;
  readonly #backpressure = new TaskBackpressure();
  readonly #writers: { readonly edgeIndex: number; readonly writer: ResultPartitionWriter }[] = [];
  /** The network output of each edge whose bytes per subpartition are reported, by plan edge index. */
  readonly #networkOutputs = new Map<number, NetworkOutput>();
  #gates: TaskGates | undefined;
  #operators: RuntimeOperator[] = [];
  #recordsIn = 0;
  /** Approximate inputs: partial records discarded per producer subtask (TaskMetrics.partialRecordsDiscardedByProducer). */
  readonly #partialDiscarded = new Map<string, number>();
  /** Records of the batch a planted fault cut short (TaskMetrics.recordsUnprocessed). */
  #recordsUnprocessed = 0;
  /** How far this attempt's state read each input channel (TaskMetrics.recordsLostOnInputs); made once its checkpointing is known. */
  #positions: InputPositions | undefined;
  /** The approximate outputs, by edge index (their losses are counted per consumer). */
  readonly #approximateOutputs = new Map<number, OutputDeployment>();
  /** A planted fault at a record (fault injection), or undefined. */
  readonly #trigger: FaultTrigger | undefined;
  /** A planted fault at a moment of a checkpoint (fault injection), or undefined. */
  readonly #checkpointTrigger: FaultTrigger | undefined;
  #sourceCount: { readonly count: number } | undefined;
  #memory: TaskMemory | undefined;
  /** What the task's writers and open gates hold of its budget. */
  #shuffleMemory: MemoryConsumer | undefined;
  #checkpointing: TaskCheckpointing | undefined;
  /** A checkpointed source's output: once it threw, the task is failing and takes no checkpoint any more. */
  #sourceOutput: GuardedSourceOutput | undefined;
  /** Each operator's checkpointed state, by chain position (empty in jobs without checkpoints). */
  #states: { readonly uid: string; readonly holder: OperatorStateHolder }[] = [];
  #aligner: BarrierAligner | undefined;
  /** The task's input channels, numbered over all its gates (the barrier handler and the watermark valve share it). */
  readonly #channels: TaskInputChannels;
  #watermarks: TaskWatermarks | undefined;

  constructor(options: StreamTaskOptions) {
    this.#onFirstRecord = options.onFirstRecord;
    this.#options = options;
    const vertex = options.plan.vertices[options.deployment.vertexIndex];
    if (vertex === undefined || vertex.id !== options.deployment.vertexId) {
      throw new Error(`task ${options.deployment.attemptId} names vertex ${options.deployment.vertexId}, which the plan does not have at index ${options.deployment.vertexIndex}`);
    }
    this.#vertex = vertex;
    this.#channels = inputChannelsOf(options.deployment.inputs);
    for (const output of options.deployment.outputs) if (output.approximate === true) this.#approximateOutputs.set(output.edgeIndex, output);
    const fault = options.deployment.fault;
    const trigger = fault === undefined ? undefined : new FaultTrigger(fault, options.deployment.attemptId, options.killProcess);
    this.#trigger = fault?.atCheckpoint === undefined ? trigger : undefined;
    this.#checkpointTrigger = fault?.atCheckpoint === undefined ? undefined : trigger;
  }

  /** Live counters (read any time). */
  metrics(): TaskMetrics {
    const source = this.#operators[0];
    const recordsIn = source?.source === true ? source.operator.recordsEmitted : this.#recordsIn;
    let late = 0;
    for (const op of this.#operators) late += (op.operator as { lateRecordsDropped?: number }).lateRecordsDropped ?? 0;
    const outputsByEdge = this.#approximateOutputs;
    return {
      recordsIn,
      outputs: this.#writers.map(({ edgeIndex, writer }) => {
        const metrics = writer.metrics;
        const lost = outputsByEdge.size === 0 ? undefined : recordsLostByConsumer(outputsByEdge.get(edgeIndex), metrics.recordsLostBySubpartition);
        return { edgeIndex, records: metrics.records, bytes: metrics.bytes, ...(lost === undefined ? {} : { recordsLostByConsumer: lost }) };
      }),
      ...(late === 0 ? {} : { lateRecordsDropped: late }),
      ...(this.#partialDiscarded.size === 0 ? {} : { partialRecordsDiscardedByProducer: Object.fromEntries(this.#partialDiscarded) }),
      ...(this.#recordsUnprocessed === 0 ? {} : { recordsUnprocessed: this.#recordsUnprocessed }),
      ...((this.#positions?.recordsLost ?? 0) === 0 ? {} : { recordsLostOnInputs: this.#positions?.recordsLost }),
    };
  }

  async run(): Promise<TaskResult> {
    const started = performance.now();
    const { signal, deployment } = this.#options;
    const onAbort = (): void => this.#abortIo(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let unsubscribeCompletions: (() => void) | undefined;
    try {
      if (signal.aborted) throw signal.reason;
      this.#memory = createTaskMemory({
        budgetBytes: deployment.taskMemoryBytes ?? defaultTaskMemoryBytes(),
        spillDir: deployment.spillDir,
        name: deployment.attemptId,
        jobId: this.#options.jobId,
        serializer: this.#options.serializer,
      });
      this.#shuffleMemory = this.#memory.manager.consumer(SHUFFLE_BUFFERS_CONSUMER);
      // the writers' buffers come out of the task's budget (its operators get the rest; below the shuffle's minimum, overhead)
      const budgetBytes = this.#memory.manager.budgetBytes;
      const writerBytes = writerMemoryBytes(budgetBytes, deployment.outputs.length);
      for (const output of deployment.outputs) {
        this.#shuffleMemory.forceReserve(writerReservedBytes(budgetBytes, deployment.outputs.length));
        this.#writers.push({ edgeIndex: output.edgeIndex, writer: await this.#options.io.createWriter(output, writerBytes) });
      }
      this.#checkpointing = await this.#options.checkpointing?.();
      // restored: what the writers carry begins at that checkpoint's state (their approximate backups keep it from record 0)
      if (this.#checkpointing?.restore !== undefined) for (const { writer } of this.#writers) writer.restored?.();
      const positions = new InputPositions(this.#channels.ids, InputPositions.restoredFrom(this.#checkpointing?.restore, deployment.subtask, deployment.parallelism, deployment.attempt));
      this.#positions = positions;
      if (signal.aborted) throw signal.reason;
      this.#gates = new TaskGates({
        memory: this.#shuffleMemory,
        createGate: (input, memoryBytes, resumeFrom) => this.#options.io.createGate(input, memoryBytes, resumeFrom),
        resumeFrom: (input) => (input.approximate === true ? positions.resumeFrom(this.#channels.base.get(input) ?? 0, channelCount(input)) : undefined),
      });
      this.#watermarks = this.#makeWatermarks();
      this.#operators = this.#buildChain(this.#memory);
      for (let i = this.#operators.length - 1; i >= 0; i--) {
        const op = this.#operators[i] as RuntimeOperator;
        if (!op.source) await op.operator.open?.();
      }
      unsubscribeCompletions = this.#checkpointing?.onComplete((checkpointId) => this.#checkpointCompleted(checkpointId));
      const head = this.#operators[0] as RuntimeOperator;
      await this.#runChain(head);
      if ((this.#aligner?.queued ?? 0) > 0) throw new Error(`unreachable: task ${deployment.attemptId} ended its inputs with records held for a checkpoint`);
      this.#trigger?.fireIfPending(head.source ? (this.#sourceCount?.count ?? 0) : this.#recordsIn);
      for (const op of this.#operators) {
        if (!op.source) await op.operator.finish?.();
        if (signal.aborted) throw signal.reason;
      }
      this.#watermarks?.close();
      for (const { writer } of this.#writers) await writer.finish();
      const sinks: SinkOutput[] = [];
      for (const op of this.#operators) {
        const output = op.source ? undefined : op.operator.sinkOutput?.();
        if (output !== undefined) sinks.push(output);
      }
      const metrics = this.metrics();
      // the final counters carry each blocking output's bytes per subpartition (the adaptive scheduler decides from them)
      const outputs = metrics.outputs.map((o) => {
        const counted = this.#networkOutputs.get(o.edgeIndex);
        return counted === undefined ? o : { ...o, subpartitionBytes: counted.subpartitionBytes };
      });
      return { attemptId: deployment.attemptId, durationMs: performance.now() - started, metrics: { ...metrics, outputs }, sinks };
    } catch (error) {
      const reason = signal.aborted ? signal.reason : error;
      this.#watermarks?.close();
      for (const { writer } of this.#writers) writer.fail(reason);
      throw reason;
    } finally {
      unsubscribeCompletions?.();
      signal.removeEventListener('abort', onAbort);
      await this.#closeAll();
    }
  }

  /** Runs the source, or reads the inputs, to their end. */
  async #runChain(head: RuntimeOperator): Promise<void> {
    if (!head.source) return this.#consumeInputs(head.operator);
    this.#firstRecord();
    const unsubscribe = this.#checkpointing?.onTrigger((checkpointId, timestampMs) => this.#triggeredAtSource(checkpointId, timestampMs));
    try {
      await head.operator.run();
    } finally {
      unsubscribe?.();
    }
  }

  #buildChain(memory: TaskMemory): RuntimeOperator[] {
    const { deployment, jobId, signal, cwd, serializer, fileSystems } = this.#options;
    const vertex = this.#vertex;
    const plan = this.#options.plan;
    const outputsByEdge = new Map(deployment.outputs.map((o) => [o.edgeIndex, o]));
    const writersByEdge = new Map(this.#writers.map((w) => [w.edgeIndex, w.writer]));
    const built = new Array<RuntimeOperator>(vertex.operators.length);
    for (let position = vertex.operators.length - 1; position >= 0; position--) {
      const chained = vertex.operators[position];
      if (chained === undefined) continue;
      const node = chained.node;
      const identity = {
        operatorName: node.name,
        operatorKind: node.spec.kind,
        vertexId: vertex.id,
        subtask: deployment.subtask,
        parallelism: deployment.parallelism,
        attempt: deployment.attempt,
        attemptId: deployment.attemptId,
      };
      const targets: Output[] = chained.chained.map((c) => {
        const next = built[c];
        if (next === undefined || next.source) throw new Error(`unreachable: chained operator ${c} of ${vertex.id} is missing or a source`);
        return next.operator;
      });
      let outputConsumers = 0;
      for (const edgeIndex of chained.edges) {
        const edge = plan.edges[edgeIndex];
        const output = outputsByEdge.get(edgeIndex);
        const writer = writersByEdge.get(edgeIndex);
        if (edge === undefined || output === undefined || writer === undefined) throw new Error(`unreachable: task ${deployment.attemptId} has no output for edge ${edgeIndex}`);
        const subpartitions = output.partition.numberOfSubpartitions;
        if (outputConsumers === 0) outputConsumers = subpartitions;
        const network = new NetworkOutput(writer, createChannelSelector(edge, subpartitions, identity), serializer(), this.#backpressure);
        if (output.reportSubpartitionBytes === true) this.#networkOutputs.set(edgeIndex, network);
        targets.push(network);
      }
      let output = targets.length === 0 ? DISCARD_OUTPUT : targets.length === 1 ? (targets[0] as Output) : new FanOutOutput(targets);
      if (position === 0 && this.#trigger !== undefined && isSource(node.spec.kind)) {
        const counted = this.#trigger.wrap(output);
        this.#sourceCount = counted;
        output = counted;
      }
      let state: OperatorStateHolder | undefined;
      const checkpointing = this.#checkpointing;
      if (position === 0 && checkpointing !== undefined && isSource(node.spec.kind)) {
        const guarded = new GuardedSourceOutput(output);
        this.#sourceOutput = guarded;
        output = guarded;
      }
      // a batch job's window operator keeps its windows in keyed state all the same, never snapshotted
      if (checkpointing !== undefined || node.spec.kind === 'window-aggregate') {
        const keyedInput = position === 0 ? plan.edges.find((e) => e.target === vertex.index && e.partitioning.type === 'hash') : undefined;
        state = new OperatorStateHolder({ operator: node.name, subtask: deployment.subtask, parallelism: deployment.parallelism, maxParallelism: keyedInput?.maxParallelism, restored: checkpointing?.restore?.operators[node.uid] });
        if (checkpointing !== undefined) this.#states[position] = { uid: node.uid, holder: state };
      }
      const watermarks = this.#watermarks;
      const logger = (this.#options.logger ?? noopLogger).child({ operator: node.name });
      const streamConnectors = this.#options.streamConnectors ?? [];
      const extras = { ...(state === undefined ? {} : { state }), ...(watermarks === undefined ? {} : { watermarks }), ...(checkpointing === undefined ? {} : { awaitFinalCheckpoint: () => checkpointing.awaitFinalCheckpoint() }) };
      const context: OperatorContext = { ...identity, jobId, backpressure: this.#backpressure, signal, cwd, fileSystems, streamConnectors, logger, outputConsumers, memory, ...extras };
      built[position] = createOperator(node, output, context, chained.fusion);
    }
    return built;
  }

  async #consumeInputs(head: StreamOperator): Promise<void> {
    const inputs = this.#options.deployment.inputs;
    const byInput = new Map<number, InputDeployment[]>();
    for (const input of inputs) {
      const list = byInput.get(input.inputIndex);
      if (list === undefined) byInput.set(input.inputIndex, [input]);
      else list.push(input);
    }
    const checkpointing = this.#checkpointing;
    if (checkpointing !== undefined) {
      const channels = this.#channels.channels;
      if (byInput.size > 1 || head.inputPhases !== undefined) throw new EngineError('WEFT_ERR_INVALID_JOB', `task ${this.#options.deployment.attemptId}: checkpoints are taken of one-input operators only yet; ${this.#vertex.name} reads ${byInput.size} inputs`, { context: { field: 'checkpointing' } });
      this.#aligner = new BarrierAligner({
        mode: checkpointing.mode,
        channels: Math.max(1, channels),
        deliver: (values, inputIndex) => this.#deliver(head, values, inputIndex),
        onCheckpoint: (checkpointId, timestampMs) => this.#takeCheckpoint(checkpointId, timestampMs),
        onAbort: (checkpointId, reason) => this.#declined(checkpointId, `its inputs aborted it (${reason})`),
        onEvent: (channel, event) => this.#watermarks?.inputEvent(channel, event),
      });
    }
    const phases = head.inputPhases ?? [[...byInput.keys()]];
    for (const phase of phases) {
      await Promise.all(
        phase.map(async (inputIndex) => {
          await Promise.all((byInput.get(inputIndex) ?? []).map((input) => this.#consumeGate(input, head)));
          await head.endInput?.(inputIndex);
        }),
      );
    }
  }

  /** Reads `input` to its end; its gate's read buffers come out of the task's budget while it is open (TaskGates). */
  #consumeGate(input: InputDeployment, head: StreamOperator): Promise<void> {
    return (this.#gates as TaskGates).read(input, (gate) => this.#readGate(input, gate, head));
  }

  async #readGate(input: InputDeployment, gate: InputGate, head: StreamOperator): Promise<void> {
    const { signal } = this.#options;
    if (signal.aborted) throw signal.reason;
    const deserializer = this.#options.serializer();
    const backpressure = this.#backpressure;
    const inputIndex = input.inputIndex;
    const aligner = this.#aligner;
    const base = this.#channels.base.get(input) ?? 0;
    const positions = this.#positions as InputPositions;
    for (;;) {
      const batch = await gate.readBatch();
      if (batch === null) break;
      if (batch.kind !== 'records') {
        if (batch.event.type === 'channel-resumed') {
          if (positions.resumed(base + batch.channel, batch.event.recordPosition)) this.#options.onInputAvailability?.((gate.channels[batch.channel] as InputChannelInfo).partitionId, true);
          continue;
        }
        if (batch.event.type === 'channel-unavailable') {
          positions.unavailable(base + batch.channel);
          this.#options.onInputAvailability?.((gate.channels[batch.channel] as InputChannelInfo).partitionId, false);
          if (batch.event.partialRecordBytes > 0) this.#countPartialDiscarded(input, batch.channel);
        }
        if (aligner === undefined) {
          this.#watermarks?.inputEvent(base + batch.channel, batch.event);
          if (backpressure.blocked) await backpressure.wait();
          continue;
        }
        aligner.event(base + batch.channel, batch.event);
        if (backpressure.blocked) await backpressure.wait();
        continue;
      }
      let records = batch.records;
      positions.read(base + batch.channel, records.length);
      const trigger = this.#trigger;
      let fireAt = -1;
      if (trigger !== undefined && this.#recordsIn + records.length > trigger.atRecord) {
        fireAt = trigger.atRecord;
        records = records.slice(0, Math.max(0, fireAt - this.#recordsIn));
        this.#recordsUnprocessed = batch.records.length - records.length;
      }
      if (aligner !== undefined) {
        const values = new Array<unknown>(records.length);
        for (let i = 0; i < records.length; i++) values[i] = deserializer.deserialize(records[i] as Uint8Array);
        aligner.records(base + batch.channel, values, inputIndex);
      } else if (inputIndex === 0) {
        for (let i = 0; i < records.length; i++) head.collect(deserializer.deserialize(records[i] as Uint8Array));
      } else {
        const process = head.processInput;
        if (process === undefined) throw new Error(`unreachable: operator of ${this.#vertex.id} has no input ${inputIndex}`);
        for (let i = 0; i < records.length; i++) process.call(head, deserializer.deserialize(records[i] as Uint8Array), inputIndex);
      }
      if (this.#recordsIn === 0 && records.length > 0) this.#firstRecord();
      this.#recordsIn += records.length;
      if (fireAt >= 0) (trigger as FaultTrigger).fire(fireAt);
      if (backpressure.blocked) await backpressure.wait();
      if (signal.aborted) throw signal.reason;
    }
  }

  /** Tells `onFirstRecord`, once. */
  #firstRecord(): void {
    const listener = this.#onFirstRecord;
    if (listener === undefined) return;
    this.#onFirstRecord = undefined;
    listener(wallClockMs());
  }

  /** The task's watermarks: its input channels' valve, and its writers for what it emits. */
  #makeWatermarks(): TaskWatermarks {
    const vertex = this.#vertex;
    // a chain that makes its own watermarks does not forward its inputs'
    const assigns = vertex.operators.some((o) => o.node.spec.kind === 'timestamps-watermarks');
    return new TaskWatermarks({
      writers: this.#writers,
      backpressure: this.#backpressure,
      channels: this.#channels.channels,
      forwardIdleness: !assigns,
      onInputWatermark: (watermark) => {
        const head = this.#operators[0];
        if (head !== undefined && !head.source && head.operator.processWatermark !== undefined) head.operator.processWatermark(watermark);
        else if (!assigns) this.#watermarks?.emitWatermark(watermark);
      },
    });
  }

  /** An approximate input's channel lost its producer attempt with a record partly received: counted for that producer. */
  #countPartialDiscarded(input: InputDeployment, channel: number): void {
    const perPartition = input.subpartitions.end - input.subpartitions.start + 1;
    const partition = input.partitions[Math.floor(channel / perPartition)];
    if (partition === undefined) return;
    const producer = partition.producerAttemptId.replace(/@\d+$/u, '');
    this.#partialDiscarded.set(producer, (this.#partialDiscarded.get(producer) ?? 0) + 1);
  }

  #deliver(head: StreamOperator, values: readonly unknown[], inputIndex: number): void {
    if (inputIndex === 0) {
      for (let i = 0; i < values.length; i++) head.collect(values[i]);
      return;
    }
    const process = head.processInput;
    if (process === undefined) throw new Error(`unreachable: operator of ${this.#vertex.id} has no input ${inputIndex}`);
    for (let i = 0; i < values.length; i++) process.call(head, values[i], inputIndex);
  }

  /**
   * A source was told to take checkpoint `checkpointId` (between two of its batches): a failure here declines
   * it. A task being cancelled (its region is failing over; its writers already failed) declines it
   * uncounted: the failover reports the failure, not the checkpoint.
   */
  #triggeredAtSource(checkpointId: number, timestampMs: number): void {
    // a task being cancelled, or whose source output threw (it counted a record it never handed on): no checkpoint of it
    if (this.#options.signal.aborted || this.#sourceOutput?.failed === true) {
      this.#checkpointing?.decline(checkpointId, `task ${this.#options.deployment.attemptId} is ${this.#options.signal.aborted ? 'being cancelled' : 'failing'}`, 'DECLINED');
      return;
    }
    try {
      this.#takeCheckpoint(checkpointId, timestampMs);
    } catch (error) {
      this.#checkpointing?.decline(checkpointId, `task ${this.#options.deployment.attemptId} could not take it: ${(error as Error).message}`, 'TASK_FAILURE');
    }
  }

  /**
   * Takes checkpoint `checkpointId` (the inputs aligned, or a source was told): operators emit what must
   * precede the barrier, write their positions into their state, the state is snapshotted, the barrier
   * goes downstream on every output, and the snapshot is acknowledged.
   */
  #takeCheckpoint(checkpointId: number, timestampMs: number): void {
    const checkpointing = this.#checkpointing;
    if (checkpointing === undefined) return;
    for (const op of this.#operators) op.operator.prepareSnapshotPreBarrier?.();
    const durable: Promise<void>[] = [];
    const operators: Record<string, TaskSnapshot['operators'][string]> = {};
    for (const [position, op] of this.#operators.entries()) {
      const pending = op.operator.snapshotState?.(checkpointId);
      const entry = this.#states[position];
      if (pending === undefined) {
        if (entry !== undefined) operators[entry.uid] = entry.holder.snapshot();
        continue;
      }
      // an operator still making its snapshot durable (a sink's pre-commit) has its state snapshotted once
      // it is — by the reaction registered first, before anything the operator does next
      durable.push(entry === undefined ? pending : pending.then(() => void (operators[entry.uid] = entry.holder.snapshot())));
    }
    const aligner = this.#aligner;
    if (this.#channels.channels > 0 && this.#positions !== undefined) operators[INPUT_POSITIONS_UID] = this.#positions.snapshot((channel) => aligner?.queuedRecords(channel) ?? 0);
    const barrier = { type: 'checkpoint-barrier' as const, id: checkpointId, timestampMs };
    for (const { writer } of this.#writers) if (!writer.broadcastEvent(barrier)) this.#backpressure.block(writer);
    // the asynchronous part (Flink's): acknowledged once what the operators pre-committed is durable
    const acknowledge = (): void => {
      const failed = this.#fireCheckpointFault(checkpointId, 'pre-committed');
      // not a worker process: the checkpoint is declined and the task fails at its next wait
      if (failed !== undefined) checkpointing.decline(checkpointId, `task ${this.#options.deployment.attemptId}: ${failed.message}`, 'TASK_FAILURE');
      else checkpointing.acknowledge({ checkpointId, operators });
    };
    if (durable.length === 0) acknowledge();
    else {
      Promise.all(durable).then(
        acknowledge,
        (error: unknown) => checkpointing.decline(checkpointId, `task ${this.#options.deployment.attemptId} could not make its snapshot durable: ${(error as Error).message}`, 'TASK_FAILURE'),
      );
    }
  }

  /**
   * The job master completed checkpoint `checkpointId`: every operator of the chain is told — a stream
   * source acknowledges what it read before it, a two-phase-commit sink commits what it pre-committed for
   * it. A failed commit (a rejected promise, or a throw) fails the task at its next wait (the backpressure
   * holds the promise).
   */
  #checkpointCompleted(checkpointId: number): void {
    if (this.#options.signal.aborted) return;
    // not a worker process: the task fails at its next wait, before its operators hear of the checkpoint
    if (this.#fireCheckpointFault(checkpointId, 'completed') !== undefined) return;
    // approximate outputs keep an upstream backup for restarted consumers since the latest completed checkpoint's barrier
    for (const { writer } of this.#writers) writer.checkpointCompleted?.(checkpointId);
    for (const op of this.#operators) {
      let done: Promise<void> | void;
      try {
        done = op.operator.notifyCheckpointComplete?.(checkpointId);
      } catch (error) {
        done = Promise.reject(error);
      }
      if (done === undefined) continue;
      done.catch(() => {}); // observed where the backpressure is awaited
      this.#backpressure.blockOn(done);
    }
  }

  /** Fires a planted fault due at this moment of `checkpointId` (kills a worker; elsewhere the task fails at its next wait: the error). */
  #fireCheckpointFault(checkpointId: number, moment: CheckpointFaultMoment): Error | undefined {
    const fault = this.#checkpointTrigger;
    if (fault?.firesAtCheckpoint(checkpointId, moment) !== true) return undefined;
    try {
      fault.fireAtCheckpoint(checkpointId, moment);
    } catch (error) {
      this.#failAtNextWait(error);
      return error as Error;
    }
  }

  /** Fails the task where it next awaits its backpressure (from a callback that cannot throw into the task). */
  #failAtNextWait(error: unknown): void {
    const failed = Promise.reject(error);
    failed.catch(() => {}); // observed where the backpressure is awaited
    this.#backpressure.blockOn(failed);
  }

  /** The inputs aborted checkpoint `checkpointId`: declined, and the consumers told (a cancellation marker). */
  #declined(checkpointId: number, why: string): void {
    this.#checkpointing?.decline(checkpointId, `task ${this.#options.deployment.attemptId}: ${why}`, 'DECLINED');
    const marker = { type: 'user' as const, name: CANCEL_CHECKPOINT_EVENT, payload: { checkpointId } };
    for (const { writer } of this.#writers) if (!writer.broadcastEvent(marker)) this.#backpressure.block(writer);
  }

  #abortIo(reason: unknown): void {
    this.#watermarks?.close();
    for (const { writer } of this.#writers) writer.fail(reason);
    this.#gates?.abort();
  }

  async #closeAll(): Promise<void> {
    const logger = this.#options.logger ?? noopLogger;
    const steps: (() => Promise<unknown> | unknown)[] = [
      () => this.#gates?.close(),
      ...this.#writers.map(({ writer }) => () => writer.close()),
      ...this.#operators.map((op) => () => op.operator.close?.()),
      // after the operators: whatever spill file one left behind goes with the directory
      () => this.#memory?.spill.close(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        logger.warn({ attemptId: this.#options.deployment.attemptId, error: (error as Error).message }, 'cleanup step failed');
      }
    }
  }
}

const SOURCE_KINDS: ReadonlySet<string> = new Set(['text-source', 'range-source', 'array-source', 'generator-source', 'directory-source', 'stream-source']);

function isSource(kind: string): boolean {
  return SOURCE_KINDS.has(kind);
}

/** An approximate output's losses by consumer subtask (entries above 0), or undefined when it has none. */
function recordsLostByConsumer(output: OutputDeployment | undefined, lost: readonly number[] | undefined): Record<string, number> | undefined {
  if (output?.consumerIds === undefined || lost === undefined) return undefined;
  let found: Record<string, number> | undefined;
  lost.forEach((n, s) => {
    const consumer = output.consumerIds?.[s];
    if (n > 0 && consumer !== undefined) (found ??= {})[consumer] = n;
  });
  return found;
}
