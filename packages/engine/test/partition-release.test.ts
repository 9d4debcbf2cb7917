// Partitions released as the job goes (Flink's RegionPartitionGroupReleaseStrategy): a consumed partition
// group is released once every region reading it finished, not only at the job's end; a released
// partition is unavailable, so a later failover that needs it re-runs its producer. Checked on the
// grouping alone (hand-computed groups), then on jobs run by the engine over the recording blocking
// shuffle, whose log shows when each partition was released against when its readers ran.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineJob, ExecutionTopology, type JobResult, type JobTopology, runJob } from '@weft/engine';
import type { Logger, ResultPartitionType } from '@weft/shuffle-api';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';
import { PartitionGroupReleaseStrategy } from '../src/job-master/partition-group-release-strategy.js';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { type ShuffleRecord, testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

/** `a(S) -edge-> b(T)`, every subtask its own region: the strategy, and `finish`/`unfinish` by subtask of b. */
function twoVertices(S: number, T: number, distribution: 'ALL_TO_ALL' | 'POINTWISE', partitionType: ResultPartitionType = 'BLOCKING') {
  const json: JobTopology = {
    vertices: [
      { id: 'a', parallelism: S },
      { id: 'b', parallelism: T },
    ],
    edges: [{ id: 'a->b', source: 'a', target: 'b', distribution, partitionType }],
  };
  const topology = ExecutionTopology.from(json);
  const regions = buildPipelinedRegions(topology);
  const strategy = new PartitionGroupReleaseStrategy(topology, regions);
  const regionOf = (task: string): number => regions.regionOf[topology.indexOfExecutionVertex(task)] as number;
  /** The partition ids released when `task`'s region finishes, group by group. */
  const finish = (task: string): string[][] => strategy.regionFinished(regionOf(task)).map((g) => Array.from(g, (p) => topology.resultPartitionId(p)));
  const unfinish = (task: string): void => strategy.regionUnfinished(regionOf(task));
  return { strategy, finish, unfinish };
}

describe('consumed partition groups (RegionPartitionGroupReleaseStrategy)', () => {
  it('releases an all-to-all result as one group, once every consumer region finished', () => {
    const { strategy, finish } = twoVertices(2, 3, 'ALL_TO_ALL');
    assert.equal(strategy.groupCount, 1);
    assert.deepEqual(finish('b#0'), []);
    assert.deepEqual(finish('b#2'), []);
    assert.deepEqual(finish('b#1'), [['a->b#0', 'a->b#1']]);
  });

  it('groups a pointwise result with more producers than consumers by consumer', () => {
    // 4 -> 2: b#0 reads a#0, a#1; b#1 reads a#2, a#3.
    const { strategy, finish } = twoVertices(4, 2, 'POINTWISE');
    assert.equal(strategy.groupCount, 2);
    assert.deepEqual(finish('b#1'), [['a->b#2', 'a->b#3']]);
    assert.deepEqual(finish('b#0'), [['a->b#0', 'a->b#1']]);
  });

  it('groups a pointwise result with fewer producers than consumers by producer', () => {
    // 2 -> 3: a#0 feeds b#0, b#1; a#1 feeds b#2.
    const { strategy, finish } = twoVertices(2, 3, 'POINTWISE');
    assert.equal(strategy.groupCount, 2);
    assert.deepEqual(finish('b#2'), [['a->b#1']]);
    assert.deepEqual(finish('b#0'), []);
    assert.deepEqual(finish('b#1'), [['a->b#0']]);
  });

  it('waits again for a consumer region that was restarted after it finished', () => {
    const { finish, unfinish } = twoVertices(2, 2, 'ALL_TO_ALL');
    assert.deepEqual(finish('b#0'), []);
    unfinish('b#0');
    assert.deepEqual(finish('b#1'), [], 'b#0 runs again: the group is still read');
    assert.deepEqual(finish('b#0'), [['a->b#0', 'a->b#1']]);
  });

  it('never releases BLOCKING_PERSISTENT partitions, nor those released upstream (PIPELINED_APPROXIMATE)', () => {
    for (const type of ['BLOCKING_PERSISTENT', 'PIPELINED_APPROXIMATE'] as const) {
      const { finish } = twoVertices(1, 1, 'POINTWISE', type);
      assert.deepEqual(finish('b#0'), [], type);
    }
  });

  it('counts a region holding several consumer subtasks once', () => {
    // a -BLOCKING-> b, b -PIPELINED-> c: b#i and c#i share a region; c reads nothing blocking.
    const topology = ExecutionTopology.from({
      vertices: [
        { id: 'a', parallelism: 1 },
        { id: 'b', parallelism: 2 },
        { id: 'c', parallelism: 2 },
      ],
      edges: [
        { id: 'a->b', source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' },
        { id: 'b->c', source: 'b', target: 'c', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
      ],
    });
    const regions = buildPipelinedRegions(topology);
    const strategy = new PartitionGroupReleaseStrategy(topology, regions);
    const regionOf = (task: string): number => regions.regionOf[topology.indexOfExecutionVertex(task)] as number;
    assert.deepEqual(strategy.regionFinished(regionOf('b#0')), []);
    assert.deepEqual(strategy.regionFinished(regionOf('b#0')), [], 'a region still finished finishes once');
    assert.equal(strategy.regionFinished(regionOf('c#1')).length, 1);
  });
});

type Released = Extract<ShuffleRecord, { kind: 'released' }>;

/** Index in `records` of the first record matching. */
function at(records: readonly ShuffleRecord[], what: string, match: (r: ShuffleRecord) => boolean): number {
  const i = records.findIndex(match);
  assert.ok(i >= 0, `no record of ${what}`);
  return i;
}
const released = (records: readonly ShuffleRecord[], partitionId: string): number => at(records, `the release of ${partitionId}`, (r) => r.kind === 'released' && r.partitionId === partitionId);
const gateOf = (records: readonly ShuffleRecord[], attempt: string): number => at(records, `${attempt}'s gate`, (r) => r.kind === 'gate-created' && r.attempt === attempt);
/** The last record of a task attempt (its writer closed, or its gate closed when it writes no partition). */
function lastOf(records: readonly ShuffleRecord[], attempt: string): number {
  let last = -1;
  records.forEach((r, i) => {
    if (r.kind !== 'released' && r.attempt === attempt) last = i;
  });
  assert.ok(last >= 0, `no record of ${attempt}`);
  return last;
}

const N = 200;

/** `a(pa) -> b(pb) -> c(1)`, every edge BLOCKING; `rescale` makes a->b POINTWISE, else ALL_TO_ALL. */
function chain(pa: number, pb: number, aToB: 'rescale' | 'rebalance') {
  return defineJob(
    (ctx) => {
      const a = ctx.range(0, N, { name: 'a', parallelism: pa });
      (aToB === 'rescale' ? a.rescale() : a.rebalance())
        .map((x) => x * 2, { name: 'b', parallelism: pb })
        .rebalance()
        .map((x) => x + 1, { name: 'c', parallelism: 1 })
        .collect('out');
    },
    { name: 'release-chain' },
  );
}

const expected = Array.from({ length: N }, (_, i) => i * 2 + 1);

async function runRecorded(job: ReturnType<typeof chain>, options: { release?: boolean; loseOnce?: string; restartAttempts?: number } = {}) {
  const blocking = testingRecordingBlockingShuffle();
  /** Releases logged when each region was about to be deployed, by its first task's attempt. */
  const releasedBeforeDeploy = new Map<string, string[]>();
  let lost = false;
  const result: JobResult = await runJob({
    job,
    parallelism: 1,
    executor: 'inprocess',
    slotsPerExecutor: 1,
    exchangeMode: 'ALL_EDGES_BLOCKING',
    shuffle: { pipelined: testingNoShuffleFactory(), blocking },
    ...(options.release === undefined ? {} : { releasePartitionsDuringJob: options.release }),
    restartStrategy: { type: 'fixed-delay', attempts: options.restartAttempts ?? 0, delayMs: 0 },
    faults: () => ({
      beforeDeploy: (region) => {
        const first = region.tasks[0] as { executionVertexId: string; attempt: number };
        releasedBeforeDeploy.set(`${first.executionVertexId}@${first.attempt}`, blocking.records.filter((r): r is Released => r.kind === 'released').map((r) => r.partitionId));
        if (options.loseOnce !== undefined && !lost && region.inputPartitions.includes(options.loseOnce)) {
          lost = true;
          blocking.lose(options.loseOnce);
        }
      },
    }),
  });
  assert.equal(result.status, 'succeeded', String(result.error?.stack));
  assert.deepEqual([...(result.collected['out'] as number[])].sort((x, y) => x - y), expected);
  return { result, records: blocking.records, releasedBeforeDeploy };
}

describe('releasing partitions while the job runs', () => {
  it('releases a’s partition right after b’s region finished, before c runs (a -> b -> c, all BLOCKING)', async () => {
    const { result, records, releasedBeforeDeploy } = await runRecorded(chain(1, 1, 'rebalance'));
    assert.ok(released(records, 'a->b#0') > lastOf(records, 'b#0@0'), 'not before b#0 is done with it');
    assert.ok(released(records, 'a->b#0') < gateOf(records, 'c#0@0'), 'before c#0 opens its gate');
    assert.deepEqual(releasedBeforeDeploy.get('c#0@0'), ['a->b#0'], 'gone from the store while the job still runs');
    assert.ok(released(records, 'b->c#0') > lastOf(records, 'c#0@0'));
    assert.equal(result.partitionsReleasedDuringJob, 2);
    assert.ok(result.bytesReleasedDuringJob > 0 && result.bytesReleasedDuringJob <= result.bytesShuffled, `${result.bytesReleasedDuringJob} of ${result.bytesShuffled} bytes`);
    assert.equal(records.filter((r) => r.kind === 'released').length, 2, 'each partition released once');
  });

  it('releases an all-to-all result only once every consumer region finished', async () => {
    const { result, records } = await runRecorded(chain(2, 3, 'rebalance'));
    const lastB = Math.max(...[0, 1, 2].map((j) => lastOf(records, `b#${j}@0`)));
    for (const p of ['a->b#0', 'a->b#1']) {
      assert.ok(released(records, p) > lastB, `${p} is released after the last of b's three regions finished`);
      assert.ok(released(records, p) < gateOf(records, 'c#0@0'));
    }
    assert.equal(result.partitionsReleasedDuringJob, 2 + 3);
  });

  it('releases a pointwise result group by group, as each consumer region finishes', async () => {
    // 4 -> 2 pointwise: b#0 reads a#0, a#1; b#1 reads a#2, a#3. One slot: b#0 runs, then b#1.
    const { result, records } = await runRecorded(chain(4, 2, 'rescale'));
    const b0 = lastOf(records, 'b#0@0');
    const b1 = gateOf(records, 'b#1@0');
    assert.ok(b0 < b1, 'b#0 ran first');
    for (const p of ['a->b#0', 'a->b#1']) assert.ok(b0 < released(records, p) && released(records, p) < b1, `${p}: released between b#0's end and b#1's start`);
    for (const p of ['a->b#2', 'a->b#3']) assert.ok(released(records, p) > lastOf(records, 'b#1@0'), `${p}: released once b#1 finished`);
    assert.equal(result.partitionsReleasedDuringJob, 4 + 2);
  });

  it('re-runs the producer of a released partition that a later failover needs', async () => {
    // a -> b -> c: a->b#0 is released once b#0 finished. c#0 then finds b->c#0 lost: c#0 and b#0 restart,
    // and b#0 reads a->b#0, released — so a#0 restarts too, at the same failover (not after b#0 fails).
    const { result, records } = await runRecorded(chain(1, 1, 'rebalance'), { loseOnce: 'b->c#0', restartAttempts: 3 });
    assert.equal(result.failovers.length, 1, JSON.stringify(result.failovers));
    const failover = result.failovers[0] as JobResult['failovers'][number];
    assert.deepEqual([...failover.tasksToRestart].sort(), ['a#0', 'b#0', 'c#0']);
    assert.deepEqual([...failover.lostPartitions].sort(), ['a->b#0', 'b->c#0']);
    assert.deepEqual(result.taskAttempts, { 'a#0': 1, 'b#0': 1, 'c#0': 1 });
    assert.equal(result.failures, 1);
    assert.ok(gateOf(records, 'b#0@1') > lastOf(records, 'a#0@1'), 'b#0 runs again over a#0’s new partition');
    assert.ok(records.some((r) => r.kind === 'released' && r.partitionId === 'a->b#0' && r.producer === 'a#0@1'), 'a#0’s new partition is released in its turn');
  });

  it('releases nothing before the job ends when turned off', async () => {
    const { result, records, releasedBeforeDeploy } = await runRecorded(chain(4, 2, 'rescale'), { release: false });
    assert.deepEqual(records.filter((r) => r.kind === 'released'), []);
    assert.deepEqual(releasedBeforeDeploy.get('c#0@0'), []);
    assert.equal(result.partitionsReleasedDuringJob, 0);
    assert.equal(result.bytesReleasedDuringJob, 0);
  });

  it('logs a release that fails and goes on: the job succeeds', async () => {
    const recording = testingRecordingBlockingShuffle();
    const blocking = {
      ...recording,
      createShuffleMaster: (context: Parameters<typeof recording.createShuffleMaster>[0]) => ({
        ...recording.createShuffleMaster(context),
        releasePartitionExternally: async () => {
          throw new Error('store unreachable');
        },
      }),
    };
    const warnings: string[] = [];
    const logger: Logger = { debug: () => {}, info: () => {}, warn: (obj, msg) => void warnings.push(`${msg}: ${JSON.stringify(obj)}`), error: () => {}, child: () => logger };
    const result = await runJob({ job: chain(1, 1, 'rebalance'), parallelism: 1, executor: 'inprocess', slotsPerExecutor: 1, shuffle: { pipelined: testingNoShuffleFactory(), blocking }, logger });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.deepEqual([...(result.collected['out'] as number[])].sort((x, y) => x - y), expected);
    assert.equal(result.partitionsReleasedDuringJob, 2, 'counted as released: the engine gave them up');
    assert.deepEqual(
      warnings.filter((w) => w.startsWith('releasing a consumed partition failed')).map((w) => JSON.parse(w.slice(w.indexOf('{'))).partitionId).sort(),
      ['a->b#0', 'b->c#0'],
    );
  });

  it('refuses a releasePartitionsDuringJob that is not a boolean, naming it', async () => {
    await assert.rejects(
      runJob({ job: chain(1, 1, 'rebalance'), parallelism: 1, executor: 'inprocess', shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingRecordingBlockingShuffle() }, releasePartitionsDuringJob: 'yes' as unknown as boolean }),
      (error: Error & { code?: string }) => error.code === 'WEFT_ERR_INVALID_ARGUMENT' && /releasePartitionsDuringJob/.test(error.message),
    );
  });
});
