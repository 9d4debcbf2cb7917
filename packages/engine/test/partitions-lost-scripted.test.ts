// The job master's side of JobShuffleContext.partitionsLost, scripted: finished blocking partitions the
// shuffle names lost count as unavailable, so the next failover re-runs all their producers in one go;
// a failure naming a partition unreadable is decided only once the shuffle master took its report (it may
// name more partitions lost meanwhile); a notice that comes after the decision costs at most one more
// failover, never a region waiting for a partition nothing produces; stale attempts and partitions still
// being produced are not marked lost. Scripted executors: `src` attempts finish at once, `cnt` attempts
// run until the test fails or finishes them. Topology: src (3) -ALL_TO_ALL BLOCKING-> cnt (3); partition
// `src->cnt#i` is src#i's. Expected restarts worked out by hand from DESIGN.md's region failover.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { type JobId, type PartitionsLostNotice, type ResultPartitionId, type ShuffleFailureReport, type ShuffleMaster, jobId, noopLogger, partitionNotFound, taskExecutorId } from '@weft/shuffle-api';
import { createFailoverStrategy, createRestartBackoffTimeStrategy, ExecutionTopology, type FailoverRecord, type JobPlan, type JobTopology, serializeTaskError } from '@weft/engine';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { JobMaster } from '../src/job-master/job-master.js';
import { testingDescriptorOnlyMaster } from './support/descriptor-only-master.js';
import { SourcesFinishExecutor } from './support/scripted-executor.js';

const TOPOLOGY: JobTopology = {
  vertices: [
    { id: 'src', parallelism: 3 },
    { id: 'cnt', parallelism: 3 },
  ],
  edges: [{ id: 'src->cnt', source: 'src', target: 'cnt', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }],
};
const PLAN = { name: 'partitions-lost', vertices: TOPOLOGY.vertices.map((v, index) => ({ id: v.id, index })), edges: TOPOLOGY.edges.map((e, index) => ({ id: e.id, index, targetInput: 0 })), logical: { nodes: [] } } as unknown as JobPlan;
const JOB: JobId = jobId('job-partitions-lost');

class Executor extends SourcesFinishExecutor {
  /** The attempt failed for a reason of its own (user code), naming no partition. */
  failWith(attemptId: string, message: string): void {
    this.running.delete(attemptId);
    this.emit({ type: 'failed', attemptId, error: serializeTaskError(new Error(message)) });
  }

  /** The attempt could not read `partitionId` (SHF_ERR_PARTITION_NOT_FOUND naming it, as a shuffle's gate throws). */
  failReading(attemptId: string, partitionId: string): void {
    this.running.delete(attemptId);
    this.emit({ type: 'failed', attemptId, error: serializeTaskError(partitionNotFound(partitionId, 'its shuffle server refuses connections')) });
  }
}

const lostNotice = (partitions: readonly [string, number][]): PartitionsLostNotice => ({
  jobId: JOB,
  partitions: partitions.map(([partitionId, attempt]) => ({ partitionId: partitionId as ResultPartitionId, attempt })),
  reason: 'testing: shuffle server s-1 refuses connections',
});

async function turns(n = 50): Promise<void> {
  for (let i = 0; i < n; i++) await tick();
}

interface Script {
  readonly master: JobMaster;
  readonly executor: Executor;
  /** Waits until every attempt named runs. */
  running(...attemptIds: string[]): Promise<void>;
  /** The failovers decided so far (the record is made at the decision). */
  failovers(): readonly FailoverRecord[];
}

/**
 * Runs the job on one executor of 6 slots with `blockingMaster`; `script` acts once the three sources
 * finished and the three counts run; then every count still running (or deployed later) finishes.
 */
