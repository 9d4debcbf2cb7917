// A region taken over by a later failover waits for the producers the earlier failover still restarts.
// Failover A restarts a producer region P and its consumer region C; a later failover B takes C over (B
// restarts another producer of C) and is reset first, because one of P's tasks is slow to stop. When B
// reschedules C, P's partition still counts as finished — A has not reset P yet — but it is about to be
// produced anew: C must wait for P's new attempt, never be deployed over the old attempt's partition.
// The job master runs on a scripted task executor (each task's events are decided by the test), so the
// order of deployments and task ends is exact.
import assert from 'node:assert/strict';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { jobId, noopLogger, type ShuffleDescriptor, type ShuffleMaster, serializeError, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type FailoverRecord, type JobPlan, type JobTopology, type RegionDeployment, type TaskEvent, type TaskExecutor, type TaskExecutorListener } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';

/**
 * Region P = {src#0, fail#0, lag#0} (src feeds fail and lag pipelined); region Y = {y#0}; region C =
 * {c#0}, which reads src's and y's BLOCKING partitions.
 */
const topologyJson: JobTopology = {
  vertices: [
    { id: 'src', parallelism: 1 },
    { id: 'fail', parallelism: 1 },
    { id: 'lag', parallelism: 1 },
    { id: 'y', parallelism: 1 },
    { id: 'c', parallelism: 1 },
  ],
  edges: [
    { id: 'src->fail', source: 'src', target: 'fail', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
    { id: 'src->lag', source: 'src', target: 'lag', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
    { id: 'src->c', source: 'src', target: 'c', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
    { id: 'y->c', source: 'y', target: 'c', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
  ],
};

/** What the deployment builder and the scheduler read of a plan: vertex and edge indexes, and its (empty) logical graph (the tasks here run no operators). */
const plan = {
  name: 'takeover',
  vertices: topologyJson.vertices.map((v, index) => ({ id: v.id, index })),
  edges: topologyJson.edges.map((e, index) => ({ id: e.id, index, targetInput: e.target === 'c' && e.source === 'y' ? 1 : 0 })),
  // no operators, so no two-phase-commit sink for the scheduler to find
  logical: { nodes: [] },
} as unknown as JobPlan;

/** A blocking shuffle master that hands out descriptors and remembers what was released. */
function testingBlockingMaster(): ShuffleMaster & { readonly released: string[] } {
  const released: string[] = [];
  return {
    shuffleServiceId: 'testing-descriptors',
    released,
    start: async () => {},
    close: async () => {},
    registerJob: async () => {},
    unregisterJob: async () => {},
    registerPartitionWithProducer: async ({ jobId, partition, producer }): Promise<ShuffleDescriptor> => ({ shuffleServiceId: 'testing-descriptors', jobId, partition, producer, details: null }),
    releasePartitionExternally: async (descriptor) => void released.push(`${descriptor.partition.partitionId} of ${descriptor.producer.producerId}`),
    listPartitions: async () => [],
    [Symbol.asyncDispose]: async () => {},
  };
}

/**
 * A task executor whose tasks do what the test says. First attempts: src#0 finishes, then fail#0 throws;
 * lag#0 runs until cancelled and reports `cancelled` only when the test calls `release`; y#0 runs until
 * the test calls `fail`. Every other attempt finishes at once. Events arrive on later turns of the event
 * loop, as a real executor's do; `log` lists deployments and task ends in order.
 */
class TestingScriptedExecutor implements TaskExecutor {
  readonly id = taskExecutorId('scripted-0');
  readonly slots = 8;
  readonly kind = 'scripted';
  readonly log: string[] = [];
  readonly deployments: RegionDeployment[] = [];
  /** Attempts asked to stop that have not reported yet. */
  readonly cancelRequested = new Set<string>();
  listener: TaskExecutorListener | undefined;
  readonly #running = new Set<string>();

  deploy(deployment: RegionDeployment): void {
    this.deployments.push(deployment);
    for (const task of deployment.tasks) {
      this.log.push(`deploy ${task.attemptId}`);
      this.#running.add(task.attemptId);
      this.#emit({ type: 'running', attemptId: task.attemptId });
    }
    for (const task of deployment.tasks) {
      const id = task.attemptId;
      if (id === 'lag#0@0' || id === 'y#0@0') continue;
      if (id === 'fail#0@0') this.fail(id);
      else this.#finish(id);
    }
  }

  cancel(attemptIds: readonly string[]): void {
    for (const id of attemptIds) {
      if (!this.#running.has(id)) continue;
      this.log.push(`cancel ${id}`);
      if (id === 'lag#0@0') this.cancelRequested.add(id);
      else this.#end({ type: 'cancelled', attemptId: id });
    }
  }

  /** The attempt throws. */
  fail(attemptId: string): void {
    this.#end({ type: 'failed', attemptId, error: serializeError(new Error(`${attemptId} throws (scripted)`)) });
  }

  /** The attempt, cancelled earlier, finally stops. */
  release(attemptId: string): void {
    assert.ok(this.cancelRequested.delete(attemptId), `${attemptId} was asked to stop`);
    this.#end({ type: 'cancelled', attemptId });
  }

  progress(): [] {
    return [];
  }

  async close(): Promise<void> {
    this.#running.clear();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #finish(attemptId: string): void {
    this.#end({ type: 'finished', attemptId, result: { attemptId, durationMs: 0, metrics: { recordsIn: 0, outputs: [] }, sinks: [] } });
  }

  /** Reported on a later turn, in call order (a task ends once). */
  #end(event: TaskEvent): void {
    this.#running.delete(event.attemptId);
    this.#emit(event);
  }

  #emit(event: TaskEvent): void {
    setImmediate(() => {
      if (event.type !== 'running') this.log.push(`${event.type} ${event.attemptId}`);
      this.listener?.onTaskEvent(this.id, event);
    });
  }
}

/** Turns of the event loop until `condition` holds (fails after many: the scenario went elsewhere). */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (condition()) return;
    await tick();
  }
  assert.fail(`never happened: ${what}`);
}

describe('a region taken over by a later failover', () => {
  it('is not deployed before the producer an earlier failover restarts has finished its new attempt', async () => {
    const topology = ExecutionTopology.from(topologyJson);
    const regions = buildPipelinedRegions(topology);
    assert.equal(regions.regionCount, 3);
    let master: JobMaster | undefined;
    const failover = createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true });
    const blockingMaster = testingBlockingMaster();
    const executor = new TestingScriptedExecutor();
    const failovers: FailoverRecord[] = [];
    master = new JobMaster({
      jobId: jobId('job-takeover'),
      plan,
      topology,
      regions,
      blockingMaster,
      failover,
      restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 5, delayMs: 1 }),
      logger: noopLogger,
      cancelTimeoutMs: 60_000,
      onFailover: (record) => failovers.push(record),
    });
    executor.listener = master;
    try {
      const outcome = master.run([executor]);
      // A: fail#0 throws after src#0 finished: P and its consumer C restart; lag#0 is slow to stop.
      await until(() => executor.cancelRequested.has('lag#0@0'), 'lag#0 asked to stop');
      assert.deepEqual(failovers.map((f) => [...f.tasksToRestart].sort()), [['c#0', 'fail#0', 'lag#0', 'src#0']]);
      // B: y#0 throws: Y and its consumer C restart — B takes C over; it is reset while A waits for lag#0.
      executor.fail('y#0@0');
      await until(() => executor.log.includes('finished y#0@1'), 'y#0 run again');
      assert.deepEqual([...(failovers[1]?.tasksToRestart ?? [])].sort(), ['c#0', 'y#0']);
      for (let i = 0; i < 20; i++) await tick();
      assert.ok(!executor.log.some((line) => line.startsWith('deploy c#0')), `c#0 waits for src#0's new attempt, not its old partition: ${executor.log.join(', ')}`);
      // lag#0 stops at last: A resets P, which runs again; C follows.
      executor.release('lag#0@0');
      const result = await outcome;
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      const log = executor.log;
      assert.deepEqual(log.filter((line) => line.startsWith('deploy c#0')), ['deploy c#0@1'], 'c#0 is deployed once, as its new attempt');
      assert.ok(log.indexOf('deploy c#0@1') > log.indexOf('finished src#0@1'), `c#0 is deployed after src#0's new attempt finished: ${log.join(', ')}`);
      const c = executor.deployments.flatMap((d) => d.tasks).find((t) => t.attemptId === 'c#0@1');
      const fromSrc = c?.inputs.find((input) => input.edgeId === 'src->c')?.partitions[0];
      assert.equal(fromSrc?.producerAttemptId, 'src#0@1');
      assert.equal(fromSrc?.descriptor?.producer.producerId, 'src#0@1', 'c#0 reads the partition src#0’s new attempt wrote');
      assert.ok(blockingMaster.released.includes('src->c#0 of src#0@0'), 'the old attempt’s partition was released');
    } finally {
      master.abort(new Error('test over'));
      await executor.close();
    }
  });
});
