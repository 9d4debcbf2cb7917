import { jobCheckpointsPrefix, orphanedCheckpointKeys } from './checkpoint-keys.js';
import type { CheckpointStorage } from './checkpoint-storage.js';
import type { CheckpointStore, CompletedCheckpoint } from './checkpoint-store.js';

export interface DiscardJobCheckpointsRequest {
  readonly jobId: string;
  /**
   * The job's records, written by the job master that holds its lease (fenced): a run that lost the lease
   * to a newer one of the job id is refused (WEFT_ERR_FENCED) before it removes anything.
   */
  readonly store: CheckpointStore;
  readonly storage: CheckpointStorage;
}

export interface DiscardedCheckpoints {
  /** Completed checkpoints whose records were removed. */
  readonly checkpoints: number;
  /** Snapshot objects deleted (theirs and leftovers of checkpoints that never completed). */
  readonly objects: number;
}

/**
 * Removes every completed checkpoint of a job — each record first, then its snapshots, so a crash halfway
 * leaves data no record names (garbage `weft gc` collects), never a record whose data is gone — then the
 * leftovers of checkpoints that never completed (a storage that lists keys only).
 *
 * It first reserves a checkpoint id (`nextCheckpointId`, fenced like every write): ids only grow across
 * the runs of a job id, so every checkpoint a newer run writes lies above it, and only snapshots of ids
 * below it are touched. A fenced store (a newer run of the job id took the lease, and may be restoring
 * from these checkpoints) rejects with WEFT_ERR_FENCED before anything is removed; a refusal halfway
 * leaves the checkpoints still recorded untouched.
 */
export async function discardJobCheckpoints(request: DiscardJobCheckpointsRequest): Promise<DiscardedCheckpoints> {
  const { jobId, store, storage } = request;
  const below = await store.nextCheckpointId();
  const completed = await store.completed();
  let checkpoints = 0;
  let objects = 0;
  const deleted = new Set<string>();
  const deleteKey = async (key: string): Promise<void> => {
    if (deleted.has(key)) return;
    deleted.add(key);
    await storage.delete(key);
    objects += 1;
  };
  for (const checkpoint of completed) {
    await store.remove(checkpoint.checkpointId);
    checkpoints += 1;
    for (const key of snapshotKeysOf(checkpoint)) await deleteKey(key);
  }
  if (storage.listKeys !== undefined) {
    const kept = new Set((await store.completed()).map((c) => c.checkpointId));
    for (const key of orphanedCheckpointKeys(jobId, await storage.listKeys(jobCheckpointsPrefix(jobId)), below, kept)) await deleteKey(key);
  }
  return { checkpoints, objects };
}

/** Every storage key a completed checkpoint's task handles name. */
export function snapshotKeysOf(checkpoint: CompletedCheckpoint): string[] {
  const keys: string[] = [];
  for (const handle of Object.values(checkpoint.tasks)) {
    // a SnapshotHandle (JobCheckpointing's): storage keys by operator uid
    const operators = (handle as { operators?: Record<string, { keyed?: unknown; operator?: unknown }> }).operators ?? {};
    for (const parts of Object.values(operators)) for (const key of [parts.keyed, parts.operator]) if (typeof key === 'string') keys.push(key);
  }
  return keys;
}