async function run(script: (s: Script) => Promise<void>, options: { blockingMaster?: ShuffleMaster; lostReportWaitMs?: number } = {}) {
  const topology = ExecutionTopology.from(TOPOLOGY);
  const regions = buildPipelinedRegions(topology);
  const failovers: FailoverRecord[] = [];
  let master: JobMaster | undefined;
  master = new JobMaster({
    jobId: JOB,
    plan: PLAN,
    topology,
    regions,
    blockingMaster: options.blockingMaster ?? testingDescriptorOnlyMaster(),
    failover: createFailoverStrategy(topology, 'region', { regions, isPartitionAvailable: (id) => master?.isPartitionAvailable(id) ?? true }),
    restart: createRestartBackoffTimeStrategy({ type: 'fixed-delay', attempts: 5, delayMs: 0 }),
    logger: noopLogger,
    cancelTimeoutMs: 60_000,
    ...(options.lostReportWaitMs === undefined ? {} : { lostReportWaitMs: options.lostReportWaitMs }),
    onFailover: (record) => failovers.push(record),
  });
  const executor = new Executor(taskExecutorId('e0'), 6);
  executor.listener = master;
  const running = async (...attemptIds: string[]): Promise<void> => {
    for (let i = 0; i < 5000 && !attemptIds.every((id) => executor.running.has(id)); i++) await tick();
    assert.ok(attemptIds.every((id) => executor.running.has(id)), `${attemptIds.join(', ')} run: ran ${executor.ran.join(' ')}`);
  };
  const outcome = master.run([executor]);
  await running('cnt#0@0', 'cnt#1@0', 'cnt#2@0');
  await script({ master, executor, running, failovers: () => failovers });
  for (let k = 0; k < 100; k++) {
    for (const id of [...executor.running]) executor.finish(id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (k > 20 && executor.running.size === 0) break;
  }
  const result = await Promise.race([outcome, new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), 3_000).unref())]);
  assert.notEqual(result, 'stuck', `the job ended: ran ${executor.ran.join(' ')}`);
  if (result === 'stuck') throw new Error('unreachable');
  assert.equal(result.status, 'succeeded', result.error?.message);
  return { result, ran: executor.ran, failovers: failovers.map((f) => ({ failed: f.failedTask, lost: [...f.lostPartitions].sort(), restart: [...f.tasksToRestart].sort() })) };
}

