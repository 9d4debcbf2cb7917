import type { KeyValue } from '../api/functions.js';
import type { MemoryConsumer } from './memory-manager.js';
import type { SpillDirectory } from './spill-directory.js';
import { SpillRunReader } from './spill-run-reader.js';
import { type SpillRun, SpillRunWriter } from './spill-run-writer.js';

/** One run being merged: its position among the runs (ties go to the earlier run), its reader, its current key. */
export interface RunCursor {
  readonly index: number;
  readonly reader: SpillRunReader;
  key: KeyValue;
}

export interface MergeRunsOptions {
  readonly operator: string;
  /** The order each run is sorted in. */
  readonly compare: (a: KeyValue, b: KeyValue) => number;
  readonly decodeKey: (bytes: Uint8Array) => KeyValue;
}

/**
 * A k-way merge of sorted spill runs through a binary min-heap of cursors, ordered by key and then by
 * run index, so records with equal keys come out in the order of their runs — a merge of consecutive
 * runs of a stable sort is stable. Yields each run's cursor positioned at its next record
 * (`cursor.reader.value` is valid until the generator is resumed). Every reader is closed when the
 * generator ends, returns early or throws.
 */
export function* mergeRuns(runs: readonly SpillRun[], options: MergeRunsOptions): Generator<RunCursor, void, undefined> {
  const { compare, decodeKey, operator } = options;
  const heap: RunCursor[] = [];
  const readers: SpillRunReader[] = [];
  const less = (a: RunCursor, b: RunCursor): boolean => {
    const c = compare(a.key, b.key);
    return c < 0 || (c === 0 && a.index < b.index);
  };
  const down = (i: number): void => {
    const n = heap.length;
    const item = heap[i] as RunCursor;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && less(heap[r] as RunCursor, heap[l] as RunCursor) ? r : l;
      if (!less(heap[child] as RunCursor, item)) break;
      heap[i] = heap[child] as RunCursor;
      i = child;
    }
    heap[i] = item;
  };
  try {
    for (let index = 0; index < runs.length; index++) {
      const reader = new SpillRunReader(runs[index] as SpillRun, operator);
      readers.push(reader);
      if (reader.next()) heap.push({ index, reader, key: decodeKey(reader.key) });
    }
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
    while (heap.length > 0) {
      const top = heap[0] as RunCursor;
      yield top;
      if (top.reader.next()) {
        top.key = decodeKey(top.reader.key);
      } else {
        const last = heap.pop() as RunCursor;
        if (heap.length === 0) break;
        heap[0] = last;
      }
      down(0);
    }
  } finally {
    for (const reader of readers) reader.close();
  }
}

/** The most runs merged at once; more are merged in passes of this many first. */
export const MAX_MERGE_FAN_IN = 128;

export interface ReduceRunCountOptions extends MergeRunsOptions {
  readonly consumer: MemoryConsumer;
  readonly spill: SpillDirectory;
  /** Told of each run a pass writes. */
  readonly onRun?: (run: SpillRun) => void;
}

/**
 * The merge's fan-in for a task budget: as many 32 KiB read buffers as half the budget holds, 2 to
 * MAX_MERGE_FAN_IN.
 */
export function mergeFanIn(budgetBytes: number): number {
  return Math.max(2, Math.min(MAX_MERGE_FAN_IN, Math.floor(budgetBytes / (2 * SpillRunReader.BUFFER_BYTES))));
}

/**
 * Merges consecutive groups of runs into one run each (so a merge of them stays stable) until no more
 * than the fan-in are left, removing the merged runs; returns the runs left, in order. On an error the
 * runs it wrote are removed (the caller still owns and removes `runs`).
 */
export function reduceRunCount(runs: readonly SpillRun[], options: ReduceRunCountOptions): SpillRun[] {
  const fanIn = mergeFanIn(options.consumer.manager.budgetBytes);
  let current = [...runs];
  while (current.length > fanIn) {
    const merged: SpillRun[] = [];
    try {
      for (let g = 0; g < current.length; g += fanIn) {
        const group = current.slice(g, g + fanIn);
        if (group.length === 1) {
          merged.push(group[0] as SpillRun);
          continue;
        }
        const path = options.spill.newFile(options.operator);
        const writer = new SpillRunWriter(path, options.operator);
        try {
          for (const cursor of mergeRuns(group, options)) writer.write(cursor.reader.key, cursor.reader.value);
          const run = writer.finish();
          merged.push(run);
          options.onRun?.(run);
        } catch (error) {
          writer.abort();
          options.spill.remove(path);
          throw error;
        }
      }
    } catch (error) {
      for (const run of merged) if (!runs.includes(run)) options.spill.remove(run.path);
      throw error;
    }
    for (const run of current) if (!merged.includes(run)) options.spill.remove(run.path);
    current = merged;
  }
  return current;
}
