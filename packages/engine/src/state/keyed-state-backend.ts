import { type KeyGroupRange, keyGroupForHash } from '../keygroups/key-group-range-assignment.js';
import { invalidEngineArgument } from '../errors/engine-error.js';
import { canonicalKey, checkKey, keyHashCode } from '../runtime/key-hash.js';
import { RecordDecoder } from '../serialization/record-decoder.js';
import { RecordEncoder } from '../serialization/record-encoder.js';
import type { KeyedStateKind, ListState, MapState, ValueState } from './keyed-state.js';
import { decodeSnapshot, encodeSnapshot } from './state-snapshot-format.js';
import { stateRestoreError } from './state-errors.js';

const MAGIC = 'WFKS';

interface Entry {
  readonly key: unknown;
  value: unknown;
}

/** One named state: per key group, its keys (canonical form) and their values. */
interface NamedState {
  readonly kind: KeyedStateKind;
  readonly groups: Map<number, Map<string, Entry>>;
}

export interface KeyedStateBackendOptions {
  readonly maxParallelism: number;
  /** The key groups this subtask owns (computeKeyGroupRangeForOperatorIndex). */
  readonly keyGroupRange: KeyGroupRange;
}

export interface KeyedStateRestore extends KeyedStateBackendOptions {
  /**
   * Every snapshot of the operator's last checkpoint, one per old subtask, in any order: together they
   * must cover key groups 0 … maxParallelism − 1 exactly once (WEFT_ERR_STATE_RESTORE otherwise). Only
   * the key groups in `keyGroupRange` are read.
   */
  readonly snapshots: readonly Uint8Array[];
}

/**
 * The keyed state of one subtask, partitioned by key group (DESIGN.md's Flink-compatible assignment), so
 * a job restored with another parallelism hands each new subtask whole key groups
 * (computeKeyGroupRangeForOperatorIndex). `setCurrentKey` chooses the key every state accessor works on.
 */
export class KeyedStateBackend {
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  readonly #states = new Map<string, NamedState>();
  /** Restored key groups not decoded yet: each one's block of the snapshot, decoded when first used (`setCurrentKey`, `keys`, `snapshot`). */
  readonly #restoredBlocks = new Map<number, Uint8Array>();
  #decoder: RecordDecoder | undefined;
  #currentKey: unknown;
  #currentCanonical: string | undefined;
  #currentGroup = -1;

  constructor(options: KeyedStateBackendOptions) {
    const { maxParallelism, keyGroupRange } = options;
    if (!Number.isInteger(maxParallelism) || maxParallelism < 1) throw invalidEngineArgument('maxParallelism', `an integer >= 1, got ${String(maxParallelism)}`);
    const { startKeyGroup, endKeyGroup } = keyGroupRange;
    if (!Number.isInteger(startKeyGroup) || !Number.isInteger(endKeyGroup) || startKeyGroup < 0 || endKeyGroup >= maxParallelism || startKeyGroup > endKeyGroup + 1) {
      throw invalidEngineArgument('keyGroupRange', `[${startKeyGroup}, ${endKeyGroup}] is not a key group range within max parallelism ${maxParallelism}`);
    }
    this.maxParallelism = maxParallelism;
    this.keyGroupRange = { startKeyGroup, endKeyGroup };
  }

