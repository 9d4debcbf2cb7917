import { userFunctionError } from '../runtime/user-function-error.js';
import { awaitFinalCheckpoint } from './await-final-checkpoint.js';
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
 * `ctx.generate`: emits `fn(seq)` for the sequence numbers of the splits this subtask owns in increasing
 * order (its splits in turn while they are level), at its share of `ratePerSecond` (its splits' share),
 * until every split passed `count` — or forever. Its position (each split's next number) is operator state
 * (a `split` list): a checkpoint takes it, a restore rewinds to it, and a restore with another parallelism
 * deals the splits anew. In a checkpointed job a subtask that is done — or was dealt no split — waits for
 * the job's final checkpoint before it finishes (awaitFinalCheckpoint), so the others' checkpoints go on.
 *
 * Increasing order holds after a restore too: a checkpoint taken halfway through a round has the first
 * splits one number ahead of the rest, and taking them in split order again would put numbers a round
 * apart out of order for the rest of the stream — further than a watermark bound made for the generated
 * timestamps allows, so a window would drop a record as late (an exactly-once count one short).
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
    const pending = new SplitQueue(this.#splits.filter(([s, n]) => s + n * splits < count), splits);
    // this subtask's rate: its splits' share of the job's
    const perMs = (this.spec.ratePerSecond * this.#splits.length) / splits / 1000;
    const batch = Number.isFinite(perMs) ? Math.max(1, Math.min(BATCH, Math.ceil(perMs))) : BATCH;
    const started = performance.now();
    let emitted = 0;
    while (!pending.empty) {
      for (let b = 0; b < batch && !pending.empty; b++) {
        const entry = pending.first;
        const seq = entry[0] + entry[1] * splits;
        let value: unknown;
        try {
          value = fn(seq);
        } catch (error) {
          throw userFunctionError(this.context, error, 'generator function');
        }
        // (the queue holds the entries of #splits themselves: the position moves with the emit)
        entry[1] += 1;
        if (seq + splits >= count) pending.removeFirst();
        else pending.firstMoved();
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
    // checkpointed: a subtask done (or given no split) stays a running task until the job's final checkpoint, so
    // checkpoints go on while other subtasks generate — an idle one of an unbounded stream, until cancelled
    await awaitFinalCheckpoint(this.context);
  }
}


/** `[split, next]` entries by their next sequence number (`split + next * splits`), lowest first: a binary min-heap. */
class SplitQueue {
  readonly #heap: [number, number][];
  readonly #splits: number;

  constructor(entries: [number, number][], splits: number) {
    this.#splits = splits;
    this.#heap = [...entries].sort((a, b) => this.#seq(a) - this.#seq(b));
  }

  get empty(): boolean {
    return this.#heap.length === 0;
  }

  get first(): [number, number] {
    return this.#heap[0] as [number, number];
  }

  /** The first entry's position moved on: it goes down to its place. */
  firstMoved(): void {
    const heap = this.#heap;
    const entry = heap[0] as [number, number];
    const seq = this.#seq(entry);
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && this.#seq(heap[right] as [number, number]) < this.#seq(heap[left] as [number, number]) ? right : left;
      if (this.#seq(heap[child] as [number, number]) >= seq) break;
      heap[i] = heap[child] as [number, number];
      i = child;
    }
    heap[i] = entry;
  }

  /** The first entry passed the count: it leaves. */
  removeFirst(): void {
    const last = this.#heap.pop() as [number, number];
    if (this.#heap.length === 0) return;
    this.#heap[0] = last;
    this.firstMoved();
  }

  #seq([split, next]: [number, number]): number {
    return split + next * this.#splits;
  }
}
