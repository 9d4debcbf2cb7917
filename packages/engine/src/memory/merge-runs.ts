import type { KeyValue } from '../api/functions.js';
import { SpillRunReader } from './spill-run-reader.js';
import type { SpillRun } from './spill-run-writer.js';

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
