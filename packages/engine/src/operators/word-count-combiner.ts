import type { KeySelector, KeyValue } from '../api/functions.js';
import type { Aggregator } from '../api/logical-graph.js';
import type { MemoryConsumer } from '../memory/memory-manager.js';
import { ByteCountTable } from '../text/byte-count-table.js';
import { countWords } from '../text/count-words.js';
import { CombineOperator } from './combine-operator.js';
import { emitAll, type OperatorContext, type Output, type StreamOperator, type WordCountInput } from './stream-operator.js';

/**
 * The map-side combiner of `keyBy().count()` (each value its own key), which a fused word splitter feeds
 * with UTF-8 text instead of words: it scans the bytes (`countWords`) and counts each word's bytes in a
 * `ByteCountTable` — no string or object per word; strings are made only for the `[word, count]` pairs it
 * emits. Values collected as records (an unfused input) go through the ordinary combiner beside it; both
 * emit at the end. More than `maxKeys` distinct keys in the table, or more bytes than the task's memory
 * budget grants it (what the table grew to: `grownBytes`, its allocation beyond a fixed initial 170 KiB), and
 * it emits what it holds and starts afresh (checked after each chunk of text, so it holds at most that
 * plus one chunk's words) (a combiner may emit a key twice; the reducer merges).
 */
export class WordCountCombiner implements StreamOperator, WordCountInput {
  readonly #table = new ByteCountTable();
  readonly #memory: MemoryConsumer;
  readonly #records: CombineOperator;
  /** UTF-8 bytes scanned for words (the fused path; 0 when it was not taken). */
  bytesScanned = 0;

  constructor(
    key: KeySelector<unknown, KeyValue>,
    aggregator: Aggregator,
    private readonly maxKeys: number,
    private readonly output: Output,
    private readonly context: OperatorContext,
  ) {
    this.#records = new CombineOperator(key, aggregator, maxKeys, output, context);
    this.#memory = context.memory.manager.consumer(context.operatorName);
  }

  collect(value: unknown): void {
    this.#records.collect(value);
  }

  countWordsIn(bytes: Uint8Array, start: number, end: number): number {
    const table = this.#table;
    const newlines = countWords(table, bytes, start, end);
    this.bytesScanned += end - start;
    const memory = this.#memory;
    const held = table.grownBytes;
    if (table.size > this.maxKeys || (held > memory.reservedBytes && !memory.tryReserve(held - memory.reservedBytes))) {
      for (const entry of table.entries()) this.output.collect(entry);
      table.release();
      memory.releaseAll();
    }
    return newlines;
  }

  /** Restored from a checkpoint: the partials of both tables come back into the ordinary combiner's. */
  open(): void {
    this.#records.open();
  }

  /** A checkpoint: both tables' partials go into the operator state (CombineOperator.snapshotState); nothing is flushed. */
  snapshotState(): void {
    this.#records.snapshotPartials(this.#table.entries());
  }

  async finish(): Promise<void> {
    await emitAll(this.#table.entries(), this.output, this.context, (entry) => entry);
    this.#table.release();
    this.#memory.releaseAll();
    await this.#records.finish();
  }

  close(): void {
    this.#table.release();
    this.#memory.releaseAll();
    this.#records.close();
  }
}
