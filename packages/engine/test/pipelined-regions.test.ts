import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPipelinedRegions, computePipelinedRegions, ExecutionTopology, isEngineError, type JobTopologyJson } from '@weft/engine';
import { canonical, random, randomTopology, referenceRegions } from './support/reference-planner.js';

type Edge = JobTopologyJson['edges'][number];
const e = (source: string, target: string, distribution: Edge['distribution'], partitionType: Edge['partitionType'], id?: string): Edge => ({
  ...(id === undefined ? {} : { id }),
  source,
  target,
  distribution,
  partitionType,
});
const ones = (...ids: string[]) => ids.map((id) => ({ id, parallelism: 1 }));
const regionsOf = (topology: JobTopologyJson) => canonical(computePipelinedRegions(topology));

describe('computePipelinedRegions: docs/DESIGN.md worked examples', () => {
  it('splits v1(4) -PW,PIPELINED-> v2(3) -PW,BLOCKING-> v3(2) plus v1 -PW,PIPELINED-> v3 into two regions', () => {
    const topology: JobTopologyJson = {
      vertices: [
        { id: 'v1', parallelism: 4 },
        { id: 'v2', parallelism: 3 },
        { id: 'v3', parallelism: 2 },
      ],
      edges: [e('v1', 'v2', 'POINTWISE', 'PIPELINED'), e('v2', 'v3', 'POINTWISE', 'BLOCKING'), e('v1', 'v3', 'POINTWISE', 'PIPELINED')],
    };
    assert.deepEqual(regionsOf(topology), [
      ['v1#0', 'v1#1', 'v2#0', 'v2#1', 'v3#0'],
      ['v1#2', 'v1#3', 'v2#2', 'v3#1'],
    ]);
  });

  it('merges regions that form a cycle through blocking edges into one region', () => {
    const topology: JobTopologyJson = {
      vertices: ones('v1', 'v2', 'v3', 'v4'),
      edges: [e('v1', 'v2', 'POINTWISE', 'BLOCKING'), e('v1', 'v3', 'POINTWISE', 'PIPELINED'), e('v2', 'v4', 'POINTWISE', 'BLOCKING'), e('v3', 'v4', 'POINTWISE', 'PIPELINED')],
    };
    assert.deepEqual(regionsOf(topology), [['v1#0', 'v2#0', 'v3#0', 'v4#0']]);
  });
});

