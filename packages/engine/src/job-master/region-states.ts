import type { Logger } from '@weft/shuffle-api';
import type { TaskExecutor } from '../executor/task-executor.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { RegionDependencies } from './region-dependencies.js';

/** The states of a pipelined region while its job runs. */
export const RegionState = {
  WAITING: 0,
  READY: 1,
  DEPLOYING: 2,
  RUNNING: 3,
  FINISHED: 4,
  CANCELLING: 5,
} as const;

export type RegionState = (typeof RegionState)[keyof typeof RegionState];

const NAMES = ['waiting', 'ready', 'deploying', 'running', 'finished', 'cancelling'] as const;

/**
 * Where each pipelined region of a job stands, for its job master: its state (`waiting → ready →
 * deploying → running → finished`, or `cancelling` on its way to a restart or the job's end, every change
 * logged as `from -> to`), the partitions it still waits for (`pending`), its tasks not finished yet
 * (`remaining`) and not stopped yet (`active`), the executors whose slots it holds (one, or several for a
 * region spread over executors), and a `version` that each
 * cancellation bumps (a deployment under way that sees another version gives up). A region is ready when
 * every partition it waits for (RegionDependencies) is finished; ready regions queue in the order they
 * became ready.
 */
export class RegionStates {
  readonly pending: Int32Array;
  readonly remaining: Int32Array;
  readonly active: Int32Array;
  readonly version: Int32Array;
  /** Regions finished (a finished region that restarts no longer counts). */
  finished = 0;
  readonly #state: Uint8Array;
  /** How many regions are in each state, by RegionState. */
  readonly #inState = new Int32Array(NAMES.length);
  /** The slots each region holds, one entry per slot. */
  readonly #executor: (readonly TaskExecutor[] | undefined)[];
  readonly #ready: number[] = [];
  readonly #dependencies: RegionDependencies;
  readonly #slots: ExecutorSlots;
  readonly #logger: Logger;

  constructor(dependencies: RegionDependencies, slots: ExecutorSlots, logger: Logger) {
    const regionCount = dependencies.inputsOf.length;
    this.#dependencies = dependencies;
    this.#state = new Uint8Array(regionCount);
    this.#inState[RegionState.WAITING] = regionCount;
    this.pending = new Int32Array(regionCount);
    this.remaining = new Int32Array(regionCount);
    this.active = new Int32Array(regionCount);
    this.version = new Int32Array(regionCount);
    this.#executor = new Array<readonly TaskExecutor[] | undefined>(regionCount);
    this.#slots = slots;
    this.#logger = logger;
  }

  get count(): number {
    return this.#state.length;
  }

  /** How many regions are in `state` now. */
  countIn(state: RegionState): number {
    return this.#inState[state] as number;
  }

  stateOf(region: number): RegionState {
    return this.#state[region] as RegionState;
  }

  set(region: number, state: RegionState): void {
    const from = this.#state[region] as RegionState;
    if (from === state) return;
    this.#state[region] = state;
    const counts = this.#inState;
    counts[from] = (counts[from] as number) - 1;
    counts[state] = (counts[state] as number) + 1;
    this.#logger.debug({ region, from: NAMES[from], to: NAMES[state] }, `${NAMES[from]} -> ${NAMES[state]}`);
  }

  /**
   * The job starts: regions that wait for no partition are ready. A resumed run passes the regions an
   * earlier run finished (they stay finished) and the partitions it kept (`isDone`: not waited for).
   */
  start(resumed?: { readonly isFinished: (region: number) => boolean; readonly isDone: (partition: number) => boolean }): void {
    for (let r = 0; r < this.count; r++) {
      if (resumed?.isFinished(r) === true) {
        this.set(r, RegionState.FINISHED);
        this.finished++;
        continue;
      }
      let pending = 0;
      for (const p of this.#dependencies.inputsOf[r] as Int32Array) if (resumed === undefined || !resumed.isDone(p)) pending++;
      this.pending[r] = pending;
      if (pending === 0) this.setReady(r);
    }
  }

  /** Partition `p` finished: waiting regions it was the last input of become ready, unless `held`. */
  partitionFinished(p: number, held: (region: number) => boolean): void {
    for (const consumer of this.#dependencies.consumersOf(p)) {
      this.pending[consumer] = (this.pending[consumer] as number) - 1;
      if (this.pending[consumer] === 0 && this.#state[consumer] === RegionState.WAITING && !held(consumer)) this.setReady(consumer);
    }
  }

  /**
   * Restarted regions wait again, and so may ready regions not deployed yet: partitions they wait for
   * are produced anew. Their pending counts are taken afresh from `isDone` (the job master's: a finished
   * partition whose producer is itself waiting to restart is not done — it is about to be produced anew).
   */
  waitAgain(restarted: readonly number[], isDone: (partition: number) => boolean): void {
    for (const r of restarted) this.set(r, RegionState.WAITING);
    for (let r = 0; r < this.count; r++) {
      const state = this.#state[r];
      if (state !== RegionState.WAITING && state !== RegionState.READY) continue;
      let pending = 0;
      for (const p of this.#dependencies.inputsOf[r] as Int32Array) if (!isDone(p)) pending++;
      this.pending[r] = pending;
      if (state === RegionState.READY && pending > 0) {
        this.unready(r);
        this.set(r, RegionState.WAITING);
      } else if (state === RegionState.WAITING && pending === 0) {
        this.setReady(r);
      }
    }
  }

  /** The region is ready: it joins the end of the queue. */
  setReady(region: number): void {
    this.set(region, RegionState.READY);
    this.#ready.push(region);
  }

  /** The ready regions, in queue order (a copy). */
  readyRegions(): number[] {
    return [...this.#ready];
  }

  /** Takes a ready region out of the queue (the caller sets its next state). */
  unready(region: number): void {
    this.#ready.splice(this.#ready.indexOf(region), 1);
  }

  /** The region ready longest, taken out of the queue; undefined when none is ready. */
  nextReady(): number | undefined {
    return this.#ready.shift();
  }

  get hasReady(): boolean {
    return this.#ready.length > 0;
  }

  /** The executors whose slots the region holds, each once (empty when it holds none). */
  executorsOf(region: number): TaskExecutor[] {
    return [...new Set(this.#executor[region] ?? [])];
  }

  /** The regions holding a slot of `executor` whose tasks have not all stopped. */
  activeOn(executor: TaskExecutor): number[] {
    const regions: number[] = [];
    this.#executor.forEach((x, r) => {
      if (x !== undefined && x.includes(executor) && (this.active[r] as number) > 0) regions.push(r);
    });
    return regions;
  }

  /** The region is being deployed to `slots` (one executor per slot it takes) for its `tasks` tasks. */
  deploying(region: number, slots: readonly TaskExecutor[], tasks: number): void {
    this.set(region, RegionState.DEPLOYING);
    for (const executor of slots) this.#slots.take(executor);
    this.#executor[region] = [...slots];
    this.remaining[region] = tasks;
    this.active[region] = tasks;
  }

  /** The region gives its slots back (none to an executor lost meanwhile). */
  releaseSlot(region: number): void {
    const slots = this.#executor[region];
    if (slots === undefined) return;
    this.#executor[region] = undefined;
    for (const executor of slots) this.#slots.give(executor);
  }
}
