// Adaptive batch parallelism (issue 14; `weft run --parallelism auto`) in process, over the in-memory
// shuffle: decisions from the bytes producers reported, checked against the decider and against the bytes
// of the records themselves; explicit parallelism untouched; decisions kept across a region failover.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assignToKeyGroup,
  computePipelinedRegions,
  decideParallelismAndInputInfos,
  DefaultRecordSerializer,
  defineJob,
  isEngineError,
  type JobBuildFunction,
  type JobEvent,
  type JobEventOf,
  type JobResult,
  type RunJobOptions,
  runJob,
} from '@weft/engine';
import { RECORD_HEADER_BYTES } from '@weft/shuffle-api';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { formatRunSummary, runSummaryJson } from '../src/commands/run-report.js';

const MAX = 16;
const VOLUME = 4000;

async function run(build: JobBuildFunction, extra: Partial<RunJobOptions> = {}): Promise<{ result: JobResult; events: JobEvent[] }> {
  const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
  const events: JobEvent[] = [];
  const result = await runJob({
    job: defineJob(build),
    executor: 'inprocess',
    slotsPerExecutor: 2,
    shuffle: { pipelined: memory, blocking: memory },
    adaptive: { maxParallelism: MAX, dataVolumePerTaskBytes: VOLUME, defaultSourceParallelism: 2 },
    eventListener: { onJobEvent: (event) => void events.push(event) },
    ...extra,
  });
  return { result, events };
}

type Row = { readonly key: string; readonly n: number };
const rows = (count: number): Row[] => Array.from({ length: count }, (_, i) => ({ key: `k${(i * 7919) % 97}${'x'.repeat(i % 5)}`, n: i }));

