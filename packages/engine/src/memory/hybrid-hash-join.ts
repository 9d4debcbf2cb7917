import type { KeyValue } from '../api/functions.js';
import type { RecordSerializer } from '../serialization/record-serializer.js';
import { blockNestedLoopJoin } from './block-nested-loop-join.js';
import { JoinBuildPartition } from './join-build-partition.js';
import { PagePool } from './page-pool.js';
import { joinKeyHash, joinPartitionOf } from './join-hash.js';
import type { MemoryConsumer } from './memory-manager.js';
import type { SpillDirectory } from './spill-directory.js';
import { SpillRunReader } from './spill-run-reader.js';
import { type SpillRun, SpillRunWriter } from './spill-run-writer.js';

/** Hash partitions of each level of a hybrid hash join. */
export const JOIN_PARTITIONS = 16;
/**
 * Levels of repartitioning (each with its own hash seed) before a spilled partition still too big for
 * the budget is joined block by block (a nested loop) instead: 16^3 partitions hold a build side of
 * thousands of budgets; past that, or as soon as a level does not split a partition at all (one key, or
 * keys of one hash code), hashing cannot help.
 */
export const JOIN_MAX_LEVELS = 3;

export interface HybridHashJoinOptions {
  readonly operator: string;
  readonly consumer: MemoryConsumer;
  readonly spill: SpillDirectory;
  /** The default serializer (keys stay exact). */
  readonly keys: RecordSerializer;
  /** The job's serializer, for values. */
  readonly values: RecordSerializer;
  /** Build records no probe record matched are emitted with `null` for the probe side. */
  readonly buildOuter: boolean;
  /** Probe records no build record matched are emitted with `null` for the build side. */
  readonly probeOuter: boolean;
  /** One joined pair: `null` stands for the missing side of an outer join. May throw (the join function). */
  readonly emit: (build: unknown, probe: unknown) => void;
  /** Called between records after the probe side (cancellation, backpressure): a promise to await, or undefined. */
  readonly pause: () => Promise<void> | undefined;
  /** Bytes of a page of a build partition. @defaultValue budget / 64, within [1 KiB, 64 KiB] */
  readonly pageBytes?: number;
}

/**
 * A hybrid hash join (Flink's MutableHashTable): build records go to JOIN_PARTITIONS hash partitions,
 * kept in memory (JoinBuildPartition) while the budget allows; when a reservation is refused the largest
 * in-memory partition is written to a spill file, and later build records of a spilled partition go
 * straight to its file. Probe records of in-memory partitions are joined at once (`probe`); those of
 * spilled partitions are written beside them. `finish()` emits the unmatched build records of the
 * in-memory partitions (outer), frees them, and joins each spilled pair of files with a new hybrid hash
 * join one level down (another hash seed, the whole budget again); at JOIN_MAX_LEVELS, or when a level
 * did not split a partition, with blockNestedLoopJoin. Keys are hashed and compared as their bytes
 * (joinKeyHash), so spilled records are never deserialized on the way down. `close()` removes every file this join (and those below it) made and
 * releases its memory; idempotent.
 */
export class HybridHashJoin {
  readonly #o: HybridHashJoinOptions;
  readonly #level: number;
  readonly #parentRecords: number;
  readonly #pool: PagePool;
  readonly #parts: (JoinBuildPartition | undefined)[] = new Array(JOIN_PARTITIONS).fill(undefined);
  readonly #buildWriters: (SpillRunWriter | undefined)[] = new Array(JOIN_PARTITIONS).fill(undefined);
  readonly #probeWriters: (SpillRunWriter | undefined)[] = new Array(JOIN_PARTITIONS).fill(undefined);
  readonly #buildRuns: (SpillRun | undefined)[] = new Array(JOIN_PARTITIONS).fill(undefined);
  readonly #probeRuns: (SpillRun | undefined)[] = new Array(JOIN_PARTITIONS).fill(undefined);
  #child: HybridHashJoin | undefined;
  /** Partitions spilled, at this level and below (for tests and summaries). */
  partitionsSpilled = 0;
  /** Deepest level a partition was joined at (0: nothing spilled). */
  deepestLevel = 0;
  /** Spilled partitions joined by the nested-loop fallback. */
  nestedLoops = 0;

  constructor(options: HybridHashJoinOptions, level = 0, parentRecords = Number.POSITIVE_INFINITY, pool?: PagePool) {
    this.#o = options;
    this.#level = level;
    this.#parentRecords = parentRecords;
    this.#pool = pool ?? new PagePool(options.pageBytes ?? Math.min(64 * 1024, Math.max(1024, Math.floor(options.consumer.manager.budgetBytes / 64))));
  }

