import type { TaskExecutor } from '../executor/task-executor.js';
import type { ExecutionJobEdge, ExecutionTopology } from '../execution/execution-topology.js';
import type { PipelinedRegions } from '../regions/pipelined-regions.js';

/**
 * Where one deployment of a pipelined region runs: the slots it takes and the executor of each task.
 * A region whose tasks all run on one executor exchanges pipelined data through that executor's own
 * pipelined shuffle (its RegionRunner registers the partitions); a `spread` one has tasks on several
 * executors, and the job master registers its pipelined partitions, each at its producer's executor.
 */
export interface RegionPlacement {
  /** One entry per slot the region holds (an executor with two of its slots appears twice). */
  readonly slots: readonly TaskExecutor[];
  /** The executor of each member of the region, in `membersOf(region)` order. */
  readonly executorOfMember: readonly TaskExecutor[];
  /** Tasks on more than one executor. */
  readonly spread: boolean;
}

/** What placing a region needs: the free slots, and whether this region may be spread at all. */
export interface PlaceRegionRequest {
  readonly members: ArrayLike<number>;
  readonly topology: ExecutionTopology;
  /** Executors that take new work with their free slots (ExecutorSlots.available()), most free first or not. */
  readonly free: readonly (readonly [TaskExecutor, number])[];
  /** The job master can register pipelined partitions and the region has no BLOCKING edge inside it. */
  readonly spreadable: boolean;
}

/**
 * Places a pipelined region (Flink schedules a pipelined region as one unit, one slot per parallel
 * subtask, with slot sharing: subtask i of every vertex of the region shares slot i). The region gets up
 * to as many slots as its widest vertex has tasks in it, each taken from the executor with the most free
 * slots left, among executors that serve pipelined partitions to others (`shuffleLocation`); member k of a
 * vertex in the region runs in slot `k mod slots`. It takes what is free (at least one slot) rather than
 * waiting for all of them, so a region never waits for slots another region holds. Without a second
 * slot on such executors — or when the region cannot be spread — it takes the one slot of the executor with
 * the most free slots, as before. Undefined when no executor has a free slot.
 */
export function placeRegion(request: PlaceRegionRequest): RegionPlacement | undefined {
  const { members, topology, free } = request;
  const first = mostFree(free.map(([executor, n]) => [executor, n] as [TaskExecutor, number]));
  if (first === undefined) return undefined;
  const whole = (executor: TaskExecutor): RegionPlacement => ({ slots: [executor], executorOfMember: Array.from(members, () => executor), spread: false });
  if (!request.spreadable) return whole(first);
  // the rank of each member among its vertex's members in the region: its lane before the modulo
  const rank = new Array<number>(members.length);
  const seen = new Map<number, number>();
  let widest = 0;
  for (let i = 0; i < members.length; i++) {
    const vertex = topology.jobVertexOf(members[i] as number).index;
    const k = seen.get(vertex) ?? 0;
    seen.set(vertex, k + 1);
    rank[i] = k;
    widest = Math.max(widest, k + 1);
  }
  const pool = free.filter(([executor, n]) => n > 0 && executor.shuffleLocation !== undefined).map(([executor, n]) => [executor, n] as [TaskExecutor, number]);
  const slots: TaskExecutor[] = [];
  while (slots.length < widest) {
    const next = mostFree(pool);
    if (next === undefined) break;
    slots.push(next);
    const entry = pool.find(([executor]) => executor === next) as [TaskExecutor, number];
    entry[1]--;
  }
  if (new Set(slots).size < 2) return whole(first);
  return { slots, executorOfMember: rank.map((k) => slots[k % slots.length] as TaskExecutor), spread: true };
}

/**
 * The free slots an approximate job's regions may take. When the job started on executors that serve each
 * other's pipelined partitions, the job master registers each approximate partition at its producer's
 * executor and tells consumers anywhere of new attempts; so from then on only executors serving now are
 * offered — a cluster executor replacing its worker process has no location until the new one is ready,
 * and a producer placed there would register its partition where no other executor finds it (its
 * consumers would wait for it until their reconnect timeout). Decided at the first call that sees free
 * slots (every executor fresh); a job on one executor serving nobody (in process) is offered everything.
 */
export class ApproximatePlacement {
  readonly #enabled: boolean;
  #served: boolean | undefined;

  /** `enabled`: the job has PIPELINED_APPROXIMATE edges and its job master can register pipelined partitions. */
  constructor(enabled: boolean) {
    this.#enabled = enabled;
  }

  free(free: readonly (readonly [TaskExecutor, number])[]): readonly (readonly [TaskExecutor, number])[] {
    if (!this.#enabled || free.length === 0) return free;
    this.#served ??= free.some(([executor]) => executor.shuffleLocation !== undefined);
    return this.#served ? free.filter(([executor]) => executor.shuffleLocation !== undefined) : free;
  }
}

/** The executor with the most free slots (the first of equals), if any has one. */
function mostFree(free: readonly (readonly [TaskExecutor, number])[]): TaskExecutor | undefined {
  let best: TaskExecutor | undefined;
  let bestFree = 0;
  for (const [executor, n] of free) {
    if (n > bestFree) {
      best = executor;
      bestFree = n;
    }
  }
  return best;
}

/**
 * Whether region `region` may be spread over executors: no BLOCKING edge runs inside it (a region merged
 * from a cycle of regions can hold one; its consumer waits in the same RegionRunner for the producer to
 * finish, so both must run in one executor).
 */
export function hasNoBlockingEdgeInside(topology: ExecutionTopology, regions: PipelinedRegions, region: number): boolean {
  for (const v of Array.from(regions.membersOf(region))) {
    const vertex = topology.jobVertexOf(v);
    const subtask = v - vertex.firstExecutionVertex;
    for (const e of vertex.inputs) {
      const edge = topology.edges[e] as ExecutionJobEdge;
      if (edge.mustBePipelined || edge.approximate) continue;
      const producers = topology.producersOf(edge, subtask);
      for (let k = producers.start; k < producers.end; k++) if (regions.regionOf[edge.source.firstExecutionVertex + k] === region) return false;
    }
  }
  return true;
}
