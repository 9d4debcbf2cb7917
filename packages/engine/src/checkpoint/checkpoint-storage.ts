/**
 * Where tasks' checkpoint snapshots are kept (Flink's checkpoint storage): the run's BlobStore — a local
 * directory or S3 — behind this small surface, so the engine imports no store. Keys are slash-separated
 * (`checkpoints/<job>/chk-<id>/<task>/<operator>.keyed`); one object per key, written once.
 *
 * Listing is optional (`listKeys`): completed checkpoints are found through the CheckpointStore, which names
 * every key of every task's handle; a storage that lists lets the end-of-job discard and `weft gc` find the
 * snapshots of checkpoints that never completed too. Not in the contract: atomic multi-object writes (a
 * checkpoint counts only once the CheckpointStore recorded it, so half-written snapshots of an aborted one
 * are simply garbage).
 */
export interface CheckpointStorage {
  /** For messages, without secrets: `file:///dir`, `s3://bucket/prefix`, `memory`. */
  readonly description: string;
  write(key: string, bytes: Uint8Array): Promise<void>;
  /** Rejects when the object does not exist (or cannot be read). */
  read(key: string): Promise<Uint8Array>;
  /** Deleting nothing is fine. */
  delete(key: string): Promise<void>;
  /** Optional: the keys under `prefix` (e.g. `checkpoints/<job>/`), sorted; no listing consistency promised. */
  listKeys?(prefix: string): Promise<string[]>;
}

/** A CheckpointStorage in this process's memory: for tests and runs that need no restore across processes. */
export class InMemoryCheckpointStorage implements CheckpointStorage {
  readonly description = 'memory';
  readonly #objects = new Map<string, Uint8Array>();

  async write(key: string, bytes: Uint8Array): Promise<void> {
    this.#objects.set(key, bytes.slice());
  }

  async read(key: string): Promise<Uint8Array> {
    const bytes = this.#objects.get(key);
    if (bytes === undefined) throw new Error(`no checkpoint object ${key} in memory`);
    return bytes;
  }

  async delete(key: string): Promise<void> {
    this.#objects.delete(key);
  }

  /** The keys held now (tests). */
  keys(): string[] {
    return [...this.#objects.keys()].sort();
  }

  async listKeys(prefix: string): Promise<string[]> {
    return this.keys().filter((k) => k.startsWith(prefix));
  }
}
