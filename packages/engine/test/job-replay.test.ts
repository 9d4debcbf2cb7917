// Replaying a job event log (docs/DESIGN.md, JobMaster failover): hand-written histories and listings,
// and the tasks that run again written by hand from DESIGN.md's rule — not derived from the planner.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ShuffleDescriptor, StoredPartition } from '@weft/shuffle-api';
import type { LoggedJobEvent } from '../src/event-log/job-event-log.js';
import { replayJobLog } from '../src/event-log/replay-job-log.js';
import { ExecutionTopology } from '../src/execution/execution-topology.js';
import { createFailoverStrategy } from '../src/failover/create-failover-strategy.js';
import { planRecovery, type RecoveryPlan } from '../src/job-master/recovery-plan.js';
import { buildPipelinedRegions } from '../src/regions/pipelined-regions.js';

/** a → b → c, ALL_TO_ALL BLOCKING, parallelism 2: six regions of one task each. */
const TOPOLOGY = {
  vertices: [
    { id: 'a', parallelism: 2 },
    { id: 'b', parallelism: 2 },
    { id: 'c', parallelism: 2 },
  ],
  edges: [
    { source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' },
    { source: 'b', target: 'c', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' },
  ],
};

const METRICS = { recordsIn: 1, recordsOut: 1, outputs: [] };

/** A history of events (seq, epoch 1) from brief tuples. */
function history(events: [string, Record<string, unknown>][]): LoggedJobEvent[] {
  return events.map(([type, data], i) => ({ v: 1, seq: i + 1, epoch: 1, atMs: 1000 + i, type, data }));
}

const SUBMITTED: [string, Record<string, unknown>][] = [
  ['job-submitted', { name: 'abc', jobModule: 'file:///j.ts', jobModuleHash: 'h', args: [], topology: TOPOLOGY, options: null, tasksTotal: 6 }],
  ['vertex-initialized', { vertexId: 'a', parallelism: 2 }],
  ['vertex-initialized', { vertexId: 'b', parallelism: 2 }],
  ['vertex-initialized', { vertexId: 'c', parallelism: 2 }],
];

function finished(task: string, attempt: number, partitions: string[]): [string, Record<string, unknown>][] {
  return [
    ['task-deployed', { executionVertexId: task, attempt }],
    ['task-finished', { executionVertexId: task, attempt, partitions: partitions.map((partitionId) => ({ partitionId, bytes: 10 })), metrics: METRICS, sinks: [], durationMs: 1 }],
  ];
}

function stored(partitionId: string, attempt: number): StoredPartition {
  const descriptor = { shuffleServiceId: 'test', jobId: 'j', partition: { partitionId }, producer: { producerId: `x@${attempt}`, attempt }, details: null } as unknown as ShuffleDescriptor;
  return { descriptor, subpartitionBytes: [5, 5], totalBytes: 10 };
}

function plan(events: LoggedJobEvent[], listing: StoredPartition[]): { plan: RecoveryPlan; topology: ExecutionTopology } {
  const topology = ExecutionTopology.from(TOPOLOGY);
  const regions = buildPipelinedRegions(topology);
  const replayed = replayJobLog('j', events);
  assert.ok(replayed !== undefined);
  const failover = createFailoverStrategy(topology, 'region', { regions });
  return { plan: planRecovery({ topology, regions, failover, replayed, listing, sinkFileExists: () => true }), topology };
}

function ids(topology: ExecutionTopology, vs: Iterable<number>): string[] {
  return [...vs].map((v) => topology.executionVertexId(v)).sort();
}

function attemptsOf(topology: ExecutionTopology, p: RecoveryPlan): Record<string, number> {
  return Object.fromEntries(topology.executionVertexIds().map((t, v) => [t, p.attempts[v] as number]));
}

describe('replaying a job event log', () => {
  it('keeps a, b#0 finished and runs b#1 (a new attempt) and c again when b#1 was running', () => {
    const events = history([...SUBMITTED, ...finished('a#0', 0, ['a->b#0']), ...finished('a#1', 0, ['a->b#1']), ...finished('b#0', 0, ['b->c#0']), ['task-deployed', { executionVertexId: 'b#1', attempt: 0 }]]);
    // b#1's attempt 0 committed before the master died, but its finish was never logged: garbage
    const listing = [stored('a->b#0', 0), stored('a->b#1', 0), stored('b->c#0', 0), stored('b->c#1', 0)];
    const { plan: p, topology } = plan(events, listing);
    assert.deepEqual(ids(topology, p.kept.keys()), ['a#0', 'a#1', 'b#0']);
    assert.deepEqual(ids(topology, p.reset), []);
    assert.deepEqual(attemptsOf(topology, p), { 'a#0': 0, 'a#1': 0, 'b#0': 0, 'b#1': 1, 'c#0': 0, 'c#1': 0 });
    assert.deepEqual(p.missing, []);
    assert.deepEqual(p.garbage.map((s) => s.descriptor.partition.partitionId), ['b->c#1']);
    assert.deepEqual([...p.descriptors.keys()].map((q) => topology.resultPartitionId(q)).sort(), ['a->b#0', 'a->b#1', 'b->c#0']);
  });

  it('resets a finished producer whose partition is missing, with its consumer regions (a#1, b#0, b#1, c run again)', () => {
    const events = history([...SUBMITTED, ...finished('a#0', 0, ['a->b#0']), ...finished('a#1', 0, ['a->b#1']), ...finished('b#0', 0, ['b->c#0']), ['task-deployed', { executionVertexId: 'b#1', attempt: 0 }]]);
    const listing = [stored('a->b#0', 0), stored('b->c#0', 0)]; // a->b#1 was deleted
    const { plan: p, topology } = plan(events, listing);
    // b#1 must read a->b#1: missing, so a#1 restarts with its consumer regions b#0, b#1 and theirs, c#0, c#1
    assert.deepEqual(ids(topology, p.kept.keys()), ['a#0']);
    assert.deepEqual(ids(topology, p.reset), ['a#1', 'b#0']);
    assert.deepEqual(p.missing, ['a->b#1']);
    assert.deepEqual(attemptsOf(topology, p), { 'a#0': 0, 'a#1': 1, 'b#0': 1, 'b#1': 1, 'c#0': 0, 'c#1': 0 });
    assert.deepEqual(p.garbage.map((s) => s.descriptor.partition.partitionId), ['b->c#0']);
  });

  it('needs no partition whose consumers all finished: a missing a->b partition resets nothing once b finished', () => {
    const events = history([...SUBMITTED, ...finished('a#0', 0, ['a->b#0']), ...finished('a#1', 0, ['a->b#1']), ...finished('b#0', 0, ['b->c#0']), ...finished('b#1', 0, ['b->c#1']), ['partitions-released', { partitionIds: ['a->b#0', 'a->b#1'] }]]);
    const { plan: p, topology } = plan(events, [stored('b->c#0', 0), stored('b->c#1', 0)]);
    assert.deepEqual(ids(topology, p.kept.keys()), ['a#0', 'a#1', 'b#0', 'b#1']);
    assert.deepEqual(p.missing, []);
  });

  it('does not keep a finished task that a later tasks-reset names, nor a listed partition of another attempt', () => {
    const events = history([
      ...SUBMITTED,
      ...finished('a#0', 0, ['a->b#0']),
      ...finished('a#1', 0, ['a->b#1']),
      ...finished('b#0', 0, ['b->c#0']),
      ['tasks-reset', { tasks: ['b#0'], reason: 'failover' }],
      ['task-deployed', { executionVertexId: 'b#0', attempt: 1 }],
    ]);
    // a->b#1 listed for attempt 3: not what a#1's logged attempt 0 committed, so it is missing
    const { plan: p, topology } = plan(events, [stored('a->b#0', 0), stored('a->b#1', 3), stored('b->c#0', 0)]);
    assert.deepEqual(ids(topology, p.kept.keys()), ['a#0']);
    assert.deepEqual(ids(topology, p.reset), ['a#1']);
    assert.equal(p.attempts[topology.indexOfExecutionVertex('b#0')], 2);
  });

  it('refuses a history that does not fit the job (another parallelism), so the run restarts cleanly', () => {
    const events = history([...SUBMITTED.slice(0, 1), ['vertex-initialized', { vertexId: 'a', parallelism: 3 }]]);
    assert.throws(() => plan(events, []), (e: { code?: string; message: string }) => e.code === 'WEFT_ERR_EVENT_LOG' && /parallelism 3/.test(e.message));
  });

  it('replays an empty history as a fresh run and refuses one that does not start with job-submitted', () => {
    assert.equal(replayJobLog('j', []), undefined);
    assert.throws(() => replayJobLog('j', history([['task-deployed', { executionVertexId: 'a#0', attempt: 0 }]])), /first event is task-deployed/);
  });
});
