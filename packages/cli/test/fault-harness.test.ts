// The fault spec grammar and the seeded harness: the same seed picks the same targets; faults fire once,
// on the first deployed attempt, and partition damage precedes every consumer deployed with it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { damageablePartitions, FaultHarness, formatFaultSpec, parseFaultSpec, SeededRandom } from '@weft/cli/faults';
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

  const bad: [string, RegExp][] = [
    ['', /empty fault/],
    ['seed=1', /no fault given/],
    ['seed=1,seed=2,throw', /seed= given twice/],
    ['throw@-1', /must be an integer >= 0/],
    ['throw:', /empty target/],
    ['restart-redis:x', /restart-redis takes no target/],
    ['restart-redis@0', /counts deployments from 1/],
    ['delete-partition@4', /takes no @/],
    ['melt', /unknown fault "melt"/],
  ];
  for (const [text, message] of bad) {
    it(`refuses ${JSON.stringify(text)} naming the problem`, () => {
      assert.throws(() => parseFaultSpec(text), (error: { code?: string; message?: string }) => error.code === 'WEFT_ERR_USAGE' && message.test(String(error.message)));
    });
  }
});

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

  it('refuses a fault that cannot apply to the job', () => {
    const inProcess = { ...context, executor: 'inprocess' as const };
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'kill-worker' }] }).factory(inProcess), /kill-worker needs worker processes/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'delete-partition' }] }).factory(context), /needs the persisted blocking shuffle/);
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'throw', target: 'agg#7' }] }).factory(context), (error: { code?: string }) => error.code === 'WEFT_ERR_UNKNOWN_EXECUTION_VERTEX');
    assert.throws(() => new FaultHarness({ faults: [{ kind: 'corrupt-partition', target: 'agg->out#0' }] }, { damagePartition: damage }).factory(context), /agg->out#0 is not a blocking partition that another region reads/);
  });

  it('draws integers in range from a seeded generator', () => {
    const random = new SeededRandom(3);
    const values = Array.from({ length: 1000 }, () => random.int(2, 9));
    assert.ok(values.every((v) => v >= 2 && v < 9 && Number.isInteger(v)));
    assert.equal(new Set(values).size, 7);
  });
});
