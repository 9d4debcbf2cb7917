// Packs intervals into rows so that no two in a row overlap (greedy, by start time: each goes into the first row
// free at its start). Used for the timeline's lanes (attempts per executor, regions). Pure, unit-tested in Node.

export interface Interval {
  readonly startMs: number;
  readonly endMs: number;
}

export interface PackedRows<T extends Interval> {
  /** Each row's intervals, sorted by start. */
  readonly rows: readonly (readonly T[])[];
  /** Intervals put on the last row although they overlap it (more than `maxRows` were needed). */
  readonly overflow: number;
}

export function packIntervals<T extends Interval>(intervals: readonly T[], maxRows: number): PackedRows<T> {
  const sorted = [...intervals].sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
  const rows: T[][] = [];
  const rowEnds: number[] = [];
  let overflow = 0;
  for (const interval of sorted) {
    let row = rowEnds.findIndex((end) => end <= interval.startMs);
    if (row === -1) {
      if (rows.length < maxRows) {
        row = rows.length;
        rows.push([]);
        rowEnds.push(-Infinity);
      } else {
        row = rows.length - 1;
        overflow++;
      }
    }
    (rows[row] as T[]).push(interval);
    rowEnds[row] = Math.max(rowEnds[row] as number, interval.endMs);
  }
  return { rows, overflow };
}