describe('partitions the blocking shuffle names lost (job master)', () => {
  it('counts them unavailable: the next failover re-runs all their producers at once, and no other', async () => {
    const { failovers, ran } = await run(async ({ master, executor }) => {
      master.partitionsLost(lostNotice([['src->cnt#0', 0], ['src->cnt#1', 0]]));
      executor.failReading('cnt#2@0', 'src->cnt#0');
      await turns();
    });
    assert.deepEqual(failovers, [{ failed: 'cnt#2', lost: ['src->cnt#0', 'src->cnt#1'], restart: ['cnt#0', 'cnt#1', 'cnt#2', 'src#0', 'src#1'] }]);
    assert.ok(!ran.includes('src#2@1'), 'src#2 still holds its partition: it runs once');
  });

  it('decides a failure naming a partition unreadable once the shuffle master took its report, which named the others lost', async () => {
    let master: JobMaster | undefined;
    const reports: ShuffleFailureReport[] = [];
    const reporting: ShuffleMaster = {
      ...testingDescriptorOnlyMaster(),
      reportFailure: async (report) => {
        reports.push(report);
        await new Promise((resolve) => setTimeout(resolve, 30)); // a probe of the server
        master?.partitionsLost(lostNotice([['src->cnt#0', 0], ['src->cnt#2', 0]]));
      },
    };
    const { failovers } = await run(
      async (s) => {
        master = s.master;
        // every reader fails, each naming the first lost partition it met
        s.executor.failReading('cnt#0@0', 'src->cnt#0');
        s.executor.failReading('cnt#1@0', 'src->cnt#2');
        s.executor.failReading('cnt#2@0', 'src->cnt#0');
        await new Promise((resolve) => setTimeout(resolve, 100));
      },
      { blockingMaster: reporting },
    );
    assert.deepEqual(failovers, [{ failed: 'cnt#0', lost: ['src->cnt#0', 'src->cnt#2'], restart: ['cnt#0', 'cnt#1', 'cnt#2', 'src#0', 'src#2'] }], 'one failover; the consumers already restarting are not failed over again');
    assert.equal(reports.length, 3, 'every failure is reported');
  });

  it('decides a failure that names no partition at once, however long the shuffle master takes over its report', async () => {
    const slow: ShuffleMaster = { ...testingDescriptorOnlyMaster(), reportFailure: () => new Promise((resolve) => setTimeout(resolve, 500)) };
    const { failovers } = await run(
      async (s) => {
        s.executor.failWith('cnt#1@0', 'user code threw');
        await turns(200);
        assert.deepEqual(s.failovers().map((f) => f.failedTask), ['cnt#1'], 'decided before the report was taken');
        // the restart itself is registered once the report was taken
        await new Promise((resolve) => setTimeout(resolve, 600));
        await s.running('cnt#1@1');
      },
      { blockingMaster: slow },
    );
    assert.deepEqual(failovers, [{ failed: 'cnt#1', lost: [], restart: ['cnt#1'] }]);
  });

  it('decides failures in the order they came: one behind a decision that waits for its report waits too', async () => {
    let master: JobMaster | undefined;
    const reporting: ShuffleMaster = {
      ...testingDescriptorOnlyMaster(),
      reportFailure: async (report) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        if (String((report.error as Error | undefined)?.message).includes('src->cnt#0')) master?.partitionsLost(lostNotice([['src->cnt#0', 0]]));
      },
    };
    const { failovers } = await run(
      async (s) => {
        master = s.master;
        s.executor.failReading('cnt#0@0', 'src->cnt#0');
        // user code of another reader fails while that decision waits: decided after it, within its restart
        s.executor.failWith('cnt#1@0', 'user code threw');
        await new Promise((resolve) => setTimeout(resolve, 100));
      },
      { blockingMaster: reporting },
    );
    assert.deepEqual(failovers, [{ failed: 'cnt#0', lost: ['src->cnt#0'], restart: ['cnt#0', 'cnt#1', 'cnt#2', 'src#0'] }], 'one failover: cnt#1 restarts with it');
  });

  it('a notice after the decision: the restarted readers are deployed again (not left waiting for a partition nothing produces) and one more failover re-runs the rest', async () => {
    let master: JobMaster | undefined;
    const reporting: ShuffleMaster = {
      ...testingDescriptorOnlyMaster(),
      reportFailure: async () => {
        master?.partitionsLost(lostNotice([['src->cnt#0', 0], ['src->cnt#1', 0]]));
      },
    };
    const { failovers } = await run(
      async (s) => {
        master = s.master;
        s.executor.failReading('cnt#0@0', 'src->cnt#0');
        await s.running('cnt#0@1', 'cnt#1@1', 'cnt#2@1');
        s.executor.failReading('cnt#1@1', 'src->cnt#1');
        await turns();
      },
      { blockingMaster: reporting, lostReportWaitMs: 0 },
    );
    assert.deepEqual(failovers, [
      { failed: 'cnt#0', lost: ['src->cnt#0'], restart: ['cnt#0', 'cnt#1', 'cnt#2', 'src#0'] },
      { failed: 'cnt#1', lost: ['src->cnt#1'], restart: ['cnt#0', 'cnt#1', 'cnt#2', 'src#1'] },
    ]);
  });

  it('ignores a partition of another job\'s topology, or whose named attempt is not its producer\'s current one (a stale notice)', async () => {
    const { failovers } = await run(async ({ master, executor }) => {
      // src#1's current attempt is 0: a notice of attempt 3 is stale
      master.partitionsLost(lostNotice([['src->cnt#1', 3], ['no-such-edge#0', 0]]));
      executor.failReading('cnt#0@0', 'src->cnt#0');
      await turns();
      // src#0 runs again (attempt 1): the lost attempt 0 of its partition is gone already
      master.partitionsLost(lostNotice([['src->cnt#0', 0]]));
      executor.failReading('cnt#2@1', 'src->cnt#2');
      await turns();
    });
    assert.deepEqual(failovers[0], { failed: 'cnt#0', lost: ['src->cnt#0'], restart: ['cnt#0', 'cnt#1', 'cnt#2', 'src#0'] });
    assert.equal(failovers.length, 2);
    assert.deepEqual(failovers[1]?.lost, ['src->cnt#2'], 'only the partition the failure names');
    assert.ok(!failovers[1]?.restart.includes('src#1'), 'src#1 is not re-run');
  });
});
