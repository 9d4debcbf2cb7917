// A deliberately naive planner for cross-checking: materialises every execution edge (P×Q for ALL_TO_ALL),
// merges regions by transitive closure, and walks failover edge by edge. Fine for small graphs only.
import { pointwiseConsumersOf, resultPartitionTypeProperties } from '@weft/shuffle-api';
import { type JobTopologyJson, validateTopology } from '@weft/engine';
import { seededRandom } from '@weft/testkit';

interface ExecutionEdge {
  readonly producer: string;
  readonly consumer: string;
  readonly partition: string;
  readonly mustBePipelined: boolean;
  readonly reconsumable: boolean;
}

function expand(json: JobTopologyJson): { vertices: string[]; edges: ExecutionEdge[] } {
  const topology = validateTopology(json);
  const parallelism = new Map(topology.vertices.map((v) => [v.id, v.parallelism]));
  const vertices = topology.vertices.flatMap((v) => Array.from({ length: v.parallelism }, (_, i) => `${v.id}#${i}`));
  const edges: ExecutionEdge[] = [];
  for (const e of topology.edges) {
    const s = parallelism.get(e.source) as number;
    const t = parallelism.get(e.target) as number;
    const { mustBePipelined } = resultPartitionTypeProperties(e.partitionType);
    // available for failover: re-readable, or approximate (its consumer reconnects; DESIGN.md)
    const reconsumable = resultPartitionTypeProperties(e.partitionType).reconsumable || e.partitionType === 'PIPELINED_APPROXIMATE';
    for (let i = 0; i < s; i++) {
      const range = e.distribution === 'ALL_TO_ALL' ? { start: 0, end: t } : pointwiseConsumersOf(i, s, t);
      for (let j = range.start; j < range.end; j++) {
        edges.push({ producer: `${e.source}#${i}`, consumer: `${e.target}#${j}`, partition: `${e.id}#${i}`, mustBePipelined, reconsumable });
      }
    }
  }
  return { vertices, edges };
}

export function referenceRegions(json: JobTopologyJson): string[][] {
  const { vertices, edges } = expand(json);
  const parent = new Map(vertices.map((v) => [v, v]));
  const find = (v: string): string => {
    while (parent.get(v) !== v) v = parent.get(v) as string;
    return v;
  };
  for (const e of edges) if (e.mustBePipelined) parent.set(find(e.producer), find(e.consumer));
  const roots = [...new Set(vertices.map(find))];
  const successors = new Map(roots.map((r) => [r, new Set<string>()]));
  for (const e of edges) {
    if (!e.mustBePipelined && find(e.producer) !== find(e.consumer)) successors.get(find(e.producer))?.add(find(e.consumer));
  }
  const reach = new Map<string, Set<string>>();
  for (const r of roots) {
    const seen = new Set<string>([r]);
    const queue = [r];
    while (queue.length > 0) for (const next of successors.get(queue.shift() as string) ?? []) if (!seen.has(next)) (seen.add(next), queue.push(next));
    reach.set(r, seen);
  }
  const merged = new Map<string, string>();
  for (const r of roots) merged.set(r, roots.find((o) => reach.get(r)?.has(o) && reach.get(o)?.has(r)) as string);
  const groups = new Map<string, string[]>();
  for (const v of vertices) {
    const key = merged.get(find(v)) as string;
    groups.set(key, [...(groups.get(key) ?? []), v]);
  }
  return [...groups.values()];
}

export function referenceRestart(json: JobTopologyJson, failed: string, lost: readonly string[] = []): string[] {
  const { vertices, edges } = expand(json);
  const regions = referenceRegions(json);
  const regionOf = new Map<string, number>();
  regions.forEach((members, r) => members.forEach((v) => regionOf.set(v, r)));
  const lostSet = new Set(lost);
  const visited = new Set<number>([regionOf.get(failed) as number]);
  const queue = [...visited];
  while (queue.length > 0) {
    const region = queue.shift() as number;
    for (const v of regions[region] as string[]) {
      for (const e of edges) {
        let next: number | undefined;
        if (e.consumer === v && (!e.reconsumable || lostSet.has(e.partition))) next = regionOf.get(e.producer);
        if (e.producer === v) next = regionOf.get(e.consumer);
        if (next !== undefined && !visited.has(next)) (visited.add(next), queue.push(next));
      }
    }
  }
  return vertices.filter((v) => visited.has(regionOf.get(v) as number));
}

/** Regions as a canonical, comparable value: members sorted, regions sorted. */
export function canonical(regions: readonly (readonly string[])[]): string[][] {
  return regions.map((r) => [...r].sort()).sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

/** A small deterministic PRNG (mulberry32). */
export const random = seededRandom;

const TYPES = ['PIPELINED', 'PIPELINED_BOUNDED', 'PIPELINED_APPROXIMATE', 'BLOCKING', 'BLOCKING_PERSISTENT', 'HYBRID_FULL', 'HYBRID_SELECTIVE'] as const;

/** A random acyclic topology: up to 6 vertices of parallelism 1..6, random edges, distributions and types. */
export function randomTopology(next: () => number): JobTopologyJson {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const count = 1 + Math.floor(next() * 6);
  const vertices = Array.from({ length: count }, (_, i) => ({ id: `v${i}`, parallelism: 1 + Math.floor(next() * 6) }));
  const edges = [];
  for (let i = 0; i < count; i++) {
    for (let j = i + 1; j < count; j++) {
      if (next() < 0.45) {
        edges.push({ source: `v${i}`, target: `v${j}`, distribution: pick(['ALL_TO_ALL', 'POINTWISE'] as const), partitionType: pick(TYPES) });
      }
    }
  }
  return { vertices, edges };
}
