import { hostname } from 'node:os';
import {
  type CheckpointRetention,
  type CheckpointStorage,
  type CheckpointStore,
  checkpointIdOfKey,
  checkpointJobIdsOf,
  discardJobCheckpoints,
  discardsCheckpointsAtEnd,
  isCheckpointRetention,
  type JobEventLog,
  type JobRunRecord,
  jobCheckpointsPrefix,
} from '@weft/engine';

/** What `weft gc` removed (or would) of one job id's checkpoints. */
export interface CheckpointsCollected {
  readonly jobId: string;
  /** The run's status in the log; `unknown` when the log has no run of the id (its log was collected before). */
  readonly status: string;
  /** The run's logged `--checkpoint-retention` (absent: not logged — no checkpoints, or an older weft). */
  readonly retention?: CheckpointRetention;
  /** Why: `ended` (its end and retention say its checkpoints go) or `orphaned` (snapshots no record names, of checkpoints that never completed). */
  readonly reason: 'ended' | 'orphaned';
  /** Completed checkpoints whose records were removed. */
  readonly checkpoints: number;
  /** Snapshot objects deleted. */
  readonly objects: number;
}

export interface CheckpointGcRequest {
  /** The job event log, with its checkpoint records (`checkpointStore`). */
  readonly log: JobEventLog;
  readonly storage: CheckpointStorage & { listKeys(prefix: string): Promise<string[]> };
  /** Every run the log knows. */
  readonly runs: readonly JobRunRecord[];
  /** Whether a run is dead: older than --older-than and its job master not alive (what gc collects). */
  readonly isDead: (run: JobRunRecord) => boolean;
  readonly dryRun: boolean;
}

/** The `--checkpoint-retention` the run's last `job-submitted` logged. */
async function retentionOf(log: JobEventLog, jobId: string): Promise<CheckpointRetention | undefined> {
  let retention: CheckpointRetention | undefined;
  for (const e of await log.readRun(jobId).catch(() => [])) {
    if (e.type !== 'job-submitted') continue;
    const logged = (e.data as { options?: { checkpointRetention?: unknown } | null } | null)?.options?.checkpointRetention;
    retention = isCheckpointRetention(logged) ? logged : undefined;
  }
  return retention;
}

/**
 * The checkpoint garbage `weft gc` collects, job id by job id (every id with snapshots under `checkpoints/`,
 * and every dead run):
 *
 * - a dead run (`isDead`) that ended — succeeded, failed, cancelled — and whose logged retention removes
 *   checkpoints at that end (its job master died before it could): every completed checkpoint (record
 *   first, then data) and every leftover. gc takes the run's lease first, so a newer run of the job id
 *   that starts meanwhile fences it (nothing removed) and never restores from a checkpoint half removed;
 * - any other dead run: the snapshots of checkpoints that never completed (an aborted one's, a crashed
 *   master's in-progress `chk-<id>/`), below a checkpoint id gc reserves under that lease — every
 *   checkpoint a newer run writes lies above it; its completed checkpoints stay (`--from-checkpoint`);
 * - a live run, or an id the log does not know: only the snapshots of checkpoints that never completed
 *   and are older than its newest completed one (aborted or subsumed: a pending checkpoint is always
 *   newer than every completed one). Completed checkpoints of an unknown id stay.
 *
 * The caller deletes dead runs from the log afterwards. A fenced or failing job id is skipped (reported
 * through `onSkipped`), the others go on.
 */
export async function collectCheckpoints(request: CheckpointGcRequest, onSkipped: (jobId: string, error: Error) => void): Promise<CheckpointsCollected[]> {
  const { log, storage, dryRun } = request;
  if (log.checkpointStore === undefined) return [];
  const checkpointStore = (jobId: string, epoch: number): CheckpointStore => (log.checkpointStore as NonNullable<JobEventLog['checkpointStore']>)(jobId, epoch);
  const runs = new Map(request.runs.map((r) => [r.jobId, r]));
  const withData = checkpointJobIdsOf(await storage.listKeys('checkpoints/'));
  const ids = [...new Set([...withData, ...request.runs.filter((r) => request.isDead(r)).map((r) => r.jobId)])].sort();
  const collected: CheckpointsCollected[] = [];
  for (const jobId of ids) {
    const run = runs.get(jobId);
    try {
      const keys = await storage.listKeys(jobCheckpointsPrefix(jobId));
      // read after the listing: a checkpoint that completed meanwhile is seen as completed; reads are not fenced
      const records = await checkpointStore(jobId, 0).completed();
      const recorded = new Set(records.map((c) => c.checkpointId));
      const retention = run === undefined ? undefined : await retentionOf(log, jobId);
      const end = run?.status === 'succeeded' || run?.status === 'failed' || run?.status === 'cancelled' ? run.status : undefined;
      const base = { jobId, status: run?.status ?? 'unknown', ...(retention === undefined ? {} : { retention }) };
      if (run !== undefined && request.isDead(run)) {
        const ended = end !== undefined && retention !== undefined && discardsCheckpointsAtEnd(retention, end);
        if (dryRun) {
          const objects = ended ? keys.length : keys.filter((k) => !recorded.has(checkpointIdOfKey(jobId, k) ?? 0)).length;
          if (objects > 0 || (ended && records.length > 0)) collected.push({ ...base, reason: ended ? 'ended' : 'orphaned', checkpoints: ended ? records.length : 0, objects });
          continue;
        }
        // nothing to collect: no lease taken
        if (ended ? records.length === 0 && keys.length === 0 : keys.every((k) => recorded.has(checkpointIdOfKey(jobId, k) ?? 0))) continue;
        const lease = await log.open({ jobId, owner: `weft gc ${hostname()}:${process.pid}` });
        try {
          const store = checkpointStore(jobId, lease.epoch);
          if (ended) {
            const discarded = await discardJobCheckpoints({ jobId, store, storage });
            if (discarded.checkpoints + discarded.objects > 0) collected.push({ ...base, reason: 'ended', ...discarded });
          } else {
            const below = await store.nextCheckpointId();
            const kept = new Set((await store.completed()).map((c) => c.checkpointId));
            const orphans = keys.filter((k) => {
              const id = checkpointIdOfKey(jobId, k);
              return id !== undefined && id < below && !kept.has(id);
            });
            for (const key of orphans) await storage.delete(key);
            if (orphans.length > 0) collected.push({ ...base, reason: 'orphaned', checkpoints: 0, objects: orphans.length });
          }
        } finally {
          await lease.close();
        }
        continue;
      }
      // live, or unknown to the log: only what is older than its newest completed checkpoint and never completed
      const newest = Math.max(0, ...recorded);
      const orphans = keys.filter((k) => {
        const id = checkpointIdOfKey(jobId, k);
        return id !== undefined && id < newest && !recorded.has(id);
      });
      if (!dryRun) for (const key of orphans) await storage.delete(key);
      if (orphans.length > 0) collected.push({ ...base, reason: 'orphaned', checkpoints: 0, objects: orphans.length });
    } catch (error) {
      onSkipped(jobId, error as Error);
    }
  }
  return collected;
}
