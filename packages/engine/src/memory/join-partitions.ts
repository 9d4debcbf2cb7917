import type { KeyValue } from '../api/functions.js';
import { keyHashCode } from '../runtime/key-hash.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import type { SpillDirectory } from './spill-directory.js';
import { SpillRunReader } from './spill-run-reader.js';
import { type SpillRun, SpillRunWriter } from './spill-run-writer.js';

/** How many partitions a join's spilled sides are split into. */
export const JOIN_SPILL_PARTITIONS = 8;

/** Partition of `key`: its Java-style hash, mixed (murmur3's fmix32) so it is independent of key groups. */
export function joinPartitionOf(key: KeyValue, partitions: number): number {
  let h = keyHashCode(key);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % partitions;
}

export interface JoinPartitionsOptions {
  readonly operator: string;
  readonly spill: SpillDirectory;
  readonly keys: RecordSerializer;
  readonly values: RecordSerializer;
  /** Names the side in file names' order (only for ownership; files are the directory's). */
  readonly partitions?: number;
}

/**
 * One side of a join spilled to disk, hash-partitioned by key (Grace hash join): `add` writes
 * (key, value) to its partition's file; `finish()` closes them; `read(p)` yields partition p's records
 * back, decoded. `close()` removes every file (idempotent).
 */
export class JoinPartitions {
  readonly #o: JoinPartitionsOptions;
  readonly count: number;
  #writers: (SpillRunWriter | undefined)[];
  #runs: (SpillRun | undefined)[];
  recordsWritten = 0;

  constructor(options: JoinPartitionsOptions) {
    this.#o = options;
    this.count = options.partitions ?? JOIN_SPILL_PARTITIONS;
    this.#writers = new Array<SpillRunWriter | undefined>(this.count).fill(undefined);
    this.#runs = new Array<SpillRun | undefined>(this.count).fill(undefined);
  }

  add(key: KeyValue, value: unknown): void {
    const p = joinPartitionOf(key, this.count);
    let writer = this.#writers[p];
    if (writer === undefined) {
      writer = new SpillRunWriter(this.#o.spill.newFile(this.#o.operator), this.#o.operator);
      this.#writers[p] = writer;
    }
    writer.write(this.#o.keys.serialize(key), this.#o.values.serialize(value));
    this.recordsWritten++;
  }

  finish(): void {
    for (let p = 0; p < this.count; p++) {
      const writer = this.#writers[p];
      if (writer === undefined) continue;
      this.#writers[p] = undefined;
      this.#runs[p] = writer.finish();
    }
  }

  /** Partition `p`'s records (after `finish()`), in the order they were added. */
  *read(p: number): Generator<[KeyValue, unknown], void, undefined> {
    const run = this.#runs[p];
    if (run === undefined) return;
    const reader = new SpillRunReader(run, this.#o.operator);
    try {
      while (reader.next()) yield [this.#o.keys.deserialize(reader.key) as KeyValue, this.#o.values.deserialize(reader.value)];
    } finally {
      reader.close();
    }
  }

  /** Removes partition `p`'s file (once joined). */
  drop(p: number): void {
    const run = this.#runs[p];
    this.#runs[p] = undefined;
    if (run !== undefined) this.#o.spill.remove(run.path);
  }

  close(): void {
    for (const writer of this.#writers) {
      if (writer === undefined) continue;
      writer.abort();
      this.#o.spill.remove(writer.path);
    }
    this.#writers.fill(undefined);
    for (let p = 0; p < this.count; p++) this.drop(p);
  }
}
