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

/** Region sizes are listed one by one up to this many regions, summarised beyond (the regions are all listed). */
const MAX_SIZES_LISTED = 20;
/** Lines are wrapped to this width; a list continues on lines indented under its first. */
const WIDTH = 100;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `head` followed by every id, comma-separated, wrapped at WIDTH with continuation lines indented by `indent`. */
function wrappedList(head: string, ids: Iterable<string>, indent: string): string[] {
  const lines: string[] = [];
  let line = head;
  let first = true;
  for (const id of ids) {
    const piece = first ? id : `, ${id}`;
    if (!first && line.length + piece.length + 1 > WIDTH) {
      lines.push(`${line},`);
      line = `${indent}${id}`;
    } else {
      line += piece;
    }
    first = false;
  }
  lines.push(line);
  return lines;
}

function* idsOf(topology: ExecutionTopology, members: ArrayLike<number>): Generator<string> {
  for (let k = 0; k < members.length; k++) yield topology.executionVertexId(members[k] as number);
}

function percent(part: number, whole: number): string {
  const value = (100 * part) / whole;
  return `${value >= 10 || value === 0 ? value.toFixed(0) : value.toPrecision(2)}%`;
}

/** Region sizes: every size when few, else min/median/max and the commonest sizes. */
function describeSizes(regions: PipelinedRegions): string {
  const sizes = Array.from({ length: regions.regionCount }, (_, r) => regions.sizeOf(r));
  if (sizes.length <= MAX_SIZES_LISTED) return sizes.join(', ');
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
  for (let r = 0; r < regions.regionCount; r++) {
    lines.push(...wrappedList(`  region ${r} (${plural(regions.sizeOf(r), 'task')}): `, idsOf(topology, regions.membersOf(r)), '      '));
  }
  if (failure !== undefined) {
    const touched = new Set<number>();
    for (const v of failure.restart) touched.add(regions.regionOf[v] as number);
    const lost = failure.lost.length === 0 ? '' : `, lost ${failure.lost.join(', ')}`;
    lines.push(
      `Failure of ${failure.failedVertex} (strategy ${failure.strategy}${lost}):`,
      ...wrappedList(`  restart ${failure.restart.length} of ${plural(tasks, 'task')} (${percent(failure.restart.length, tasks)}) in ${plural(touched.size, 'region')}: `, idsOf(topology, failure.restart), '      '),
    );
  }
  return `${lines.join('\n')}\n`;
}
