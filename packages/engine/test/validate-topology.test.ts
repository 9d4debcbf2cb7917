import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEngineError, MAX_TOPOLOGY_ID_LENGTH, validateTopology } from '@weft/engine';
import { MAX_ID_LENGTH } from '@weft/shuffle-api';

const edge = (source: string, target: string, extra: Record<string, unknown> = {}) => ({ source, target, distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING', ...extra });
const good = () => ({
  vertices: [
    { id: 'a', parallelism: 2 },
    { id: 'b', parallelism: 3 },
  ],
  edges: [edge('a', 'b')] as Record<string, unknown>[],
});

/** Asserts `value` is refused with WEFT_ERR_INVALID_TOPOLOGY naming `field` (and a message matching `pattern`). */
function refuses(value: unknown, field: string, pattern?: RegExp): void {
  assert.throws(
    () => validateTopology(value),
    (error: unknown) => {
      assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_TOPOLOGY'), `expected WEFT_ERR_INVALID_TOPOLOGY, got ${String(error)}`);
      assert.equal(error.field, field);
      assert.ok(error.message.includes(field), `message names ${field}: ${error.message}`);
      if (pattern !== undefined) assert.match(error.message, pattern);
      return true;
    },
  );
}

describe('validateTopology', () => {
  it('accepts a good topology, fills in the default edge id and drops unknown fields', () => {
    const input = good();
    (input.vertices[0] as Record<string, unknown>)['note'] = 'ignored';
    const result = validateTopology(input);
    assert.deepEqual(result, {
      vertices: [
        { id: 'a', parallelism: 2 },
        { id: 'b', parallelism: 3 },
      ],
      edges: [{ id: 'a->b', source: 'a', target: 'b', distribution: 'ALL_TO_ALL', partitionType: 'BLOCKING' }],
    });
  });

  it('keeps an explicit edge id', () => {
    const input = good();
    input.edges = [edge('a', 'b', { id: 'shuffle' })];
    assert.equal(validateTopology(input).edges[0]?.id, 'shuffle');
  });

  it('orders vertices topologically, producers first', () => {
    const result = validateTopology({ vertices: [{ id: 'sink', parallelism: 1 }, { id: 'map', parallelism: 1 }, { id: 'src', parallelism: 1 }], edges: [edge('map', 'sink'), edge('src', 'map')] });
    assert.deepEqual(result.vertices.map((v) => v.id), ['src', 'map', 'sink']);
  });

  it('refuses a value that is not an object, and missing or mistyped top-level fields', () => {
    refuses(null, 'topology');
    refuses([], 'topology');
    refuses({ edges: [] }, 'vertices', /missing/);
    refuses({ vertices: {}, edges: [] }, 'vertices');
    refuses({ vertices: [], edges: [] }, 'vertices', /at least one vertex/);
    refuses({ vertices: [{ id: 'a', parallelism: 1 }] }, 'edges', /missing/);
    refuses({ vertices: [{ id: 'a', parallelism: 1 }], edges: 'none' }, 'edges');
  });

  it('refuses a parallelism below 1, fractional, or not a number', () => {
    for (const bad of [0, -3, 1.5, '2', null, Number.NaN]) {
      const input = good();
      (input.vertices[1] as Record<string, unknown>)['parallelism'] = bad;
      refuses(input, 'vertices[1].parallelism');
    }
    refuses({ vertices: [{ id: 'a' }], edges: [] }, 'vertices[0].parallelism', /missing/);
  });

  it('refuses a topology with more execution vertices than the limit', () => {
    assert.throws(
      () => validateTopology(good(), { maxExecutionVertices: 4 }),
      (e: unknown) => isEngineError(e, 'WEFT_ERR_INVALID_TOPOLOGY') && e.field === 'vertices[1].parallelism',
    );
  });

  it('refuses missing, empty, unsafe and duplicate vertex ids', () => {
    refuses({ vertices: [{ parallelism: 1 }], edges: [] }, 'vertices[0].id', /missing/);
    refuses({ vertices: [{ id: '', parallelism: 1 }], edges: [] }, 'vertices[0].id', /empty/);
    refuses({ vertices: [{ id: 7, parallelism: 1 }], edges: [] }, 'vertices[0].id', /string/);
    refuses({ vertices: [{ id: 'a/b', parallelism: 1 }], edges: [] }, 'vertices[0].id', /separator/);
    refuses({ vertices: [{ id: 'a#1', parallelism: 1 }], edges: [] }, 'vertices[0].id', /#/);
    refuses({ vertices: [{ id: 'a', parallelism: 1 }, { id: 'a', parallelism: 2 }], edges: [] }, 'vertices[1].id', /duplicate vertex id "a" \(also vertices\[0\]\)/);
  });

  it('refuses ids that cannot become partition ids and storage keys, saying why ids are restricted', () => {
    const rules = /\(vertex and edge ids become parts of execution vertex ids, result partition ids and storage keys, so each is 1 to 480 characters without "\/", "\\", "\.\.", "#" or control characters\)$/;
    const bad: [string, RegExp][] = [
      ['a/b', /path separator/],
      ['a\\b', /path separator/],
      ['a..b', /must not contain "\.\."/],
      ['a#1', /must not contain "#"/],
      ['tab\there', /control characters/],
      ['next\u0085line', /control characters/],
      ['line\u2028separator', /control characters/],
      ['x'.repeat(MAX_TOPOLOGY_ID_LENGTH + 1), /longer than 480 characters \(481\)/],
    ];
    for (const [id, problem] of bad) {
      refuses({ vertices: [{ id, parallelism: 1 }], edges: [] }, 'vertices[0].id', problem);
      refuses({ vertices: [{ id, parallelism: 1 }], edges: [] }, 'vertices[0].id', rules);
      refuses({ vertices: [{ id: 'a', parallelism: 1 }, { id: 'b', parallelism: 1 }], edges: [edge('a', 'b', { id })] }, 'edges[0].id', rules);
    }
    refuses({ vertices: [{ id: 'a', parallelism: 1 }], edges: [edge('a', 'a/b')] }, 'edges[0].target', rules);
    const longest = 'y'.repeat(MAX_TOPOLOGY_ID_LENGTH);
    assert.equal(MAX_TOPOLOGY_ID_LENGTH + '#2147483647@2147483647'.length <= MAX_ID_LENGTH, true, 'room for a subtask and an attempt');
    assert.equal(validateTopology({ vertices: [{ id: longest, parallelism: 1 }, { id: 'é日本 ok-._~', parallelism: 1 }], edges: [] }).vertices[0]?.id, longest);
  });

  it('refuses an edge naming an unknown vertex', () => {
    const input = good();
    input.edges = [edge('a', 'b'), edge('a', 'c', { id: 'x' })];
    refuses(input, 'edges[1].target', /unknown vertex "c"/);
    input.edges = [edge('z', 'b')];
    refuses(input, 'edges[0].source', /unknown vertex "z"/);
  });

  it('refuses unknown enums, naming the field and the accepted values', () => {
    const input = good();
    input.edges = [edge('a', 'b'), edge('a', 'b', { id: 'e1' }), edge('a', 'b', { id: 'e2' }), edge('a', 'b', { id: 'e3', partitionType: 'STREAMING' })];
    refuses(input, 'edges[3].partitionType', /unknown partition type "STREAMING"; expected one of PIPELINED, .*HYBRID_SELECTIVE/);
    input.edges = [edge('a', 'b', { distribution: 'BROADCAST' })];
    refuses(input, 'edges[0].distribution', /expected one of ALL_TO_ALL, POINTWISE/);
    input.edges = [{ source: 'a', target: 'b', distribution: 'POINTWISE' }];
    refuses(input, 'edges[0].partitionType', /missing/);
  });

  it('refuses duplicate edge ids, explaining the default id', () => {
    const input = good();
    input.edges = [edge('a', 'b'), edge('a', 'b')];
    refuses(input, 'edges[1].id', /duplicate edge id "a->b".*explicit "id".*edges\[0\]/);
    input.edges = [edge('a', 'b', { id: 'x' }), edge('b', 'a', { id: 'x' })];
    refuses(input, 'edges[1].id', /duplicate edge id "x"/);
  });

  it('refuses a cycle in the job graph and names it', () => {
    refuses({ vertices: [{ id: 'a', parallelism: 1 }], edges: [edge('a', 'a')] }, 'edges[0]', /cycle in the job graph: a -> a/);
    const vertices = ['a', 'b', 'c', 'd'].map((id) => ({ id, parallelism: 1 }));
    refuses({ vertices, edges: [edge('a', 'b'), edge('b', 'c'), edge('c', 'd'), edge('d', 'b')] }, 'edges[3]', /cycle in the job graph: (b -> c -> d -> b|c -> d -> b -> c|d -> b -> c -> d)/);
  });

  it('finds a cycle that lies upstream of other vertices', () => {
    const vertices = ['x', 'y', 'z', 'w'].map((id) => ({ id, parallelism: 1 }));
    refuses({ vertices, edges: [edge('x', 'y'), edge('y', 'x', { id: 'back' }), edge('y', 'z'), edge('z', 'w')] }, 'edges[1]', /x -> y -> x|y -> x -> y/);
  });
});