  /** Bytes of the pages allocated so far, at this level and below (recycled pages counted once). */
  get pageBytesAllocated(): number {
    return this.#pool.allocated * this.#pool.pageBytes;
  }

  /** Whether some build partition went to disk. */
  get spilled(): boolean {
    return this.partitionsSpilled > 0;
  }

  /** Adds one build record (`key` already checked). */
  build(key: KeyValue, value: unknown): void {
    this.buildSerialized(this.#o.keys.serialize(key), this.#o.values.serialize(value));
  }

  /** Adds one build record given as bytes (views, copied at once). */
  buildSerialized(keyBytes: Uint8Array, valueBytes: Uint8Array): void {
    const hash = joinKeyHash(keyBytes);
    const p = joinPartitionOf(hash, JOIN_PARTITIONS, this.#level);
    for (;;) {
      const writer = this.#buildWriters[p];
      if (writer !== undefined) {
        this.#o.consumer.checkRecordSize(JoinBuildPartition.recordCost(keyBytes, valueBytes));
        writer.write(keyBytes, valueBytes);
        return;
      }
      const part = (this.#parts[p] ??= new JoinBuildPartition({
        consumer: this.#o.consumer,
        pool: this.#pool,
        ...(Number.isFinite(this.#parentRecords) ? { expectedRecords: this.#parentRecords / JOIN_PARTITIONS } : {}),
      }));
      if (part.tryAdd(keyBytes, valueBytes, hash)) return;
      let victim = this.#largestInMemory();
      if (victim < 0) {
        // nothing of ours left to free: the record goes to disk, unless it could never fit
        this.#o.consumer.checkRecordSize(JoinBuildPartition.recordCost(keyBytes, valueBytes));
        victim = p;
      }
      this.#spillPartition(victim);
    }
  }

  /** The build side ended: spilled partitions' files are closed. */
  endBuild(): void {
    for (let p = 0; p < JOIN_PARTITIONS; p++) {
      const writer = this.#buildWriters[p];
      if (writer === undefined) continue;
      this.#buildWriters[p] = undefined;
      this.#buildRuns[p] = writer.finish();
    }
  }

  /** Joins one probe record (`key` already checked) with the build side, or keeps it for its spilled partition. */
  probe(key: KeyValue, value: unknown): void {
    const keyBytes = this.#o.keys.serialize(key);
    const hash = joinKeyHash(keyBytes);
    const p = joinPartitionOf(hash, JOIN_PARTITIONS, this.#level);
    if (this.#buildRuns[p] !== undefined) {
      this.#probeWriter(p).write(keyBytes, this.#o.values.serialize(value));
      return;
    }
    this.#probeInMemory(p, keyBytes, hash, value);
  }

  /** One probe record given as bytes; the value is deserialized only when it is emitted. */
  probeSerialized(keyBytes: Uint8Array, valueBytes: Uint8Array): void {
    const hash = joinKeyHash(keyBytes);
    const p = joinPartitionOf(hash, JOIN_PARTITIONS, this.#level);
    if (this.#buildRuns[p] !== undefined) {
      this.#probeWriter(p).write(keyBytes, valueBytes);
      return;
    }
    const part = this.#parts[p];
    if ((part === undefined || part.last(keyBytes, hash) < 0) && !this.#o.probeOuter) return;
    this.#probeInMemory(p, keyBytes, hash, this.#o.values.deserialize(valueBytes));
  }

  /** After the probe side: the unmatched build records held in memory, then every spilled partition, level by level. */
  async finish(): Promise<void> {
    const o = this.#o;
    for (let p = 0; p < JOIN_PARTITIONS; p++) {
      const writer = this.#probeWriters[p];
      if (writer === undefined) continue;
      this.#probeWriters[p] = undefined;
      this.#probeRuns[p] = writer.finish();
    }
    for (let p = 0; p < JOIN_PARTITIONS; p++) {
      const part = this.#parts[p];
      if (part === undefined) continue;
      if (o.buildOuter) {
        for (const r of part.unmatched()) {
          o.emit(o.values.deserialize(part.valueAt(r)), null);
          const wait = o.pause();
          if (wait !== undefined) await wait;
        }
      }
      part.release();
      this.#parts[p] = undefined;
    }
    for (let p = 0; p < JOIN_PARTITIONS; p++) {
      const build = this.#buildRuns[p];
      if (build === undefined) continue;
      const probe = this.#probeRuns[p];
      if (probe !== undefined || o.buildOuter) await this.#joinSpilled(build, probe);
      this.#buildRuns[p] = undefined;
      this.#probeRuns[p] = undefined;
      o.spill.remove(build.path);
      if (probe !== undefined) o.spill.remove(probe.path);
    }
  }

  /** Removes every file still here (and below) and releases the memory held. Idempotent. */
  close(): void {
    const errors: unknown[] = [];
    const step = (fn: () => void): void => {
      try {
        fn();
      } catch (error) {
        errors.push(error);
      }
    };
    if (this.#child !== undefined) step(() => this.#child?.close());
    this.#child = undefined;
    for (let p = 0; p < JOIN_PARTITIONS; p++) {
      const part = this.#parts[p];
      if (part !== undefined) step(() => part.release());
      this.#parts[p] = undefined;
      for (const writers of [this.#buildWriters, this.#probeWriters]) {
        const writer = writers[p];
        writers[p] = undefined;
        if (writer !== undefined) {
          step(() => writer.abort());
          step(() => this.#o.spill.remove(writer.path));
        }
      }
      for (const runs of [this.#buildRuns, this.#probeRuns]) {
        const run = runs[p];
        runs[p] = undefined;
        if (run !== undefined) step(() => this.#o.spill.remove(run.path));
      }
    }
    if (this.#level === 0) this.#pool.clear();
    if (errors.length > 0) throw errors[0];
  }

  #probeInMemory(p: number, keyBytes: Uint8Array, hash: number, value: unknown): void {
    const o = this.#o;
    const part = this.#parts[p];
    const last = part === undefined ? -1 : part.last(keyBytes, hash);
    if (part === undefined || last < 0) {
      if (o.probeOuter) o.emit(null, value);
      return;
    }
    if (o.buildOuter) part.markMatched(last);
    for (let r = last; r >= 0; r = part.previous(r)) o.emit(o.values.deserialize(part.valueAt(r)), value);
  }

  async #joinSpilled(build: SpillRun, probe: SpillRun | undefined): Promise<void> {
    const o = this.#o;
    const level = this.#level + 1;
    if (level > this.deepestLevel) this.deepestLevel = level;
    if (level >= JOIN_MAX_LEVELS || build.records >= this.#parentRecords) {
      this.nestedLoops++;
      await blockNestedLoopJoin({ options: o, build, probe, pool: this.#pool });
      return;
    }
    const child = new HybridHashJoin(o, level, build.records, this.#pool);
    this.#child = child;
    try {
      await feed(build, o, (k, v) => child.buildSerialized(k, v));
      child.endBuild();
      if (probe !== undefined) await feed(probe, o, (k, v) => child.probeSerialized(k, v));
      await child.finish();
      this.partitionsSpilled += child.partitionsSpilled;
      this.deepestLevel = Math.max(this.deepestLevel, child.deepestLevel);
      this.nestedLoops += child.nestedLoops;
    } finally {
      this.#child = undefined;
      child.close();
    }
  }

  #probeWriter(p: number): SpillRunWriter {
    let writer = this.#probeWriters[p];
    if (writer === undefined) {
      writer = new SpillRunWriter(this.#o.spill.newFile(this.#o.operator), this.#o.operator);
      this.#probeWriters[p] = writer;
    }
    return writer;
  }

  #largestInMemory(): number {
    let best = -1;
    let bestBytes = 0;
    for (let p = 0; p < JOIN_PARTITIONS; p++) {
      const part = this.#parts[p];
      if (part !== undefined && part.records > 0 && part.reservedBytes > bestBytes) {
        best = p;
        bestBytes = part.reservedBytes;
      }
    }
    return best;
  }

  #spillPartition(p: number): void {
    const writer = new SpillRunWriter(this.#o.spill.newFile(this.#o.operator), this.#o.operator);
    this.#buildWriters[p] = writer;
    this.partitionsSpilled++;
    const part = this.#parts[p];
    this.#parts[p] = undefined;
    if (part !== undefined) {
      part.writeTo(writer);
      part.release();
    }
  }
}

/** Reads a spill run record by record into `add` (keys and values left as bytes), pausing between records. */
export async function feed(run: SpillRun, o: HybridHashJoinOptions, add: (keyBytes: Uint8Array, valueBytes: Uint8Array) => void): Promise<void> {
  const reader = new SpillRunReader(run, o.operator);
  try {
    while (reader.next()) {
      add(reader.key, reader.value);
      const wait = o.pause();
      if (wait !== undefined) await wait;
    }
  } finally {
    reader.close();
  }
}
