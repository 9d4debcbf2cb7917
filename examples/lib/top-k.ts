import type { AggregateFunction } from '@weft/engine';

type Entry = [string, number];

function better(a: Entry, b: Entry): boolean {
  return a[1] > b[1] || (a[1] === b[1] && a[0] < b[0]);
}

/** Keeps the `k` entries with the largest counts (ties: smaller word first), as a sorted list. */
export function topK(k: number): AggregateFunction<Entry, Entry[], Entry[]> {
  const insert = (acc: Entry[], entry: Entry): Entry[] => {
    if (acc.length === k && !better(entry, acc[k - 1] as Entry)) return acc;
    let at = acc.length;
    while (at > 0 && better(entry, acc[at - 1] as Entry)) at--;
    acc.splice(at, 0, entry);
    if (acc.length > k) acc.length = k;
    return acc;
  };
  return {
    createAccumulator: () => [],
    add: insert,
    merge: (a, b) => b.reduce(insert, a),
    getResult: (acc) => acc,
  };
}
