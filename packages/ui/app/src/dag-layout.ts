// A layered (Sugiyama-style) layout of a DAG, written for the job graph: longest-path layering (every node one
// layer right of its deepest predecessor), a dummy node on every layer a long edge crosses, then barycentric
// ordering — alternating sweeps that sort each layer by the mean position of its neighbours in the layer just
// fixed — keeping the order with the fewest crossings seen. Pure: no DOM, so it is unit-tested in Node.
// Iterative throughout (no recursion): a cycle, which a job graph never has, leaves its nodes in a last layer.

export interface LayoutEdge {
  readonly source: string;
  readonly target: string;
}

export interface DagLayoutInput {
  readonly nodes: readonly string[];
  readonly edges: readonly LayoutEdge[];
  /** Down-and-up sweep pairs. @defaultValue 8 */
  readonly sweeps?: number;
}

export interface NodePlace {
  readonly layer: number;
  /** Position inside its layer, 0-based. */
  readonly order: number;
}

export interface DagLayout {
  /** Each layer's entries in order: node ids, and dummy ids (`\u0000<edge index>:<k>`) for long edges. */
  readonly layers: readonly (readonly string[])[];
  readonly places: ReadonlyMap<string, NodePlace>;
  /** Per input edge, the places it passes: its source, each dummy, its target. */
  readonly routes: readonly (readonly NodePlace[])[];
  /** Edge crossings between adjacent layers in the chosen order. */
  readonly crossings: number;
}

const DUMMY = '\u0000';

/** Longest-path layer of every node (Kahn's order); nodes left on a cycle go one layer past the last. */
export function longestPathLayers(nodes: readonly string[], edges: readonly LayoutEdge[]): Map<string, number> {
  const indegree = new Map<string, number>(nodes.map((n) => [n, 0]));
  const out = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const e of edges) {
    if (!indegree.has(e.source) || !indegree.has(e.target)) continue;
    indegree.set(e.target, (indegree.get(e.target) as number) + 1);
    (out.get(e.source) as string[]).push(e.target);
  }
  const layer = new Map<string, number>();
  const queue = nodes.filter((n) => indegree.get(n) === 0);
  for (const n of queue) layer.set(n, 0);
  for (let i = 0; i < queue.length; i++) {
    const n = queue[i] as string;
    const next = (layer.get(n) as number) + 1;
    for (const t of out.get(n) as string[]) {
      layer.set(t, Math.max(layer.get(t) ?? 0, next));
      const left = (indegree.get(t) as number) - 1;
      indegree.set(t, left);
      if (left === 0) queue.push(t);
    }
  }
  const last = Math.max(-1, ...layer.values()) + 1;
  for (const n of nodes) if (indegree.get(n) !== 0) layer.set(n, last);
  return layer;
}

/** Crossings between two adjacent layers, given the edges between them as (upper position, lower position). */
function crossingsBetween(pairs: readonly (readonly [number, number])[]): number {
  let count = 0;
  for (let i = 0; i < pairs.length; i++) {
    const [a1, b1] = pairs[i] as readonly [number, number];
    for (let j = i + 1; j < pairs.length; j++) {
      const [a2, b2] = pairs[j] as readonly [number, number];
      if ((a1 - a2) * (b1 - b2) < 0) count++;
    }
  }
  return count;
}

export function layoutDag(input: DagLayoutInput): DagLayout {
  const sweeps = input.sweeps ?? 8;
  const nodes = [...new Set(input.nodes)];
  const known = new Set(nodes);
  const edges = input.edges.filter((e) => known.has(e.source) && known.has(e.target) && e.source !== e.target);
  const layerOf = longestPathLayers(nodes, edges);

  // Segments between adjacent layers, through dummies; chains[e] = the entries edge e passes.
  const chains: string[][] = [];
  const entryLayer = new Map<string, number>(layerOf);
  const segments: [string, string][] = [];
  input.edges.forEach((e, index) => {
    if (!known.has(e.source) || !known.has(e.target) || e.source === e.target) {
      chains.push([]);
      return;
    }
    const from = layerOf.get(e.source) as number;
    const to = layerOf.get(e.target) as number;
    const chain = [e.source];
    // An edge that points back (only on a cycle) is drawn straight, without dummies.
    for (let l = from + 1; l < to; l++) {
      const dummy = `${DUMMY}${index}:${l - from}`;
      entryLayer.set(dummy, l);
      chain.push(dummy);
    }
    chain.push(e.target);
    for (let k = 0; k + 1 < chain.length; k++) segments.push([chain[k] as string, chain[k + 1] as string]);
    chains.push(chain);
  });

  const layerCount = Math.max(0, ...entryLayer.values()) + 1;
  const layers: string[][] = Array.from({ length: nodes.length === 0 ? 0 : layerCount }, () => []);
  // Initial order: nodes in input order, each dummy right after its edge's source's turn.
  for (const n of nodes) layers[layerOf.get(n) as number]?.push(n);
  for (const chain of chains) for (const entry of chain) if (entry.startsWith(DUMMY)) layers[entryLayer.get(entry) as number]?.push(entry);

  const up = new Map<string, string[]>();
  const down = new Map<string, string[]>();
  for (const [a, b] of segments) {
    if ((entryLayer.get(b) as number) !== (entryLayer.get(a) as number) + 1) continue;
    (down.get(a) ?? down.set(a, []).get(a) as string[]).push(b);
    (up.get(b) ?? up.set(b, []).get(b) as string[]).push(a);
  }

  const position = new Map<string, number>();
  const index = (): void => {
    for (const layer of layers) layer.forEach((entry, i) => position.set(entry, i));
  };
  const countCrossings = (): number => {
    let total = 0;
    for (let l = 0; l + 1 < layers.length; l++) {
      const pairs: [number, number][] = [];
      for (const a of layers[l] as string[]) for (const b of down.get(a) ?? []) pairs.push([position.get(a) as number, position.get(b) as number]);
      total += crossingsBetween(pairs);
    }
    return total;
  };
  const reorder = (l: number, neighbours: Map<string, string[]>): void => {
    const layer = layers[l] as string[];
    const key = new Map<string, number>();
    for (const entry of layer) {
      const adjacent = neighbours.get(entry) ?? [];
      // Entries without neighbours on that side keep their place.
      key.set(entry, adjacent.length === 0 ? (position.get(entry) as number) : adjacent.reduce((sum, n) => sum + (position.get(n) as number), 0) / adjacent.length);
    }
    layer.sort((a, b) => (key.get(a) as number) - (key.get(b) as number) || (position.get(a) as number) - (position.get(b) as number));
    layer.forEach((entry, i) => position.set(entry, i));
  };

  index();
  let best = layers.map((layer) => [...layer]);
  let bestCrossings = countCrossings();
  for (let sweep = 0; sweep < sweeps && bestCrossings > 0; sweep++) {
    for (let l = 1; l < layers.length; l++) reorder(l, up);
    for (let l = layers.length - 2; l >= 0; l--) reorder(l, down);
    const crossings = countCrossings();
    if (crossings < bestCrossings) {
      bestCrossings = crossings;
      best = layers.map((layer) => [...layer]);
    }
  }

  const places = new Map<string, NodePlace>();
  best.forEach((layer, l) => layer.forEach((entry, order) => places.set(entry, { layer: l, order })));
  const routes = chains.map((chain) => chain.map((entry) => places.get(entry) as NodePlace));
  return { layers: best, places, routes, crossings: bestCrossings };
}
