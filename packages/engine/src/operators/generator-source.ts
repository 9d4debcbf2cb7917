import { userFunctionError } from '../runtime/user-function-error.js';
import { shareOf } from './range-source.js';
import type { OperatorContext, Output, SourceOperator } from './stream-operator.js';

/**
 * Most records emitted between two yields to the event loop (where checkpoint triggers and cancellation get
 * in). A rate-limited source emits about a millisecond's worth at a time instead, when that is fewer: at
 * 10,000 records/s 256 at once would be bursts 25.6 ms apart, not a steady rate.
 */
const BATCH = 256;
/** The operator list state holding `[split, next]`: split `split`'s next sequence number is `split + next * splits`. */
export const GENERATOR_SPLITS_STATE = 'generator-splits';

export interface GeneratorSourceSpec {
  readonly fn: (seq: number) => unknown;
  readonly count: number;
  readonly ratePerSecond: number;
  readonly splits: number;
}

/**
 * `ctx.generate`: emits `fn(seq)` for the sequence numbers of the splits this subtask owns, one per split
 * in turn, at its share of `ratePerSecond` (its splits' share), until every split passed `count` — or
 * forever. Its position (each split's next number) is operator state (a `split` list): a checkpoint takes
 * it, a restore rewinds to it, and a restore with another parallelism deals the splits anew.
 */
export class GeneratorSource implements SourceOperator {
  recordsEmitted = 0;
  /** `[split, next]` of each owned split, in split order. */
  readonly #splits: [number, number][];

  constructor(
    private readonly spec: GeneratorSourceSpec,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    const state = context.state;
    // restored, an empty list means this subtask was dealt no split
    if (state?.restored === true) this.#splits = state.operator().listState<[number, number]>(GENERATOR_SPLITS_STATE, 'split').get().map(([split, next]) => [split, next]);
    else {
      const { from, to } = shareOf(0, spec.splits, context.subtask, context.parallelism);
      this.#splits = [];
      for (let s = from; s < to; s++) this.#splits.push([s, 0]);
    }
  }

  snapshotState(): void {
    this.context.state?.operator().listState<[number, number]>(GENERATOR_SPLITS_STATE, 'split').update(this.#splits.map(([s, n]) => [s, n]));
  }

  async run(): Promise<void> {
    const { fn, count, splits } = this.spec;
    const { backpressure, signal } = this.context;
    const output = this.output;
    const live = this.#splits.filter(([s, n]) => s + n * splits < count);
    // this subtask's rate: its splits' share of the job's
    const perMs = (this.spec.ratePerSecond * this.#splits.length) / splits / 1000;
    const batch = Number.isFinite(perMs) ? Math.max(1, Math.min(BATCH, Math.ceil(perMs))) : BATCH;
    const started = performance.now();
    let emitted = 0;
    let turn = 0;
    while (live.length > 0) {
      for (let b = 0; b < batch && live.length > 0; b++) {
        if (turn >= live.length) turn = 0;
        const entry = live[turn] as [number, number];
        const seq = entry[0] + entry[1] * splits;
        let value: unknown;
        try {
          value = fn(seq);
        } catch (error) {
          throw userFunctionError(this.context, error, 'generator function');
        }
        entry[1] += 1;
        // (`live` holds the entries of #splits themselves: the position moves with the emit)
        if (entry[0] + entry[1] * splits >= count) live.splice(turn, 1);
        else turn++;
        output.collect(value);
        emitted++;
        this.recordsEmitted++;
      }
      if (signal.aborted) throw signal.reason;
      if (backpressure.blocked) await backpressure.wait();
      const aheadMs = Number.isFinite(perMs) ? emitted / perMs - (performance.now() - started) : 0;
      if (aheadMs >= 1) await new Promise<void>((resolve) => setTimeout(resolve, Math.min(aheadMs, 100)));
      else await new Promise<void>((resolve) => setImmediate(resolve));
      if (signal.aborted) throw signal.reason;
    }
  }
}

