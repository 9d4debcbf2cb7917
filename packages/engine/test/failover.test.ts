import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { computeTasksToRestart, createFailoverStrategy, ExecutionTopology, isEngineError, type JobTopologyJson } from '@weft/engine';
import { random, randomTopology, referenceRestart } from './support/reference-planner.js';

type Edge = JobTopologyJson['edges'][number];
const e = (source: string, target: string, distribution: Edge['distribution'], partitionType: Edge['partitionType'], id?: string): Edge => ({
  ...(id === undefined ? {} : { id }),
  source,
  target,
  distribution,
  partitionType,
});
const ones = (...ids: string[]) => ids.map((id) => ({ id, parallelism: 1 }));
const restart = (topology: JobTopologyJson, failedVertex: string, lost: string[] = [], strategy: 'region' | 'all' = 'region') =>
  [...computeTasksToRestart({ topology, failedVertex, lost, strategy })].sort();

/** DESIGN.md: v1 -rp1-> v3, v2 -rp2-> v3, both BLOCKING. */
const fanIn: JobTopologyJson = { vertices: ones('v1', 'v2', 'v3'), edges: [e('v1', 'v3', 'POINTWISE', 'BLOCKING', 'rp1'), e('v2', 'v3', 'POINTWISE', 'BLOCKING', 'rp2')] };

describe('region failover: DESIGN.md worked examples', () => {
  it('restarts only v3 when v3 fails and its blocking inputs are available', () => {
    assert.deepEqual(restart(fanIn, 'v3#0'), ['v3#0']);
  });

  it('restarts v1 and v3 when v3 fails with rp1 lost', () => {
    assert.deepEqual(restart(fanIn, 'v3#0', ['rp1#0']), ['v1#0', 'v3#0']);
  });

  it('restarts v1, v2 and v3 when v2 fails with rp1 lost', () => {
    assert.deepEqual(restart(fanIn, 'v2#0', ['rp1#0']), ['v1#0', 'v2#0', 'v3#0']);
  });
});