function sums(values: readonly Row[]): [string, number][] {
  const out = new Map<string, number>();
  for (const r of values) out.set(r.key, (out.get(r.key) ?? 0) + r.n);
  return [...out].sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

const sumAggregator = {
  createAccumulator: () => 0,
  add: (acc: number, r: Row) => acc + r.n,
  merge: (a: number, b: number) => a + b,
  getResult: (acc: number) => acc,
};

function decisionsOf(events: readonly JobEvent[]): JobEventOf<'vertex-initialized'>['data'][] {
  return events.flatMap((e) => (e.type === 'vertex-initialized' && e.data.decided === true ? [e.data] : []));
}

/** bytes[p][s] of an edge, from the `task-finished` events of its producers (what the scheduler decided from). */
function reportedBytes(events: readonly JobEvent[], edgeId: string): number[][] {
  const bytes: number[][] = [];
  for (const e of events) {
    if (e.type !== 'task-finished') continue;
    for (const p of e.data.partitions) {
      const hash = p.partitionId.lastIndexOf('#');
      if (p.partitionId.slice(0, hash) !== edgeId) continue;
      assert.ok(p.subpartitionBytes !== undefined, `${p.partitionId} reports its bytes per subpartition`);
      assert.equal(p.subpartitionBytes.reduce((a, b) => a + b, 0), p.bytes, `${p.partitionId}: its subpartitions add up to what its writer counted`);
      bytes[Number(p.partitionId.slice(hash + 1))] = [...p.subpartitionBytes];
    }
  }
  return bytes;
}

describe('adaptive batch parallelism', () => {
  for (const count of [300, 3000]) {
    it(`decides a keyed aggregation from the bytes its producers wrote, exactly as the decider does on them (${count} rows)`, async () => {
      const values = rows(count);
      const { result, events } = await run((ctx) => {
        ctx.fromArray(values, { name: 'rows', parallelism: 2 }).keyBy((r) => r.key).aggregate(sumAggregator, { name: 'sum', combine: false }).collect('sums');
        // an explicit parallelism is never changed
        ctx.fromArray(values, { name: 'more-rows', parallelism: 2 }).keyBy((r) => r.key).aggregate(sumAggregator, { name: 'fixed', combine: false, parallelism: 3 }).collect('fixed');
      });
      assert.equal(result.status, 'succeeded', String(result.error?.stack));
      assert.deepEqual([...(result.collected['sums'] as [string, number][])].sort((a, b) => (a[0] < b[0] ? -1 : 1)), sums(values));
      assert.deepEqual([...(result.collected['fixed'] as [string, number][])].sort((a, b) => (a[0] < b[0] ? -1 : 1)), sums(values));

      const bytes = reportedBytes(events, 'rows->sum');
      const fixedInputs = events.flatMap((e) => (e.type === 'task-finished' ? e.data.partitions.filter((p) => p.partitionId.startsWith('more-rows->fixed#')) : []));
      assert.equal(fixedInputs.length, 2);
      assert.ok(fixedInputs.every((p) => p.subpartitionBytes === undefined), 'bytes per subpartition only where a consumer is decided from them');
      assert.equal(bytes.length, 2, 'one partition per producer subtask');
      // independent oracle: every record's framed size, in its key group (the subpartition of an undecided consumer)
      const serializer = new DefaultRecordSerializer();
      const expected = new Array<number>(MAX).fill(0);
      for (const r of values) {
        const kg = assignToKeyGroup(r.key, MAX);
        expected[kg] = (expected[kg] as number) + serializer.serialize(r).length + RECORD_HEADER_BYTES;
      }
      assert.deepEqual(Array.from({ length: MAX }, (_, s) => (bytes[0]?.[s] ?? 0) + (bytes[1]?.[s] ?? 0)), expected);

      const oracle = decideParallelismAndInputInfos({ inputs: [{ distribution: 'ALL_TO_ALL', bytes }], minParallelism: 1, maxParallelism: MAX, dataVolumePerTaskBytes: VOLUME });
      const decided = decisionsOf(events);
      assert.deepEqual(decided.map((d) => d.vertexId), ['sum'], 'only the vertex without a parallelism is decided');
      assert.equal(decided[0]?.parallelism, oracle.parallelism);
      assert.deepEqual(decided[0]?.inputs?.[0]?.subtasks, oracle.inputs[0]?.subtasks);
      assert.equal(decided[0]?.bytesIn, expected.reduce((a, b) => a + b, 0));

      const sum = result.vertices.find((v) => v.id === 'sum');
      const fixed = result.vertices.find((v) => v.id === 'fixed');
      assert.equal(sum?.parallelism, oracle.parallelism);
      assert.deepEqual(sum?.decided?.inputs[0]?.subtasks, oracle.inputs[0]?.subtasks);
      assert.equal(fixed?.parallelism, 3);
      assert.equal(fixed?.decided, undefined);
      assert.equal(result.tasks, 2 + oracle.parallelism + 2 + 3, 'reserved subtasks beyond the decision are not tasks');
      assert.equal(result.attempts, result.tasks);
      assert.equal(Object.keys(result.taskAttempts).length, result.tasks);
      // the reported topology is the decided one: what `weft plan` reads
      assert.equal(result.topology.vertices.find((v) => v.id === 'sum')?.parallelism, oracle.parallelism);
      assert.equal(computePipelinedRegions(result.topology).length, result.regions);
      // logged before any of its tasks deploys
      const initialized = events.findIndex((e) => e.type === 'vertex-initialized' && e.data.vertexId === 'sum');
      const firstDeploy = events.findIndex((e) => e.type === 'task-deployed' && e.data.executionVertexId.startsWith('sum#'));
      assert.ok(initialized >= 0 && initialized < firstDeploy);
      assert.ok(count < 1000 ? oracle.parallelism < MAX : oracle.parallelism > 1, `parallelism ${oracle.parallelism} follows the data volume`);
    });
  }

  it('joins and aggregates exactly when both are decided at run time, and sizes a generated source by defaultSourceParallelism', async () => {
    const left = rows(2000);
    const right = Array.from({ length: 97 }, (_, i) => ({ key: `k${i}`, weight: i + 1 }));
    const { result, events } = await run((ctx) => {
      const joined = ctx
        .fromArray(left, { name: 'left' })
        .keyBy((r) => r.key.replace(/x+$/, ''))
        .join(ctx.fromArray(right, { name: 'right' }).keyBy((r) => r.key), (l, r) => ({ key: r.key, n: l.n * r.weight }), { name: 'join' });
      joined.keyBy((r) => r.key).aggregate(sumAggregator, { name: 'total' }).collect('totals');
    });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    const weights = new Map(right.map((r) => [r.key, r.weight]));
    const expected = sums(left.map((l) => ({ key: l.key.replace(/x+$/, ''), n: l.n * (weights.get(l.key.replace(/x+$/, '')) ?? 0) })));
    assert.deepEqual([...(result.collected['totals'] as [string, number][])].sort((a, b) => (a[0] < b[0] ? -1 : 1)), expected);
    assert.deepEqual(decisionsOf(events).map((d) => d.vertexId), ['join', 'total']);
    assert.equal(result.vertices.find((v) => v.id === 'left')?.parallelism, 2, 'a generated source gets defaultSourceParallelism');
    // the join's two inputs are read with the same subpartition ranges (one key group lands on one subtask)
    const join = decisionsOf(events)[0];
    assert.deepEqual(join?.inputs?.[0]?.subtasks.map((s) => s.subpartitions), join?.inputs?.[1]?.subtasks.map((s) => s.subpartitions));
    // the summary `weft run` prints names each decision, its bytes and its ranges
    const text = formatRunSummary(result);
    assert.match(text, /\(parallelism auto, /);
    assert.match(text, /adaptive parallelism \(min 1, max 16, [\d.]+ KiB per task\):/);
    assert.match(text, new RegExp(`join +${join?.parallelism} subtasks? decided from [\\d.]+ (B|KiB)\\n +left->join: \\[`));
    assert.match(text, /left +2 subtasks \(fixed before the run\)/);
    assert.deepEqual((runSummaryJson(result)['adaptive'] as { maxParallelism: number }).maxParallelism, MAX);
  });

  it('keeps a decision across a region failover: the restarted subtask reads the range decided before; a producer failing before it restarts the undecided vertex', async () => {
    const values = rows(3000);
    const { result, events } = await run(
      (ctx) => {
        ctx.fromArray(values, { name: 'rows', parallelism: 2 }).keyBy((r) => r.key).aggregate(sumAggregator, { name: 'sum', combine: false }).collect('sums');
      },
      {
        restartStrategy: { type: 'fixed-delay', attempts: 3, delayMs: 1 },
        // rows#0's first attempt, and the first deployed attempt of sum#1 (whose attempt 0 the first failover reset unrun)
        faults: () => {
          const thrown = new Set<string>();
          return {
            taskFault: ({ executionVertexId }) => {
              if ((executionVertexId !== 'sum#1' && executionVertexId !== 'rows#0') || thrown.has(executionVertexId)) return undefined;
              thrown.add(executionVertexId);
              return { kind: 'throw', atRecord: 1 };
            },
          };
        },
      },
    );
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    assert.equal(result.failovers.length, 2, JSON.stringify(result.failovers.map((f) => [f.failedTask, f.tasksToRestart.length, f.error.message])));
    // before the decision: the producer and every reserved subtask of its undecided consumer
    assert.equal(result.failovers[0]?.failedTask, 'rows#0');
    assert.equal(result.failovers[0]?.tasksToRestart.length, 1 + MAX);
    assert.deepEqual(result.failovers[1]?.tasksToRestart, ['sum#1'], 'only the failed subtask: its inputs are still there');
    assert.equal(result.failovers[1]?.tasksTotal, result.tasks, 'skipped subtasks are not counted');
    const decidedAt = events.findIndex((e) => e.type === 'vertex-initialized' && e.data.vertexId === 'sum');
    assert.deepEqual(events.slice(decidedAt).flatMap((e) => (e.type === 'tasks-reset' ? e.data.tasks : [])), ['sum#1']);
    assert.equal(decisionsOf(events).length, 1, 'decided once');
    assert.deepEqual([...(result.collected['sums'] as [string, number][])].sort((a, b) => (a[0] < b[0] ? -1 : 1)), sums(values));
    assert.equal(result.taskAttempts['sum#1'], 2);
  });

  it('refuses bad adaptive options naming the field', async () => {
    const build: JobBuildFunction = (ctx) => ctx.fromArray([1]).collect('x');
    for (const [adaptive, field] of [
      [{ minParallelism: 5, maxParallelism: 2 }, 'adaptive.minParallelism'],
      [{ dataVolumePerTaskBytes: 0 }, 'adaptive.dataVolumePerTaskBytes'],
      [{ maxParallelism: 1.5 }, 'adaptive.maxParallelism'],
      [{ volume: 3 }, 'adaptive.volume'],
    ] as const) {
      await assert.rejects(
        run(build, { adaptive: adaptive as RunJobOptions['adaptive'] }),
        (error: unknown) => isEngineError(error, 'WEFT_ERR_INVALID_ARGUMENT') && error.context['field'] === field,
        field,
      );
    }
  });
});
