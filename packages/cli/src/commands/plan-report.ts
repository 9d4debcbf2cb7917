import type { ExecutionTopology, PipelinedRegions } from '@weft/engine';

export interface PlanReportInput {
  readonly path: string;
  readonly topology: ExecutionTopology;
  readonly regions: PipelinedRegions;
  readonly failure?: {
    readonly failedVertex: string;
    readonly lost: readonly string[];
    readonly strategy: string;
    /** Execution vertex indexes to restart. */
    readonly restart: Int32Array;
  };
}

const MAX_REGIONS_LISTED = 20;
const MAX_IDS_LISTED = 8;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function listIds(topology: ExecutionTopology, members: ArrayLike<number>): string {
  const shown: string[] = [];
  for (let k = 0; k < Math.min(members.length, MAX_IDS_LISTED); k++) shown.push(topology.executionVertexId(members[k] as number));
  const more = members.length - shown.length;
  return more > 0 ? `${shown.join(', ')}, … (+${more} more)` : shown.join(', ');
}

function percent(part: number, whole: number): string {
  const value = (100 * part) / whole;
  return `${value >= 10 || value === 0 ? value.toFixed(0) : value.toPrecision(2)}%`;
}

/** Region sizes: every size when few, else min/median/max and the commonest sizes. */
function describeSizes(regions: PipelinedRegions): string {
  const sizes = Array.from({ length: regions.regionCount }, (_, r) => regions.sizeOf(r));
  if (sizes.length <= MAX_REGIONS_LISTED) return sizes.join(', ');
  const sorted = [...sizes].sort((a, b) => a - b);
  const counts = new Map<number, number>();
  for (const s of sizes) counts.set(s, (counts.get(s) ?? 0) + 1);
  const common = [...counts].sort((a, b) => b[1] - a[1] || b[0] - a[0]).slice(0, 5);
  const median = sorted[Math.floor(sorted.length / 2)] as number;
  return `min ${sorted[0]}, median ${median}, max ${sorted[sorted.length - 1]}; commonest: ${common.map(([s, c]) => `${c} × ${s}`).join(', ')}`;
}

/** The human-readable `weft plan` output. */
export function formatPlanReport(input: PlanReportInput): string {
  const { topology, regions, failure } = input;
  const tasks = topology.executionVertexCount;
  const lines = [
    `Topology ${input.path}: ${plural(topology.vertices.length, 'job vertex').replace('vertexs', 'vertices')}, ${plural(tasks, 'task')}, ${plural(topology.edges.length, 'edge')}, ${plural(topology.partitionCount, 'result partition')}`,
    `Pipelined regions: ${regions.regionCount}`,
    `  sizes: ${describeSizes(regions)}`,
  ];
  for (let r = 0; r < Math.min(regions.regionCount, MAX_REGIONS_LISTED); r++) {
    lines.push(`  region ${r} (${plural(regions.sizeOf(r), 'task')}): ${listIds(topology, regions.membersOf(r))}`);
  }
  if (regions.regionCount > MAX_REGIONS_LISTED) lines.push(`  … and ${regions.regionCount - MAX_REGIONS_LISTED} more regions (--json lists all)`);
  if (failure !== undefined) {
    const touched = new Set<number>();
    for (const v of failure.restart) touched.add(regions.regionOf[v] as number);
    const lost = failure.lost.length === 0 ? '' : `, lost ${failure.lost.join(', ')}`;
    lines.push(
      `Failure of ${failure.failedVertex} (strategy ${failure.strategy}${lost}):`,
      `  restart ${failure.restart.length} of ${plural(tasks, 'task')} (${percent(failure.restart.length, tasks)}) in ${plural(touched.size, 'region')}: ${listIds(topology, failure.restart)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