describe('region failover', () => {
  it('restarts the whole pipelined region of the failed task', () => {
    const topology: JobTopologyJson = { vertices: [{ id: 'a', parallelism: 2 }, { id: 'b', parallelism: 2 }], edges: [e('a', 'b', 'POINTWISE', 'PIPELINED')] };
    assert.deepEqual(restart(topology, 'a#1'), ['a#1', 'b#1']);
  });

  it('restarts the producer region of inputs that can never be re-read', () => {
    for (const type of ['HYBRID_SELECTIVE'] as const) {
      const topology: JobTopologyJson = { vertices: ones('a', 'b'), edges: [e('a', 'b', 'POINTWISE', type)] };
      assert.deepEqual(restart(topology, 'b#0'), ['a#0', 'b#0'], type);
    }
  });

  it("follows DESIGN.md's approximate example: an approximate input counts as available, consumers restart transitively", () => {
    const approximate = (from: string, to: string) => e(from, to, 'POINTWISE', 'PIPELINED_APPROXIMATE');
    const topology: JobTopologyJson = { vertices: ones('v1', 'v2', 'v3', 'v4'), edges: [approximate('v1', 'v2'), approximate('v1', 'v3'), approximate('v2', 'v4'), approximate('v3', 'v4')] };
    assert.deepEqual(restart(topology, 'v2#0'), ['v2#0', 'v4#0']);
    assert.deepEqual(restart(topology, 'v1#0'), ['v1#0', 'v2#0', 'v3#0', 'v4#0']);
    assert.deepEqual(restart(topology, 'v4#0', ['v2->v4#0']), ['v2#0', 'v4#0'], 'unless the partition is named lost');
  });

  it('keeps producers of re-readable inputs running (BLOCKING, BLOCKING_PERSISTENT, HYBRID_FULL)', () => {
    for (const type of ['BLOCKING', 'BLOCKING_PERSISTENT', 'HYBRID_FULL'] as const) {
      const topology: JobTopologyJson = { vertices: ones('a', 'b'), edges: [e('a', 'b', 'POINTWISE', type)] };
      assert.deepEqual(restart(topology, 'b#0'), ['b#0'], type);
    }
  });

  it('restarts every consumer region downstream of a restarted producer, transitively', () => {
    const topology: JobTopologyJson = {
      vertices: [{ id: 'a', parallelism: 2 }, { id: 'b', parallelism: 3 }, { id: 'c', parallelism: 1 }],
      edges: [e('a', 'b', 'ALL_TO_ALL', 'BLOCKING'), e('b', 'c', 'ALL_TO_ALL', 'BLOCKING')],
    };
    assert.deepEqual(restart(topology, 'a#0'), ['a#0', 'b#0', 'b#1', 'b#2', 'c#0']);
    assert.deepEqual(restart(topology, 'b#1'), ['b#1', 'c#0']);
  });

  it('follows lost partitions upstream and then downstream again', () => {
    // a -BLOCKING-> b -BLOCKING-> c; c fails and b's partition is lost: b restarts, and b's consumers (c).
    const topology: JobTopologyJson = { vertices: ones('a', 'b', 'c'), edges: [e('a', 'b', 'POINTWISE', 'BLOCKING'), e('b', 'c', 'POINTWISE', 'BLOCKING')] };
    assert.deepEqual(restart(topology, 'c#0', ['b->c#0']), ['b#0', 'c#0']);
    assert.deepEqual(restart(topology, 'c#0', ['b->c#0', 'a->b#0']), ['a#0', 'b#0', 'c#0']);
  });

  it('restarts only the producer of the lost partition among all-to-all inputs', () => {
    const topology: JobTopologyJson = { vertices: [{ id: 'a', parallelism: 3 }, { id: 'b', parallelism: 1 }], edges: [e('a', 'b', 'ALL_TO_ALL', 'BLOCKING')] };
    assert.deepEqual(restart(topology, 'b#0', ['a->b#2']), ['a#2', 'b#0']);
  });

  it('asks the live availability callback about re-readable and approximate partitions only', () => {
    const topology: JobTopologyJson = {
      vertices: [{ id: 'a', parallelism: 2 }, { id: 'p', parallelism: 1 }, { id: 'q', parallelism: 1 }, { id: 'b', parallelism: 1 }],
      edges: [e('a', 'b', 'ALL_TO_ALL', 'BLOCKING'), e('p', 'b', 'POINTWISE', 'PIPELINED_APPROXIMATE'), e('q', 'b', 'POINTWISE', 'PIPELINED')],
    };
    const asked: string[] = [];
    const strategy = (refused: string) =>
      createFailoverStrategy(topology, 'region', {
        isPartitionAvailable: (id) => {
          asked.push(id);
          return id !== refused;
        },
      });
    // q->b is PIPELINED (q and b share a region): never re-readable, never asked
    assert.deepEqual([...strategy('a->b#1').tasksToRestart({ failedVertex: 'b#0' })].sort(), ['a#1', 'b#0', 'q#0'], 'the approximate input is available: its producer is not restarted');
    assert.deepEqual(asked.sort(), ['a->b#0', 'a->b#1', 'p->b#0']);
    // a finished approximate producer's partition lost with its task executor: the producer restarts too
    assert.deepEqual([...strategy('p->b#0').tasksToRestart({ failedVertex: 'b#0' })].sort(), ['b#0', 'p#0', 'q#0']);
  });

  it('agrees with a naive reference on 300 random topologies, failures and losses', () => {
    const next = random(7);
    for (let k = 0; k < 300; k++) {
      const topology = randomTopology(next);
      const execution = ExecutionTopology.from(topology);
      const ids = execution.executionVertexIds();
      const failed = ids[Math.floor(next() * ids.length)] as string;
      const lost: string[] = [];
      for (let p = 0; p < execution.partitionCount; p++) if (next() < 0.15) lost.push(execution.resultPartitionId(p));
      assert.deepEqual(restart(topology, failed, lost), [...referenceRestart(topology, failed, lost)].sort(), `${JSON.stringify(topology)} fail ${failed} lost ${lost.join(',')}`);
    }
  });

  it('refuses an unknown failed vertex or lost partition, naming the argument', () => {
    assert.throws(() => restart(fanIn, 'v3#1'), (err: unknown) => isEngineError(err, 'WEFT_ERR_UNKNOWN_EXECUTION_VERTEX') && err.field === 'failedVertex');
    assert.throws(() => restart(fanIn, 'v3#0', ['rp1#0', 'rp9#0']), (err: unknown) => isEngineError(err, 'WEFT_ERR_UNKNOWN_PARTITION') && err.field === 'lostPartitions[1]');
  });

  it('handles a failure in a 100,000-task job', () => {
    const p = 25_000;
    const topology: JobTopologyJson = {
      vertices: ['a', 'b', 'c', 'd'].map((id) => ({ id, parallelism: p })),
      edges: [e('a', 'b', 'POINTWISE', 'PIPELINED'), e('b', 'c', 'ALL_TO_ALL', 'BLOCKING'), e('c', 'd', 'POINTWISE', 'PIPELINED')],
    };
    const strategy = createFailoverStrategy(topology);
    assert.equal(strategy.verticesToRestart({ failedVertex: 'd#5' }).length, 2);
    // losing one of b's partitions restarts its producer region {a#9, b#9}, whose consumers are every c.
    assert.equal(strategy.verticesToRestart({ failedVertex: 'd#5', lostPartitions: ['b->c#9'] }).length, 2 + 2 * p);
  });
});

describe('restart-all failover', () => {
  it('restarts every task whatever failed', () => {
    assert.deepEqual(restart(fanIn, 'v3#0', [], 'all'), ['v1#0', 'v2#0', 'v3#0']);
  });
});

describe('individual failover', () => {
  it('restarts only the failed task of a job whose tasks share no data', () => {
    const strategy = createFailoverStrategy({ vertices: [{ id: 'a', parallelism: 3 }], edges: [] }, 'individual');
    assert.deepEqual(strategy.tasksToRestart({ failedVertex: 'a#2' }), ['a#2']);
  });

  it('is refused for a job whose tasks exchange data', () => {
    assert.throws(
      () => createFailoverStrategy(fanIn, 'individual'),
      (err: unknown) => isEngineError(err, 'WEFT_ERR_FAILOVER_STRATEGY_NOT_APPLICABLE') && /exchange data/.test(err.message) && /region or all/.test(err.message),
    );
  });

  it('refuses an unknown strategy name', () => {
    assert.throws(() => createFailoverStrategy(fanIn, 'some' as never), (err: unknown) => isEngineError(err, 'WEFT_ERR_INVALID_ARGUMENT') && err.field === 'strategy');
  });
});
