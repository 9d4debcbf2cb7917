import { invalidEngineArgument } from '../errors/engine-error.js';
import { RecordDecoder } from '../serialization/record-decoder.js';
import { RecordEncoder } from '../serialization/record-encoder.js';
import type { ListState } from './keyed-state.js';
import { decodeSnapshot, encodeSnapshot } from './state-snapshot-format.js';
import { stateRestoreError } from './state-errors.js';

const MAGIC = 'WFOS';

/**
 * How a list of operator state is redistributed when the operator is restored (Flink's
 * `OperatorStateHandle.Mode`): `split` (SPLIT_DISTRIBUTE) — the elements of every old subtask, in subtask
 * order, cut into contiguous runs, one per new subtask (the first `total % parallelism` get one more);
 * `union` (UNION) — every new subtask gets all of them.
 */
export type OperatorStateDistribution = 'split' | 'union';

interface NamedList {
  readonly distribution: OperatorStateDistribution;
  values: unknown[];
}

export interface OperatorStateRestore {
  /** The restoring subtask and the operator's new parallelism. */
  readonly subtask: number;
  readonly parallelism: number;
  /** Every old subtask's snapshot, in old subtask order. */
  readonly snapshots: readonly Uint8Array[];
}

/**
 * A subtask's operator (non-keyed) state: named lists, each with its redistribution mode — source offsets,
 * buffered elements. With the same parallelism a `split` list comes back to the subtask that wrote it;
 * with another, Flink's round-robin repartitioning of contiguous runs.
 */
export class OperatorStateBackend {
  readonly #lists = new Map<string, NamedList>();

  listState<T>(name: string, distribution: OperatorStateDistribution = 'split'): ListState<T> {
    if (typeof name !== 'string' || name === '') throw invalidEngineArgument('name', 'a state needs a non-empty name');
    if (distribution !== 'split' && distribution !== 'union') throw invalidEngineArgument('distribution', `'split' or 'union', got ${JSON.stringify(distribution)}`);
    let list = this.#lists.get(name);
    if (list === undefined) this.#lists.set(name, (list = { distribution, values: [] }));
    else if (list.distribution !== distribution) throw invalidEngineArgument('distribution', `operator state ${JSON.stringify(name)} is a ${list.distribution} list, not a ${distribution} one`);
    const named = list;
    return {
      get: () => [...(named.values as T[])],
      add: (value) => {
        named.values.push(value);
      },
      addAll: (values) => {
        named.values.push(...values);
      },
      update: (values) => {
        named.values = [...values];
      },
      clear: () => {
        named.values = [];
      },
    };
  }

  snapshot(): Uint8Array {
    const content = [...this.#lists.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, list]) => [name, list.distribution, list.values]);
    return encodeSnapshot(MAGIC, [], [new RecordEncoder().encode(content).slice()]);
  }

  /** Subtask `subtask` of `parallelism`'s operator state from the old subtasks' snapshots (see OperatorStateDistribution). */
  static restore(request: OperatorStateRestore): OperatorStateBackend {
    const { subtask, parallelism, snapshots } = request;
    if (!Number.isInteger(parallelism) || parallelism < 1) throw invalidEngineArgument('parallelism', `an integer >= 1, got ${String(parallelism)}`);
    if (!Number.isInteger(subtask) || subtask < 0 || subtask >= parallelism) throw invalidEngineArgument('subtask', `0 to ${parallelism - 1}, got ${String(subtask)}`);
    const decoder = new RecordDecoder();
    const old = snapshots.map((bytes, i) => {
      const snapshot = decodeSnapshot(MAGIC, 0, bytes, `operator state snapshot ${i}`);
      if (snapshot.blockCount !== 1) throw stateRestoreError(`operator state snapshot ${i} is corrupted`, { snapshot: i });
      return new Map((decoder.decode(snapshot.block(0)) as [string, OperatorStateDistribution, unknown[]][]).map(([name, distribution, values]) => [name, { distribution, values }]));
    });
    const backend = new OperatorStateBackend();
    const names = new Set(old.flatMap((m) => [...m.keys()]));
    for (const name of names) {
      const modes = new Set(old.flatMap((m) => (m.has(name) ? [(m.get(name) as NamedList).distribution] : [])));
      if (modes.size > 1) throw stateRestoreError(`operator state ${JSON.stringify(name)} is split in some snapshots and union in others`, { state: name });
      const distribution = [...modes][0] as OperatorStateDistribution;
      const all = old.flatMap((m) => m.get(name)?.values ?? []);
      let values: unknown[];
      if (distribution === 'union') values = all;
      else if (parallelism === old.length) values = [...(old[subtask]?.get(name)?.values ?? [])];
      else {
        const base = Math.floor(all.length / parallelism);
        const remainder = all.length % parallelism;
        const start = subtask * base + Math.min(subtask, remainder);
        values = all.slice(start, start + base + (subtask < remainder ? 1 : 0));
      }
      backend.#lists.set(name, { distribution, values });
    }
    return backend;
  }
}
