// A pipelined region spread over task executors that serve pipelined partitions to each other
// (TaskExecutor.shuffleLocation): the job master places subtask i of every vertex in slot i, registers the
// region's pipelined partitions itself at their producers' executors (producer.location), hands each
// executor its share with the descriptors, and — when one executor is lost — fails the region over only
// once the tasks on the others stopped. Executors without a location keep a region whole on one.
// Scripted executors decide each attempt's end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobId, noopLogger, type RegisterPartitionRequest, type ShuffleLocation, type ShuffleMaster, type TaskExecutorId, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type JobPlan, type JobTopology, type RegionDeployment, type TaskEvent, type TaskExecutor, type TaskExecutorListener } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';

const topologyJson: JobTopology = {
  vertices: [
    { id: 'a', parallelism: 2 },
    { id: 'b', parallelism: 2 },
  ],
  edges: [{ id: 'a->b', source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'PIPELINED_BOUNDED' }],
};
const plan = { name: 'spread', vertices: topologyJson.vertices.map((v, index) => ({ id: v.id, index })), edges: topologyJson.edges.map((e, index) => ({ id: e.id, index, targetInput: 0 })), logical: { nodes: [] } } as unknown as JobPlan;

interface Shared {
  readonly log: string[];
  listener: TaskExecutorListener | undefined;
}

/** Finishes every task it is given, except those `hold` names: they run until cancelled (acknowledged after `cancelDelayMs`). */
class ScriptedExecutor implements TaskExecutor {
  readonly kind = 'scripted';
  readonly slots = 1;
  readonly id: TaskExecutorId;
  readonly shuffleLocation: ShuffleLocation | undefined;
  readonly deployments: RegionDeployment[] = [];
  readonly #shared: Shared;
  readonly #hold: (attemptId: string) => boolean;
  readonly #held = new Set<string>();
  readonly #cancelDelayMs: number;

  constructor(options: { id: string; port?: number; shared: Shared; hold?: (attemptId: string) => boolean; cancelDelayMs?: number }) {
    this.id = taskExecutorId(options.id);
    this.shuffleLocation = options.port === undefined ? undefined : { host: '127.0.0.9', port: options.port };
    this.#shared = options.shared;
    this.#hold = options.hold ?? (() => false);
    this.#cancelDelayMs = options.cancelDelayMs ?? 0;
  }

  deploy(deployment: RegionDeployment): void {
    this.deployments.push(deployment);
    for (const { attemptId } of deployment.tasks) {
      this.#shared.log.push(`deploy ${attemptId} on ${this.id}`);
      this.#emit({ type: 'running', attemptId });
      if (this.#hold(attemptId)) this.#held.add(attemptId);
      else this.#emit({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
    }
  }

  cancel(attemptIds: readonly string[]): void {
    for (const attemptId of attemptIds) {
      if (!this.#held.delete(attemptId)) continue;
      setTimeout(() => {
        this.#shared.log.push(`cancelled ${attemptId} on ${this.id}`);
        this.#shared.listener?.onTaskEvent(this.id, { type: 'cancelled', attemptId });
      }, this.#cancelDelayMs);
    }
  }

  progress(): [] {
    return [];
  }

  async close(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {}

  #emit(event: TaskEvent): void {
    setImmediate(() => this.#shared.listener?.onTaskEvent(this.id, event));
  }
}

function jobMaster(pipelinedMaster: ShuffleMaster | undefined): JobMaster {
  const topology = ExecutionTopology.from(topologyJson);
  const regions = buildPipelinedRegions(topology);
  let master: JobMaster | undefined;
  master = new JobMaster({
    jobId: jobId('job-spread'),
    plan,
    topology,
    regions,
    blockingMaster: testingDescriptorOnlyMaster(),
    ...(pipelinedMaster === undefined ? {} : { pipelinedMaster }),
    failover: createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true }),
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 3, delayMs: 1 }),
    logger: noopLogger,
    cancelTimeoutMs: 60_000,
  });
  return master;
}

