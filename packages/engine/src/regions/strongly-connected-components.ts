/** A directed graph in compressed sparse row form: the successors of node `v` are `targets[offsets[v] .. offsets[v+1])`. */
export interface CsrGraph {
  readonly nodeCount: number;
  readonly offsets: Int32Array;
  readonly targets: Int32Array;
}

/** Builds a CsrGraph from parallel edge arrays (`from[i] → to[i]` for i < edgeCount). */
export function buildCsrGraph(nodeCount: number, from: Int32Array, to: Int32Array, edgeCount: number): CsrGraph {
  const offsets = new Int32Array(nodeCount + 1);
  for (let i = 0; i < edgeCount; i++) {
    const slot = (from[i] as number) + 1;
    offsets[slot] = (offsets[slot] as number) + 1;
  }
  for (let v = 0; v < nodeCount; v++) offsets[v + 1] = (offsets[v + 1] as number) + (offsets[v] as number);
  const fill = offsets.slice(0, nodeCount);
  const targets = new Int32Array(edgeCount);
  for (let i = 0; i < edgeCount; i++) {
    const f = from[i] as number;
    const at = fill[f] as number;
    targets[at] = to[i] as number;
    fill[f] = at + 1;
  }
  return { nodeCount, offsets, targets };
}

/**
 * Tarjan's strongly connected components, iterative (no recursion, so no stack limit on 10^5+ nodes).
 * Returns `component[v]`: a component number per node, numbered 0.. in the order components complete
 * (a reverse topological order of the condensation).
 */
export function stronglyConnectedComponents(graph: CsrGraph): { componentOf: Int32Array; componentCount: number } {
  const { nodeCount: n, offsets, targets } = graph;
  const index = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack = new Int32Array(n);
  let stackTop = 0;
  const callNode = new Int32Array(n);
  const callEdge = new Int32Array(n);
  const componentOf = new Int32Array(n).fill(-1);
  let nextIndex = 0;
  let componentCount = 0;

  for (let root = 0; root < n; root++) {
    if (index[root] !== -1) continue;
    let depth = 0;
    callNode[0] = root;
    callEdge[0] = offsets[root] as number;
    index[root] = low[root] = nextIndex++;
    stack[stackTop++] = root;
    onStack[root] = 1;
    while (depth >= 0) {
      const v = callNode[depth] as number;
      const edge = callEdge[depth] as number;
      if (edge < (offsets[v + 1] as number)) {
        callEdge[depth] = edge + 1;
        const w = targets[edge] as number;
        if (index[w] === -1) {
          index[w] = low[w] = nextIndex++;
          stack[stackTop++] = w;
          onStack[w] = 1;
          depth++;
          callNode[depth] = w;
          callEdge[depth] = offsets[w] as number;
        } else if (onStack[w] === 1 && (index[w] as number) < (low[v] as number)) {
          low[v] = index[w] as number;
        }
        continue;
      }
      // v is done: pop a component if v is its root, then return to the caller.
      if (low[v] === index[v]) {
        let w: number;
        do {
          w = stack[--stackTop] as number;
          onStack[w] = 0;
          componentOf[w] = componentCount;
        } while (w !== v);
        componentCount++;
      }
      depth--;
      if (depth >= 0) {
        const parent = callNode[depth] as number;
        if ((low[v] as number) < (low[parent] as number)) low[parent] = low[v] as number;
      }
    }
  }
  return { componentOf, componentCount };
}