describe('computePipelinedRegions', () => {
  it('gives every subtask its own region when all edges are blocking and acyclic', () => {
    const topology: JobTopologyJson = { vertices: [{ id: 'a', parallelism: 2 }, { id: 'b', parallelism: 2 }], edges: [e('a', 'b', 'ALL_TO_ALL', 'BLOCKING')] };
    assert.deepEqual(regionsOf(topology), [['a#0'], ['a#1'], ['b#0'], ['b#1']]);
  });

  it('keeps one region per pointwise pipelined chain', () => {
    const topology: JobTopologyJson = {
      vertices: [{ id: 'a', parallelism: 3 }, { id: 'b', parallelism: 3 }, { id: 'c', parallelism: 3 }],
      edges: [e('a', 'b', 'POINTWISE', 'PIPELINED'), e('b', 'c', 'POINTWISE', 'PIPELINED_BOUNDED')],
    };
    assert.deepEqual(regionsOf(topology), [0, 1, 2].map((i) => [`a#${i}`, `b#${i}`, `c#${i}`]));
  });

  it('fans pointwise pipelined edges in and out by docs/DESIGN.md\'s ranges', () => {
    const topology: JobTopologyJson = {
      vertices: [{ id: 'a', parallelism: 2 }, { id: 'b', parallelism: 5 }],
      edges: [e('a', 'b', 'POINTWISE', 'PIPELINED')],
    };
    // S=2 < T=5: producer 0 feeds [0, 3), producer 1 feeds [3, 5)
    assert.deepEqual(regionsOf(topology), [['a#0', 'b#0', 'b#1', 'b#2'], ['a#1', 'b#3', 'b#4']]);
  });

  it('puts everything an all-to-all pipelined edge touches into one region', () => {
    const topology: JobTopologyJson = {
      vertices: [{ id: 'a', parallelism: 3 }, { id: 'b', parallelism: 2 }, { id: 'c', parallelism: 2 }],
      edges: [e('a', 'b', 'ALL_TO_ALL', 'PIPELINED'), e('b', 'c', 'POINTWISE', 'BLOCKING')],
    };
    assert.deepEqual(regionsOf(topology), [['a#0', 'a#1', 'a#2', 'b#0', 'b#1'], ['c#0'], ['c#1']]);
  });

  it('does not join PIPELINED_APPROXIMATE, HYBRID_FULL or HYBRID_SELECTIVE edges into regions', () => {
    for (const type of ['PIPELINED_APPROXIMATE', 'HYBRID_FULL', 'HYBRID_SELECTIVE', 'BLOCKING_PERSISTENT'] as const) {
      const topology: JobTopologyJson = { vertices: ones('a', 'b'), edges: [e('a', 'b', 'POINTWISE', type)] };
      assert.deepEqual(regionsOf(topology), [['a#0'], ['b#0']], type);
    }
  });

  it('keeps a diamond of pipelined edges in one region and a blocking diamond apart', () => {
    const pipelined: JobTopologyJson = {
      vertices: ones('src', 'left', 'right', 'sink'),
      edges: [e('src', 'left', 'POINTWISE', 'PIPELINED'), e('src', 'right', 'POINTWISE', 'PIPELINED'), e('left', 'sink', 'POINTWISE', 'PIPELINED'), e('right', 'sink', 'POINTWISE', 'PIPELINED')],
    };
    assert.deepEqual(regionsOf(pipelined), [['left#0', 'right#0', 'sink#0', 'src#0']]);
    const blocking: JobTopologyJson = {
      vertices: ones('src', 'left', 'right', 'sink'),
      edges: [e('src', 'left', 'POINTWISE', 'BLOCKING'), e('src', 'right', 'POINTWISE', 'BLOCKING'), e('left', 'sink', 'POINTWISE', 'BLOCKING'), e('right', 'sink', 'POINTWISE', 'BLOCKING')],
    };
    assert.equal(regionsOf(blocking).length, 4);
  });

  it('merges a diamond whose pipelined side closes a cycle over a blocking side', () => {
    // src -PIPELINED-> a -BLOCKING-> sink, src -PIPELINED-> sink: {src, a, sink} pipelined? no: a joins src,
    // sink joins src, so the blocking edge a->sink lies inside one region; nothing else is left.
    const topology: JobTopologyJson = {
      vertices: ones('src', 'a', 'sink'),
      edges: [e('src', 'a', 'POINTWISE', 'PIPELINED'), e('a', 'sink', 'POINTWISE', 'BLOCKING'), e('src', 'sink', 'POINTWISE', 'PIPELINED')],
    };
    assert.deepEqual(regionsOf(topology), [['a#0', 'sink#0', 'src#0']]);
  });

  it('merges a cycle through an all-to-all blocking edge exactly where reachability closes it', () => {
    // a(2) -ALL_TO_ALL,BLOCKING-> b(2); b -POINTWISE,PIPELINED-> c(2); a -POINTWISE,PIPELINED-> c.
    // Raw regions {a#i, c#i} and {b#i}: a#i -> b#j (all) and b#j -> {a#j,c#j}: every region reaches every
    // other, so all merge.
    const topology: JobTopologyJson = {
      vertices: [{ id: 'a', parallelism: 2 }, { id: 'b', parallelism: 2 }, { id: 'c', parallelism: 2 }],
      edges: [e('a', 'b', 'ALL_TO_ALL', 'BLOCKING'), e('b', 'c', 'POINTWISE', 'PIPELINED'), e('a', 'c', 'POINTWISE', 'PIPELINED')],
    };
    assert.deepEqual(regionsOf(topology), [['a#0', 'a#1', 'b#0', 'b#1', 'c#0', 'c#1']]);
    // The same with the blocking edge pointwise: only i with i merges.
    const pointwise: JobTopologyJson = { ...topology, edges: [e('a', 'b', 'POINTWISE', 'BLOCKING'), ...topology.edges.slice(1)] };
    assert.deepEqual(regionsOf(pointwise), [['a#0', 'b#0', 'c#0'], ['a#1', 'b#1', 'c#1']]);
  });

  it('agrees with a naive reference planner on 400 random topologies', () => {
    const next = random(20240611);
    for (let k = 0; k < 400; k++) {
      const topology = randomTopology(next);
      assert.deepEqual(regionsOf(topology), canonical(referenceRegions(topology)), JSON.stringify(topology));
    }
  });

  it('refuses an invalid topology with WEFT_ERR_INVALID_TOPOLOGY', () => {
    assert.throws(() => computePipelinedRegions({ vertices: [{ id: 'a', parallelism: 1 }], edges: [e('a', 'b', 'POINTWISE', 'BLOCKING')] }), (err: unknown) => isEngineError(err, 'WEFT_ERR_INVALID_TOPOLOGY'));
  });
});

describe('pipelined regions at 100,000 execution vertices', () => {
  it('handles all-to-all and pointwise edges, pipelined and blocking, without recursion limits', () => {
    const p = 20_000;
    const topology: JobTopologyJson = {
      vertices: ['source', 'map', 'shuffle', 'reduce', 'sink'].map((id) => ({ id, parallelism: p })),
      edges: [
        e('source', 'map', 'POINTWISE', 'PIPELINED'),
        e('map', 'shuffle', 'ALL_TO_ALL', 'BLOCKING'),
        e('shuffle', 'reduce', 'POINTWISE', 'PIPELINED_BOUNDED'),
        e('reduce', 'sink', 'POINTWISE', 'BLOCKING'),
      ],
    };
    const regions = buildPipelinedRegions(ExecutionTopology.from(topology));
    assert.equal(regions.topology.executionVertexCount, 100_000);
    // source#i+map#i, shuffle#i+reduce#i, sink#i: 3 regions per index
    assert.equal(regions.regionCount, 3 * p);
    assert.deepEqual(Array.from(regions.membersOf(regions.regionOf[regions.topology.indexOfExecutionVertex('reduce#777')] as number), (v) => regions.topology.executionVertexId(v)), ['shuffle#777', 'reduce#777']);
  });

  it('merges a 100,000-region blocking chain closed by a pipelined edge into one region, without recursion', () => {
    // v0 -BLOCKING-> v1 -BLOCKING-> ... -> v99999, plus v0 -PIPELINED-> v99999: the region graph is one
    // cycle 100,000 regions long. A recursive depth-first search would overflow the stack long before.
    const n = 100_000;
    const vertices = Array.from({ length: n }, (_, i) => ({ id: `v${i}`, parallelism: 1 }));
    const edges = vertices.slice(1).map((v, i) => e(`v${i}`, v.id, 'POINTWISE', 'BLOCKING'));
    const open = computePipelinedRegions({ vertices, edges });
    assert.equal(open.length, n);
    const closed = computePipelinedRegions({ vertices, edges: [...edges, e('v0', `v${n - 1}`, 'POINTWISE', 'PIPELINED')] });
    assert.equal(closed.length, 1);
    assert.equal(closed[0]?.length, n);
  });
});
