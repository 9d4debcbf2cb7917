import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pointwiseConsumersOf, pointwiseProducersOf } from '@weft/shuffle-api';
import { ExecutionTopology, isEngineError } from '@weft/engine';

const topology = () =>
  ExecutionTopology.from({
    vertices: [
      { id: 'sink', parallelism: 2 },
      { id: 'src', parallelism: 3 },
    ],
    edges: [
      { id: 'data', source: 'src', target: 'sink', distribution: 'POINTWISE', partitionType: 'BLOCKING' },
      { source: 'src', target: 'sink', distribution: 'ALL_TO_ALL', partitionType: 'PIPELINED' },
    ],
  });

describe('ExecutionTopology', () => {
  it('numbers execution vertices job vertex by job vertex in topological order', () => {
    const t = topology();
    assert.equal(t.executionVertexCount, 5);
    assert.deepEqual(t.executionVertexIds(), ['src#0', 'src#1', 'src#2', 'sink#0', 'sink#1']);
    assert.equal(t.indexOfExecutionVertex('sink#1'), 4);
    assert.equal(t.executionVertexId(3), 'sink#0');
  });

  it('names one result partition per producer subtask per edge, "<edgeId>#<i>"', () => {
    const t = topology();
    assert.equal(t.partitionCount, 6);
    assert.deepEqual(Array.from({ length: 6 }, (_, p) => t.resultPartitionId(p)), ['data#0', 'data#1', 'data#2', 'src->sink#0', 'src->sink#1', 'src->sink#2']);
    assert.equal(t.indexOfResultPartition('src->sink#2'), 5);
    assert.equal(t.edgeOfPartition(4).id, 'src->sink');
  });

  it('answers -1 for ids it does not have, and throws naming the field when asked to require them', () => {
    const t = topology();
    for (const id of ['src#3', 'src#-1', 'src#01', 'nope#0', 'src', '#0', 'src#1.0']) assert.equal(t.indexOfExecutionVertex(id), -1, id);
    for (const id of ['data#3', 'data', 'x#0']) assert.equal(t.indexOfResultPartition(id), -1, id);
    assert.throws(() => t.requireExecutionVertex('src#3', '--fail'), (e: unknown) => isEngineError(e, 'WEFT_ERR_UNKNOWN_EXECUTION_VERTEX') && e.field === '--fail' && /#0\.\.#2/.test(e.message));
    assert.throws(() => t.requireResultPartition('data#7', '--lost'), (e: unknown) => isEngineError(e, 'WEFT_ERR_UNKNOWN_PARTITION') && e.field === '--lost' && /#0\.\.#2/.test(e.message));
  });

  it('reports ALL_TO_ALL as full ranges and POINTWISE by docs/DESIGN.md\'s rule, both ways', () => {
    const t = topology();
    const pointwise = t.edge('data');
    const all = t.edge('src->sink');
    assert.ok(pointwise && all);
    assert.deepEqual(t.consumersOf(all, 1), { start: 0, end: 2 });
    assert.deepEqual(t.producersOf(all, 0), { start: 0, end: 3 });
    // S=3 > T=2: consumer j reads [j*3/2, (j+1)*3/2) → 0:[0,1), 1:[1,3)
    assert.deepEqual(t.producersOf(pointwise, 0), { start: 0, end: 1 });
    assert.deepEqual(t.producersOf(pointwise, 1), { start: 1, end: 3 });
    assert.deepEqual(t.consumersOf(pointwise, 2), { start: 1, end: 2 });
  });

  it('builds 100,000 execution vertices without materialising all-to-all pairs', () => {
    const t = ExecutionTopology.from({
      vertices: [{ id: 'a', parallelism: 50_000 }, { id: 'b', parallelism: 50_000 }],
      edges: [{ source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }],
    });
    assert.equal(t.executionVertexCount, 100_000);
    assert.equal(t.partitionCount, 50_000);
    assert.equal(t.indexOfExecutionVertex('b#49999'), 99_999);
  });
});

/** docs/DESIGN.md's POINTWISE rule, enumerated pair by pair. */
function designPairs(s: number, t: number): Set<string> {
  const pairs = new Set<string>();
  if (s === t) for (let i = 0; i < s; i++) pairs.add(`${i}>${i}`);
  else if (s > t) {
    for (let j = 0; j < t; j++) for (let i = Math.floor((j * s) / t); i < Math.floor(((j + 1) * s) / t); i++) pairs.add(`${i}>${j}`);
  } else {
    for (let i = 0; i < s; i++) for (let j = Math.floor((i * t + s - 1) / s); j < Math.floor(((i + 1) * t + s - 1) / s); j++) pairs.add(`${i}>${j}`);
  }
  return pairs;
}

describe('shuffle-api pointwise helpers (used by the expansion)', () => {
  it('agree with docs/DESIGN.md\'s rule from both sides for every S, T up to 40', () => {
    for (let s = 1; s <= 40; s++) {
      for (let t = 1; t <= 40; t++) {
        const expected = designPairs(s, t);
        const fromProducers = new Set<string>();
        const fromConsumers = new Set<string>();
        for (let i = 0; i < s; i++) {
          const r = pointwiseConsumersOf(i, s, t);
          for (let j = r.start; j < r.end; j++) fromProducers.add(`${i}>${j}`);
        }
        for (let j = 0; j < t; j++) {
          const r = pointwiseProducersOf(j, s, t);
          for (let i = r.start; i < r.end; i++) fromConsumers.add(`${i}>${j}`);
        }
        assert.deepEqual(fromProducers, expected, `S=${s} T=${t}`);
        assert.deepEqual(fromConsumers, expected, `S=${s} T=${t}`);
      }
    }
  });

  it('refuse an index outside [0, count)', () => {
    assert.throws(() => pointwiseConsumersOf(3, 3, 3));
    assert.throws(() => pointwiseConsumersOf(-1, 2, 4));
    assert.throws(() => pointwiseConsumersOf(2, 2, 4));
    assert.throws(() => pointwiseProducersOf(2, 4, 2));
    assert.throws(() => pointwiseProducersOf(0.5, 4, 2));
  });
});