  /** Chooses the key the state accessors read and write; refuses one whose key group this subtask does not own. */
  setCurrentKey(key: unknown): void {
    checkKey(key);
    const group = keyGroupForHash(keyHashCode(key), this.maxParallelism);
    if (group < this.keyGroupRange.startKeyGroup || group > this.keyGroupRange.endKeyGroup) {
      throw invalidEngineArgument('key', `key group ${group} of this key is outside this subtask's range [${this.keyGroupRange.startKeyGroup}, ${this.keyGroupRange.endKeyGroup}]`);
    }
    if (this.#restoredBlocks.size !== 0) this.#decodeRestored(group);
    this.#currentKey = key;
    this.#currentCanonical = canonicalKey(key);
    this.#currentGroup = group;
  }

  get currentKey(): unknown {
    return this.#currentKey;
  }

  valueState<T>(name: string): ValueState<T> {
    const state = this.#state(name, 'value');
    return {
      value: () => this.#entry(state, false)?.value as T | undefined,
      update: (value) => {
        (this.#entry(state, true) as Entry).value = value;
      },
      clear: () => this.#clear(state),
    };
  }

  listState<T>(name: string): ListState<T> {
    const state = this.#state(name, 'list');
    const list = (create: boolean): T[] | undefined => this.#entry(state, create)?.value as T[] | undefined;
    return {
      get: () => [...(list(false) ?? [])],
      add: (value) => {
        (list(true) as T[]).push(value);
      },
      addAll: (values) => {
        (list(true) as T[]).push(...values);
      },
      update: (values) => {
        if (values.length === 0) this.#clear(state);
        else (this.#entry(state, true) as Entry).value = [...values];
      },
      clear: () => this.#clear(state),
    };
  }

  mapState<K, V>(name: string): MapState<K, V> {
    const state = this.#state(name, 'map');
    const map = (create: boolean): Map<string, [K, V]> | undefined => this.#entry(state, create)?.value as Map<string, [K, V]> | undefined;
    return {
      get: (key) => map(false)?.get(canonicalKey(key))?.[1],
      put: (key, value) => {
        (map(true) as Map<string, [K, V]>).set(canonicalKey(key), [key, value]);
      },
      remove: (key) => {
        const m = map(false);
        m?.delete(canonicalKey(key));
        if (m?.size === 0) this.#clear(state);
      },
      contains: (key) => map(false)?.has(canonicalKey(key)) ?? false,
      entries: () => [...(map(false)?.values() ?? [])].map(([k, v]) => [k, v]),
      isEmpty: () => (map(false)?.size ?? 0) === 0,
      clear: () => this.#clear(state),
    };
  }

  /** The keys with a value in state `name`, in key-group order (for timers, tests and debugging). */
  keys(name: string): unknown[] {
    this.#decodeAllRestored();
    const state = this.#states.get(name);
    if (state === undefined) return [];
    return [...state.groups.keys()].sort((a, b) => a - b).flatMap((g) => [...(state.groups.get(g) as Map<string, Entry>).values()].map((e) => e.key));
  }

  /** Every state of this subtask as bytes: one block per owned key group, so a restore reads only its own. */
  snapshot(): Uint8Array {
    // every restored group decoded first: a state used with another kind than the checkpoint's is refused
    // here, not written into this checkpoint beside the old kind
    this.#decodeAllRestored();
    const encoder = new RecordEncoder();
    const blocks: Uint8Array[] = [];
    const names = [...this.#states.keys()].sort();
    for (let group = this.keyGroupRange.startKeyGroup; group <= this.keyGroupRange.endKeyGroup; group++) {
      const content: unknown[] = [];
      for (const name of names) {
        const state = this.#states.get(name) as NamedState;
        const entries = state.groups.get(group);
        if (entries === undefined || entries.size === 0) continue;
        content.push([name, state.kind, [...entries.values()].map((e) => [e.key, state.kind === 'map' ? [...(e.value as Map<string, [unknown, unknown]>).values()] : e.value])]);
      }
      blocks.push(content.length === 0 ? new Uint8Array(0) : encoder.encode(content).slice());
    }
    return encodeSnapshot(MAGIC, [this.maxParallelism, this.keyGroupRange.startKeyGroup, this.keyGroupRange.endKeyGroup + 1], blocks);
  }

  /**
   * A backend for `keyGroupRange` holding the state of those key groups from an operator's snapshots,
   * whatever parallelism took them (same max parallelism). Refuses, before restoring anything, snapshots
   * that are corrupted (each is checksummed whole), of a newer format or another max parallelism, or that
   * do not cover every key group once. Each key group's block is decoded when the group is first used — a
   * key of it set, `keys()`, the next `snapshot()` — not here: a restarted task reads its first record
   * without decoding its whole state first (an approximate recovery's time until records flow again). A
   * state the operator uses with another kind than the checkpoint's is refused then (WEFT_ERR_STATE_RESTORE).
   */
  static restore(request: KeyedStateRestore): KeyedStateBackend {
    const backend = new KeyedStateBackend(request);
    const decoded = request.snapshots.map((bytes, i) => {
      const snapshot = decodeSnapshot(MAGIC, 3, bytes, `keyed state snapshot ${i}`);
      const [maxParallelism, start, endExclusive] = snapshot.fields as [number, number, number];
      if (maxParallelism !== backend.maxParallelism) {
        throw stateRestoreError(`keyed state snapshot ${i} was taken with max parallelism ${maxParallelism}, the job now has ${backend.maxParallelism}: key groups cannot be redistributed across max parallelisms`, { snapshot: i, snapshotMaxParallelism: maxParallelism, maxParallelism: backend.maxParallelism });
      }
      if (snapshot.blockCount !== endExclusive - start) throw stateRestoreError(`keyed state snapshot ${i} is corrupted: ${snapshot.blockCount} key group blocks for range [${start}, ${endExclusive - 1}]`, { snapshot: i });
      return { index: i, start, endExclusive, snapshot };
    });
    checkCoverage(decoded, backend.maxParallelism);
    for (const { start, endExclusive, snapshot } of decoded) {
      const from = Math.max(start, backend.keyGroupRange.startKeyGroup);
      const to = Math.min(endExclusive - 1, backend.keyGroupRange.endKeyGroup);
      for (let group = from; group <= to; group++) {
        const block = snapshot.block(group - start);
        if (block.byteLength !== 0) backend.#restoredBlocks.set(group, block);
      }
    }
    return backend;
  }

  #decodeAllRestored(): void {
    for (const group of [...this.#restoredBlocks.keys()]) this.#decodeRestored(group);
  }

  /**
   * Decodes restored key group `group` into the states, if it is one not decoded yet; refuses, changing
   * nothing, a state the checkpoint holds as another kind than the one it is used as.
   */
  #decodeRestored(group: number): void {
    const block = this.#restoredBlocks.get(group);
    if (block === undefined) return;
    this.#decoder ??= new RecordDecoder();
    const decoded = this.#decoder.decode(block) as [string, KeyedStateKind, [unknown, unknown][]][];
    for (const [name, kind] of decoded) {
      const used = this.#states.get(name)?.kind;
      if (used !== undefined && used !== kind) {
        throw stateRestoreError(`state ${JSON.stringify(name)} is a ${kind} state in the checkpoint (key group ${group}), but is used as a ${used} state`, { state: name, keyGroup: group, restoredKind: kind, kind: used });
      }
    }
    this.#restoredBlocks.delete(group);
    for (const [name, kind, entries] of decoded) {
      const state = this.#state(name, kind);
      const keys = new Map<string, Entry>();
      for (const [key, value] of entries) keys.set(canonicalKey(key), { key, value: kind === 'map' ? new Map((value as [unknown, unknown][]).map(([k, v]) => [canonicalKey(k), [k, v]])) : value });
      state.groups.set(group, keys);
    }
  }

  #state(name: string, kind: KeyedStateKind): NamedState {
    if (typeof name !== 'string' || name === '') throw invalidEngineArgument('name', 'a state needs a non-empty name');
    const existing = this.#states.get(name);
    if (existing !== undefined) {
      if (existing.kind !== kind) throw invalidEngineArgument('name', `state ${JSON.stringify(name)} is a ${existing.kind} state, not a ${kind} state`);
      return existing;
    }
    const state: NamedState = { kind, groups: new Map() };
    this.#states.set(name, state);
    return state;
  }

  #entry(state: NamedState, create: boolean): Entry | undefined {
    if (this.#currentCanonical === undefined) throw invalidEngineArgument('key', 'no current key: call setCurrentKey first');
    let keys = state.groups.get(this.#currentGroup);
    let entry = keys?.get(this.#currentCanonical);
    if (entry !== undefined || !create) return entry;
    if (keys === undefined) state.groups.set(this.#currentGroup, (keys = new Map()));
    entry = { key: this.#currentKey, value: state.kind === 'value' ? undefined : state.kind === 'list' ? [] : new Map() };
    keys.set(this.#currentCanonical, entry);
    return entry;
  }

  #clear(state: NamedState): void {
    if (this.#currentCanonical === undefined) throw invalidEngineArgument('key', 'no current key: call setCurrentKey first');
    const keys = state.groups.get(this.#currentGroup);
    keys?.delete(this.#currentCanonical);
    if (keys?.size === 0) state.groups.delete(this.#currentGroup);
  }
}

function checkCoverage(snapshots: readonly { index: number; start: number; endExclusive: number }[], maxParallelism: number): void {
  const sorted = [...snapshots].sort((a, b) => a.start - b.start);
  let next = 0;
  for (const s of sorted) {
    if (s.start > next) throw stateRestoreError(`no snapshot holds key groups ${next}–${s.start - 1}: a subtask's snapshot is missing`, { missingFrom: next, missingTo: s.start - 1 });
    if (s.start < next) throw stateRestoreError(`key group ${s.start} is in two snapshots (${s.index} and another): snapshots of different checkpoints mixed`, { keyGroup: s.start });
    next = s.endExclusive;
  }
  if (next < maxParallelism) throw stateRestoreError(`no snapshot holds key groups ${next}–${maxParallelism - 1}: a subtask's snapshot is missing`, { missingFrom: next, missingTo: maxParallelism - 1 });
}
