import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { layoutDag, type LayoutEdge, longestPathLayers } from '../app/src/dag-layout.js';
import { seededRandom } from '@weft/testkit';

/** Crossings of the layout, counted from scratch (every pair of segments between the same two layers). */
function countCrossings(layout: ReturnType<typeof layoutDag>): number {
  const segments: [number, number, number][] = [];
  for (const route of layout.routes) {
    for (let k = 0; k + 1 < route.length; k++) {
      const a = route[k]!;
      const b = route[k + 1]!;
      if (b.layer === a.layer + 1) segments.push([a.layer, a.order, b.order]);
    }
  }
  let count = 0;
  for (let i = 0; i < segments.length; i++) {
    for (let j = i + 1; j < segments.length; j++) {
      const [l1, a1, b1] = segments[i]!;
      const [l2, a2, b2] = segments[j]!;
      if (l1 === l2 && (a1 - a2) * (b1 - b2) < 0) count++;
    }
  }
  return count;
}

function randomDag(random: () => number, nodes: number, edgeChance: number): { nodes: string[]; edges: LayoutEdge[] } {
  const ids = Array.from({ length: nodes }, (_, i) => `n${i}`);
  const edges: LayoutEdge[] = [];
  for (let i = 0; i < nodes; i++) for (let j = i + 1; j < nodes; j++) if (random() < edgeChance) edges.push({ source: ids[i]!, target: ids[j]! });
  // Shuffle the node order so the input order is not already a topological one.
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  return { nodes: ids, edges };
}

describe('layoutDag', () => {
  it('puts every node one layer right of its deepest predecessor (longest path)', () => {
    const layers = longestPathLayers(['a', 'b', 'c', 'd'], [
      { source: 'a', target: 'b' },
      { source: 'b', target: 'c' },
      { source: 'a', target: 'c' },
      { source: 'd', target: 'c' },
    ]);
    assert.deepEqual(Object.fromEntries(layers), { a: 0, d: 0, b: 1, c: 2 });
  });

  it('routes a long edge through one dummy per layer it crosses', () => {
    const layout = layoutDag({ nodes: ['a', 'b', 'c', 'd'], edges: [
      { source: 'a', target: 'b' },
      { source: 'b', target: 'c' },
      { source: 'c', target: 'd' },
      { source: 'a', target: 'd' },
    ] });
    const long = layout.routes[3]!;
    assert.deepEqual(long.map((p) => p.layer), [0, 1, 2, 3]);
    assert.equal(layout.layers[1]!.length, 2);
    assert.equal(layout.layers[2]!.length, 2);
  });

  it('untangles a crossing that the input order makes', () => {
    // Input order puts x2 above x1 although a1→x1 and a2→x2: one crossing, which ordering removes.
    const layout = layoutDag({ nodes: ['a1', 'a2', 'x2', 'x1'], edges: [
      { source: 'a1', target: 'x1' },
      { source: 'a2', target: 'x2' },
    ] });
    assert.equal(layout.crossings, 0);
    assert.equal(countCrossings(layout), 0);
  });

  it('on 300 random DAGs: every edge points right, layers are exact, crossings as counted and never more than the input order', () => {
    const random = seededRandom(17);
    for (let round = 0; round < 300; round++) {
      const dag = randomDag(random, 2 + Math.floor(random() * 14), 0.1 + random() * 0.3);
      const layout = layoutDag(dag);
      const unordered = layoutDag({ ...dag, sweeps: 0 });
      for (const [i, e] of dag.edges.entries()) {
        const route = layout.routes[i]!;
        assert.equal(route[0], layout.places.get(e.source));
        assert.equal(route[route.length - 1], layout.places.get(e.target));
        for (let k = 0; k + 1 < route.length; k++) assert.equal(route[k + 1]!.layer, route[k]!.layer + 1, 'a route steps one layer at a time');
      }
      const layers = longestPathLayers(dag.nodes, dag.edges);
      for (const n of dag.nodes) {
        const preds = dag.edges.filter((e) => e.target === n).map((e) => layers.get(e.source)!);
        assert.equal(layers.get(n), preds.length === 0 ? 0 : Math.max(...preds) + 1);
        assert.equal(layout.places.get(n)!.layer, layers.get(n));
      }
      assert.equal(layout.crossings, countCrossings(layout));
      assert.ok(layout.crossings <= unordered.crossings, `round ${round}: ${layout.crossings} > ${unordered.crossings}`);
      // Each layer's orders are 0..n-1.
      for (const layer of layout.layers) assert.deepEqual(layer.map((entry) => layout.places.get(entry)!.order), layer.map((_, i) => i));
    }
  });

  it('lays out a chain of 2,000 vertices without recursion', () => {
    const nodes = Array.from({ length: 2000 }, (_, i) => `v${i}`);
    const edges = nodes.slice(1).map((n, i) => ({ source: nodes[i]!, target: n }));
    const layout = layoutDag({ nodes, edges });
    assert.equal(layout.layers.length, 2000);
    assert.equal(layout.places.get('v1999')!.layer, 1999);
  });
});
