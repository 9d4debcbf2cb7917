// The fault spec grammar and the seeded harness: the same seed picks the same targets; faults fire once,
// on the first deployed attempt, and partition damage precedes every consumer deployed with it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { damageablePartitions, FaultHarness, formatFaultSpec, parseFaultSpec, SeededRandom, type ShuffleServerFaultActions } from '@weft/cli/faults';
import type { ShuffleServiceFactory } from '@weft/shuffle-api';
import { ExecutionTopology, type JobTopology } from '@weft/engine';

const topology: JobTopology = {
  vertices: [
    { id: 'src', parallelism: 3 },
    { id: 'agg', parallelism: 2 },
    { id: 'out', parallelism: 2 },
  ],
  edges: [
    { id: 'src->agg', source: 'src', target: 'agg', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' },
    { id: 'agg->out', source: 'agg', target: 'out', distribution: 'POINTWISE', partitionType: 'PIPELINED' },
  ],
};
const regions = [['src#0'], ['src#1'], ['src#2'], ['agg#0', 'out#0'], ['agg#1', 'out#1']];

describe('fault specs', () => {
  it('parses kinds, targets, records and the seed, and prints them back', () => {
    const spec = parseFaultSpec('seed=42, throw:agg#1@17 ,kill-worker,delete-partition:src->agg#2,corrupt-partition,restart-redis@3');
    assert.deepEqual(spec, {
      seed: 42,
      faults: [{ kind: 'throw', target: 'agg#1', at: 17 }, { kind: 'kill-worker' }, { kind: 'delete-partition', target: 'src->agg#2' }, { kind: 'corrupt-partition' }, { kind: 'restart-redis', at: 3 }],
    });
    assert.equal(formatFaultSpec(spec), 'seed=42,throw:agg#1@17,kill-worker,delete-partition:src->agg#2,corrupt-partition,restart-redis@3');
  });

  it('parses the checkpoint kill-worker kinds with their task and checkpoint, prints them back, and refuses checkpoint 0', () => {
    const spec = parseFaultSpec('kill-worker-after-pre-commit:agg#1@3,kill-worker-before-commit');
    assert.deepEqual(spec.faults, [{ kind: 'kill-worker-after-pre-commit', target: 'agg#1', at: 3 }, { kind: 'kill-worker-before-commit' }]);
    assert.equal(formatFaultSpec(spec), 'kill-worker-after-pre-commit:agg#1@3,kill-worker-before-commit');
    assert.throws(() => parseFaultSpec('kill-worker-before-commit:agg#1@0'), /counts checkpoints from 1/);
  });

  it('parses kill-job-master with its event type and count, and prints it back', () => {
    const spec = parseFaultSpec('kill-job-master:sink-published@2,kill-job-master');
    assert.deepEqual(spec.faults, [{ kind: 'kill-job-master', target: 'sink-published', at: 2 }, { kind: 'kill-job-master' }]);
    assert.equal(formatFaultSpec(spec), 'kill-job-master:sink-published@2,kill-job-master');
  });

  it('parses the server kinds with their point and pause, and prints them back', () => {
    const spec = parseFaultSpec('kill-shuffle-server:sort->x#2@commit,pause-shuffle-server@fetch~2500,kill-shuffle-server,pause-shuffle-server:a->b#0@push,kill-shuffle-server@committed');
    assert.deepEqual(spec.faults, [
      { kind: 'kill-shuffle-server', target: 'sort->x#2', point: 'commit' },
      { kind: 'pause-shuffle-server', point: 'fetch', pauseMs: 2500 },
      { kind: 'kill-shuffle-server' },
      { kind: 'pause-shuffle-server', target: 'a->b#0', point: 'push' },
      { kind: 'kill-shuffle-server', point: 'committed' },
    ]);
    assert.equal(formatFaultSpec(spec), 'kill-shuffle-server:sort->x#2@commit,pause-shuffle-server@fetch~2500,kill-shuffle-server,pause-shuffle-server:a->b#0@push,kill-shuffle-server@committed');
    assert.deepEqual(parseFaultSpec(formatFaultSpec(spec)), spec);
  });

  const bad: [string, RegExp][] = [
    ['kill-shuffle-server@later', /unknown point "later" in "kill-shuffle-server@later"; expected one of push, commit, committed, fetch/],
    ['kill-shuffle-server@', /unknown point "" in "kill-shuffle-server@"/],
    ['kill-shuffle-server:a->b#0@fetch~100', /kill-shuffle-server takes no ~MS .*"kill-shuffle-server:a->b#0@fetch~100"/],
    ['pause-shuffle-server~100', /~MS goes after @POINT, in "pause-shuffle-server~100"/],
    ['pause-shuffle-server@fetch~soon', /the ~ of "pause-shuffle-server@fetch~soon" must be an integer >= 0, got "soon"/],
    ['pause-shuffle-server@push~0', /the pause of "pause-shuffle-server@push~0" must be 1 to 600000 ms/],
    ['pause-shuffle-server@push~', /the ~ of "pause-shuffle-server@push~" must be an integer/],
    ['kill-shuffle-server:@commit', /empty target in "kill-shuffle-server:@commit"/],
    ['kill-shuffle-server@5', /unknown point "5"/],
    ['', /empty fault/],
    ['seed=1', /no fault given/],
    ['seed=1,seed=2,throw', /seed= given twice/],
    ['throw@-1', /must be an integer >= 0/],
    ['throw:', /empty target/],
    ['restart-redis:x', /restart-redis takes no target/],
    ['restart-redis@0', /counts deployments from 1/],
    ['delete-partition@4', /takes no @/],
    ['melt', /unknown fault "melt"/],
    ['kill-job-master:task-done@2', /unknown job event type "task-done"/],
    ['kill-job-master:task-finished@0', /counts events from 1/],
  ];
  for (const [text, message] of bad) {
    it(`refuses ${JSON.stringify(text)} naming the problem`, () => {
      assert.throws(() => parseFaultSpec(text), (error: { code?: string; message?: string }) => error.code === 'WEFT_ERR_USAGE' && message.test(String(error.message)));
    });
  }
});

/** Server fault actions that only record what they were asked (server pids are all 101). */
function recordingServers(calls: string[]): ShuffleServerFaultActions {
  return {
    arm: async (r) => {
      calls.push(`arm ${r.point} ${r.action} ${r.partitionId} on ${r.serverId}`);
      return { serverId: r.serverId, pid: 101 };
    },
    locate: async (serverId) => {
      calls.push(`locate ${serverId}`);
      return { serverId, pid: 101 };
    },
    signal: (pid, signal) => void calls.push(`signal ${pid} ${signal}`),
    holder: async (_jobId, partitionId) => {
      calls.push(`holder ${partitionId}`);
      return `holder-of-${partitionId}`;
    },
    watch: async (pid, state, abort) => {
      if (state === 'gone' && calls.includes(`signal ${pid} SIGKILL`)) {
        calls.push(`watch ${pid} gone`);
        return true;
      }
      await new Promise((resolve) => abort.addEventListener('abort', resolve, { once: true }));
      return false;
    },
    close: async () => undefined,
  };
}

/** A blocking shuffle whose master places partition `…#i` on `server-i`. */
function placingFactory(calls: string[]): ShuffleServiceFactory {
  return {
    shuffleServiceId: 'shuffle-server',
    createShuffleMaster: () =>
      ({
        registerPartitionWithProducer: async (request: { jobId: string; partition: { partitionId: string }; producer: { attempt: number } }) => {
          const serverId = `server-${request.partition.partitionId.split('#')[1]}`;
          calls.push(`placed ${request.partition.partitionId}@${request.producer.attempt} on ${serverId}`);
          return { jobId: request.jobId, partition: request.partition, producer: request.producer, details: { serverId } };
        },
      }) as never,
    createShuffleEnvironment: () => ({}) as never,
  } as unknown as ShuffleServiceFactory;
}

describe('the seeded fault harness', () => {
  const context = { jobId: 'job-1', topology, regions, executor: 'workers' as const };
  const damage = async () => 'damaged';

  it('draws the same targets from the same seed, and other ones from another seed', () => {
    const draw = (seed: number) => {
      const harness = new FaultHarness({ seed, faults: [{ kind: 'throw' }, { kind: 'kill-worker' }, { kind: 'corrupt-partition' }] }, { damagePartition: damage });
      harness.factory(context);
      return harness.faults.map((f) => `${f.kind}:${f.target}@${f.at}`);
    };
    assert.deepEqual(draw(7), draw(7));
    const seen = new Set(Array.from({ length: 20 }, (_, seed) => draw(seed).join(',')));
    assert.ok(seen.size > 10, 'seeds spread over targets');
  });

  it('only damages partitions that another region reads', () => {
    assert.deepEqual(damageablePartitions(ExecutionTopology.from(topology)), ['src->agg#0', 'src->agg#1', 'src->agg#2']);
  });

  it('plants a task fault once, in the first attempt deployed, and damages a partition before every consumer deployed with it', async () => {
    const damaged: string[] = [];
    let finishDamage!: () => void;
    const harness = new FaultHarness({ seed: 1, faults: [{ kind: 'throw', target: 'agg#1', at: 5 }, { kind: 'delete-partition', target: 'src->agg#2' }] }, {
      damagePartition: (request) =>
        new Promise((resolve) => {
          damaged.push(`${request.mode} ${request.partitionId}`);
          finishDamage = () => resolve('deleted');
        }),
    });
    const injector = harness.factory(context);
    assert.equal(injector.taskFault?.({ executionVertexId: 'agg#0', attempt: 0 }), undefined);
    assert.deepEqual(injector.taskFault?.({ executionVertexId: 'agg#1', attempt: 1 }), { kind: 'throw', atRecord: 5 }, 'its first deployed attempt, whatever its number');
    assert.equal(injector.taskFault?.({ executionVertexId: 'agg#1', attempt: 2 }), undefined, 'a restart runs clean');
    await injector.beforeDeploy?.({ deployment: 1, region: 0, taskExecutorId: 'w', tasks: [], inputPartitions: [] });
    const order: string[] = [];
    const first = Promise.resolve(injector.beforeDeploy?.({ deployment: 4, region: 3, taskExecutorId: 'w', tasks: [], inputPartitions: ['src->agg#0', 'src->agg#2'] })).then(() => order.push('first consumer'));
    const second = Promise.resolve(injector.beforeDeploy?.({ deployment: 5, region: 4, taskExecutorId: 'w', tasks: [], inputPartitions: ['src->agg#2'] })).then(() => order.push('second consumer'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(order, [], 'both consumers wait for the damage');
    finishDamage();
    await Promise.all([first, second]);
    assert.deepEqual(damaged, ['delete src->agg#2'], 'damaged once');
    assert.deepEqual(harness.faults.map((f) => [f.fired, f.detail]), [[true, 'throws at record 5'], [true, 'deleted']]);
  });

  it('plants a checkpoint kill-worker fault as a kill-process TaskFault at its checkpoint moment, once', () => {
    const harness = new FaultHarness({ seed: 1, faults: [{ kind: 'kill-worker-after-pre-commit', target: 'agg#1', at: 2 }, { kind: 'kill-worker-before-commit', target: 'out#0', at: 3 }] });
    const injector = harness.factory(context);
    assert.deepEqual(injector.taskFault?.({ executionVertexId: 'agg#1', attempt: 0 }), { kind: 'kill-process', atRecord: 0, atCheckpoint: { checkpointId: 2, moment: 'pre-committed' } });
    assert.deepEqual(injector.taskFault?.({ executionVertexId: 'out#0', attempt: 0 }), { kind: 'kill-process', atRecord: 0, atCheckpoint: { checkpointId: 3, moment: 'completed' } });
    assert.equal(injector.taskFault?.({ executionVertexId: 'agg#1', attempt: 1 }), undefined, 'a restart runs clean');
  });

  it('refuses a fault that cannot apply to the job', () => {
    const inProcess = { ...context, executor: 'inprocess' as const };
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'kill-worker' }] }).factory(inProcess), /kill-worker needs worker processes/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'kill-worker-after-pre-commit' }] }).factory(inProcess), /kill-worker-after-pre-commit needs worker processes/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'delete-partition' }] }).factory(context), /needs the persisted blocking shuffle/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'throw', target: 'agg#7' }] }).factory(context), (error: { code?: string }) => error.code === 'WEFT_ERR_UNKNOWN_EXECUTION_VERTEX');
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'corrupt-partition', target: 'agg->out#0' }] }, { damagePartition: damage }).factory(context), /agg->out#0 is not a blocking partition that another region reads/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'kill-shuffle-server' }] }).factory(context), /kill-shuffle-server needs a shuffle-server pool \(--shuffle-servers redis:\/\/…\)/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'pause-shuffle-server', target: 'agg->out#0' }] }, { shuffleServers: recordingServers([]) }).factory(context), /pause-shuffle-server: agg->out#0 is not a blocking partition/);
  });

  it('arms a push or commit fault on the server the partition is placed on, once, before the producer gets its descriptor', async () => {
    const calls: string[] = [];
    const harness = new FaultHarness({ seed: 4, faults: [{ kind: 'kill-shuffle-server', target: 'src->agg#1', point: 'commit' }, { kind: 'pause-shuffle-server', target: 'src->agg#2', point: 'push', pauseMs: 10 }] }, { shuffleServers: recordingServers(calls) });
    const factory = harness.wrapShuffle(placingFactory(calls));
    harness.factory(context);
    const master = factory.createShuffleMaster();
    for (const [index, attempt] of [[0, 0], [1, 0], [1, 1], [2, 0]] as const) {
      await master.registerPartitionWithProducer({ jobId: 'job-1', partition: { partitionId: `src->agg#${index}` }, producer: { attempt } } as never);
    }
    assert.deepEqual(calls, [
      'placed src->agg#0@0 on server-0',
      'placed src->agg#1@0 on server-1',
      'arm commit kill src->agg#1 on server-1',
      'placed src->agg#1@1 on server-1',
      'placed src->agg#2@0 on server-2',
      'arm push stop src->agg#2 on server-2',
    ]);
    await harness.close();
    assert.deepEqual(harness.faults.map((f) => [f.kind, f.point, f.fired]), [['kill-shuffle-server', 'commit', false], ['pause-shuffle-server', 'push', false]], 'never reached: the servers are not real');
    assert.match(String(harness.faults[0]?.detail), /armed at commit of src->agg#1 on shuffle server server-1 \(pid 101\); never reached/);
  });

  it('kills the server holding a committed partition before its first consumer is deployed (point committed)', async () => {
    const calls: string[] = [];
    const harness = new FaultHarness({ seed: 4, faults: [{ kind: 'kill-shuffle-server', target: 'src->agg#0', point: 'committed' }] }, { shuffleServers: recordingServers(calls) });
    const injector = harness.factory(context);
    await injector.beforeDeploy?.({ deployment: 4, region: 3, taskExecutorId: 'w', tasks: [], inputPartitions: ['src->agg#0'] });
    await injector.beforeDeploy?.({ deployment: 5, region: 4, taskExecutorId: 'w', tasks: [], inputPartitions: ['src->agg#0'] });
    assert.deepEqual(calls, ['holder src->agg#0', 'locate holder-of-src->agg#0', 'signal 101 SIGKILL', 'watch 101 gone']);
    assert.equal(harness.faults[0]?.fired, true);
    assert.match(String(harness.faults[0]?.detail), /SIGKILLed shuffle server holder-of-src->agg#0 \(pid 101\), holding the committed src->agg#0/);
    await harness.close();
  });

  it('draws integers in range from a seeded generator', () => {
    const random = new SeededRandom(3);
    const values = Array.from({ length: 1000 }, () => random.int(2, 9));
    assert.ok(values.every((v) => v >= 2 && v < 9 && Number.isInteger(v)));
    assert.equal(new Set(values).size, 7);
  });
});
