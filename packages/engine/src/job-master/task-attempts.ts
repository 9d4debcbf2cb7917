import { type ExecutionAttemptId, executionAttemptId, executionVertexId } from '@weft/shuffle-api';
import type { ExecutionTopology } from '../execution/execution-topology.js';
import type { TaskResult } from '../runtime/task-events.js';

/**
 * The attempts of a job's execution vertices, as its job master tracks them: each vertex's current
 * attempt number, whether that attempt was handed to an executor (deployed) and whether it finished, with
 * its result; and the attempts running now. `reset` starts a vertex's next attempt: events of the older
 * one are stale from then on, and its result no longer counts.
 */
export class TaskAttempts {
  /** Attempt ids that reported `running` and no end yet. */
  readonly running = new Set<string>();
  readonly #topology: ExecutionTopology;
  readonly #numbers: Int32Array;
  readonly #done: Uint8Array;
  /** 1 once the current attempt was handed to an executor. */
  readonly #deployed: Uint8Array;
  readonly #results: (TaskResult | undefined)[];
  #finished = 0;
  #deployedTotal = 0;

  constructor(topology: ExecutionTopology) {
    const count = topology.executionVertexCount;
    this.#topology = topology;
    this.#numbers = new Int32Array(count);
    this.#done = new Uint8Array(count);
    this.#deployed = new Uint8Array(count);
    this.#results = new Array<TaskResult | undefined>(count);
  }

  /** The current attempt number of execution vertex `v` (0 until it is reset). */
  numberOf(v: number): number {
    return this.#numbers[v] as number;
  }

  /** `"<vertex>#<i>@<attempt>"` of execution vertex `v`'s current attempt. */
  attemptIdOf(v: number): ExecutionAttemptId {
    const vertex = this.#topology.jobVertexOf(v);
    return executionAttemptId(executionVertexId(vertex.id, v - vertex.firstExecutionVertex), this.#numbers[v] as number);
  }

  /** The execution vertex `attemptId` belongs to when it is that vertex's current attempt; -1 for a stale or unknown one. */
  currentVertexOf(attemptId: string): number {
    const at = attemptId.lastIndexOf('@');
    const v = this.#topology.indexOfExecutionVertex(attemptId.slice(0, at));
    const attempt = Number(attemptId.slice(at + 1));
    return v < 0 || attempt !== this.#numbers[v] ? -1 : v;
  }

  isDone(v: number): boolean {
    return this.#done[v] === 1;
  }

  /** Whether `v`'s current attempt was handed to an executor (it ran, runs, or finished). */
  wasDeployed(v: number): boolean {
    return this.#deployed[v] === 1;
  }

  /** Vertices whose current attempt finished. */
  get finishedCount(): number {
    return this.#finished;
  }

  /** Attempts handed to executors since the job started, restarted ones included. */
  get deployedTotal(): number {
    return this.#deployedTotal;
  }

  /** Vertices whose current attempt was handed to an executor. */
  deployedCount(): number {
    let deployed = 0;
    for (let v = 0; v < this.#deployed.length; v++) deployed += this.#deployed[v] as number;
    return deployed;
  }

  /** The finished current attempt's result of each vertex (undefined where it did not finish). */
  get results(): readonly (TaskResult | undefined)[] {
    return this.#results;
  }

  /** The last attempt number of each vertex, in topology order. */
  numbers(): number[] {
    return Array.from(this.#numbers);
  }

  /** The current attempts of `vertices` were handed to an executor. */
  markDeployed(vertices: ArrayLike<number>): void {
    this.#deployedTotal += vertices.length;
    for (let k = 0; k < vertices.length; k++) this.#deployed[vertices[k] as number] = 1;
  }

  finish(v: number, result: TaskResult): void {
    this.#results[v] = result;
    this.#done[v] = 1;
    this.#finished++;
  }

  /**
   * A resumed run: `v` starts at attempt `attempt`, finished with `result` when an earlier run's finished
   * attempt is kept (it counts as finished, not as deployed by this run).
   */
  restore(v: number, attempt: number, result: TaskResult | undefined): void {
    this.#numbers[v] = attempt;
    if (result !== undefined) this.finish(v, result);
  }

  /** Starts `v`'s next attempt: nothing of the current one counts any more. */
  reset(v: number): void {
    if (this.#done[v] === 1) this.#finished--;
    this.#done[v] = 0;
    this.#deployed[v] = 0;
    this.#results[v] = undefined;
    this.#numbers[v] = (this.#numbers[v] as number) + 1;
  }
}
