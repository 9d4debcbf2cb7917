/**
 * What a task hands the coordinator when it acknowledges a checkpoint: where its snapshot lies (keys in a
 * BlobStore, sizes) — opaque to the coordinator, kept in the completed checkpoint's metadata, and given
 * back to `discardState` when the checkpoint is aborted or no longer retained. JSON-serializable.
 */
export type TaskStateHandle = Readonly<Record<string, unknown>>;

export interface CompletedCheckpoint {
  readonly checkpointId: number;
  /** When it was triggered, on the coordinator's clock (epoch milliseconds). */
  readonly triggeredAtMs: number;
  readonly completedAtMs: number;
  /** Every task's handle, by task id (an execution vertex id, e.g. `count#1`). */
  readonly tasks: Readonly<Record<string, TaskStateHandle>>;
}

/**
 * Where completed checkpoints are recorded durably — the job's metadata store (SQLite or Redis), so a new
 * job master restores from the latest one. The engine is handed one; it imports no store.
 */
export interface CheckpointStore {
  /** The next checkpoint id: greater than any this store ever returned, across job master restarts. */
  nextCheckpointId(): Promise<number>;
  /** Records a completed checkpoint; it counts as completed only once this resolves. */
  addCompleted(checkpoint: CompletedCheckpoint): Promise<void>;
  /** The completed checkpoints it holds, oldest first. */
  completed(): Promise<CompletedCheckpoint[]>;
  /** Forgets a completed checkpoint (its state data is discarded by the coordinator afterwards). */
  remove(checkpointId: number): Promise<void>;
}

/** A CheckpointStore in memory: for one process's runs and for tests. */
export class InMemoryCheckpointStore implements CheckpointStore {
  #nextId = 1;
  readonly #completed: CompletedCheckpoint[] = [];

  async nextCheckpointId(): Promise<number> {
    return this.#nextId++;
  }

  async addCompleted(checkpoint: CompletedCheckpoint): Promise<void> {
    this.#completed.push(checkpoint);
    this.#completed.sort((a, b) => a.checkpointId - b.checkpointId);
  }

  async completed(): Promise<CompletedCheckpoint[]> {
    return [...this.#completed];
  }

  async remove(checkpointId: number): Promise<void> {
    const at = this.#completed.findIndex((c) => c.checkpointId === checkpointId);
    if (at >= 0) this.#completed.splice(at, 1);
  }
}
