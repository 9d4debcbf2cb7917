import { randomUUID } from 'node:crypto';
import { EngineError } from '../errors/engine-error.js';
import { probeKey } from './checkpoint-keys.js';
import type { CheckpointStorage } from './checkpoint-storage.js';

/**
 * Writes and removes one small object under the job's checkpoint prefix before the run starts (as Flink
 * creates its checkpoint directories when a job starts): a storage that cannot take a snapshot — a
 * directory that is a file, a bucket that refuses writes — is refused at once, with what it said, instead
 * of being found out by failing the job over at every checkpoint (the CLI's default restarts are unlimited).
 * `WEFT_ERR_INVALID_ARGUMENT` naming `checkpointing.storage`; a failed removal is no reason to refuse (a
 * probe left behind is collected with the job's orphans: orphanedCheckpointKeys).
 */
export async function probeCheckpointStorage(storage: CheckpointStorage, jobId: string): Promise<void> {
  const key = probeKey(jobId, randomUUID());
  try {
    await storage.write(key, new Uint8Array([1]));
  } catch (error) {
    throw new EngineError('WEFT_ERR_INVALID_ARGUMENT', `invalid checkpointing.storage: ${storage.description} cannot take a checkpoint's snapshots: writing ${key} failed: ${(error as Error).message}`, {
      cause: error,
      context: { field: 'checkpointing.storage', storage: storage.description },
    });
  }
  await storage.delete(key).catch(() => {});
}