describe('a pipelined region spread over task executors', () => {
  it('places subtask i of every vertex on the i-th executor and registers each pipelined partition at its producer', { timeout: 10_000 }, async () => {
    const shared: Shared = { log: [], listener: undefined };
    const registered: RegisterPartitionRequest[] = [];
    const executors = [new ScriptedExecutor({ id: 'w0', port: 7000, shared }), new ScriptedExecutor({ id: 'w1', port: 7001, shared })];
    const master = jobMaster(testingDescriptorOnlyMaster(registered));
    shared.listener = master;
    const result = await master.run(executors);
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(
      executors.map((e) => e.deployments.flatMap((d) => d.tasks.map((t) => t.attemptId))),
      [
        ['a#0@0', 'b#0@0'],
        ['a#1@0', 'b#1@0'],
      ],
    );
    assert.deepEqual(
      registered.map((r) => [r.partition.partitionId, r.producer.taskExecutorId, r.producer.location]),
      [
        ['a->b#0', 'w0', { host: '127.0.0.9', port: 7000 }],
        ['a->b#1', 'w1', { host: '127.0.0.9', port: 7001 }],
      ],
    );
    // every consumer knows where each producer partition lives: the descriptors travel with the deployment
    const b1 = executors[1]?.deployments[0]?.tasks.find((t) => t.attemptId === 'b#1@0');
    assert.deepEqual(
      b1?.inputs[0]?.partitions.map((p) => [p.partitionId, p.descriptor?.producer.location?.port]),
      [
        ['a->b#0', 7000],
        ['a->b#1', 7001],
      ],
    );
    assert.deepEqual(result.placement, { tasksPerExecutor: { w0: 2, w1: 2 }, spreadDeployments: 1 });
  });

  it('restarts the region after an executor is lost only once its tasks on the other executor stopped', { timeout: 10_000 }, async () => {
    const shared: Shared = { log: [], listener: undefined };
    // the first attempts run until cancelled; w0 acknowledges its cancellations 50 ms later
    const hold = (attemptId: string): boolean => attemptId.endsWith('@0');
    const w0 = new ScriptedExecutor({ id: 'w0', port: 7000, shared, hold, cancelDelayMs: 50 });
    const w1 = new ScriptedExecutor({ id: 'w1', port: 7001, shared, hold });
    const master = jobMaster(testingDescriptorOnlyMaster());
    shared.listener = master;
    const running = master.run([w0, w1]);
    while (shared.log.length < 4) await new Promise((resolve) => setTimeout(resolve, 1));
    await new Promise((resolve) => setTimeout(resolve, 5));
    master.onExecutorLost(w1.id, new Error('worker process exited with SIGKILL'));
    const result = await running;
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.equal(result.restarts, 1);
    // w0's tasks were cancelled and acknowledged before anything of the second attempt was deployed;
    // with w1 gone the region runs whole on w0
    assert.deepEqual(shared.log.slice(4), ['cancelled a#0@0 on w0', 'cancelled b#0@0 on w0', 'deploy a#0@1 on w0', 'deploy a#1@1 on w0', 'deploy b#0@1 on w0', 'deploy b#1@1 on w0']);
    assert.equal(result.placement.spreadDeployments, 1);
  });

  it('keeps a region whole on one executor when executors report no shuffle location', { timeout: 10_000 }, async () => {
    const shared: Shared = { log: [], listener: undefined };
    const registered: RegisterPartitionRequest[] = [];
    const executors = [new ScriptedExecutor({ id: 'w0', shared }), new ScriptedExecutor({ id: 'w1', shared })];
    const master = jobMaster(testingDescriptorOnlyMaster(registered));
    shared.listener = master;
    const result = await master.run(executors);
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual(executors.map((e) => e.deployments.flatMap((d) => d.tasks.map((t) => t.attemptId))), [['a#0@0', 'a#1@0', 'b#0@0', 'b#1@0'], []]);
    assert.equal(registered.length, 0, 'the executor registers its own pipelined partitions');
    assert.ok(executors[0]?.deployments[0]?.tasks.every((t) => t.outputs.every((o) => o.descriptor === undefined)));
    assert.deepEqual(result.placement, { tasksPerExecutor: { w0: 4 }, spreadDeployments: 0 });
  });
});
