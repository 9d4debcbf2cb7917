import {
  type CheckpointRetention,
  type CheckpointStorage,
  type CheckpointStore,
  checkpointJobIdsOf,
  discardJobCheckpoints,
  discardsCheckpointsAtEnd,
  isCheckpointRetention,
  type JobEventLog,
  type JobLog,
  type JobRunRecord,
  jobCheckpointsPrefix,
  orphanedCheckpointKeys,
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
  /** Whether gc collects a run as dead: idle past --older-than, its job master not alive, and (unless a dry run) its lease taken by gc. */
  readonly isDead: (run: JobRunRecord) => boolean;
  /** The lease gc holds on each dead run (`leaseDeadRuns`; none in a dry run): its checkpoint records are written under it. */
  readonly leases: ReadonlyMap<string, JobLog>;
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
 *   first, then data) and every leftover, under the lease gc took (`leaseDeadRuns`, only while the run's
 *   epoch was still the one gc read), so a newer run of the job id that starts meanwhile fences it
 *   (nothing more removed) and never restores from a checkpoint half removed;
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
          // what the real gc would delete: every checkpoint's keys (ended), or those of never-completed ones; no key of another shape
          const objects = orphanedCheckpointKeys(jobId, keys, Number.POSITIVE_INFINITY, ended ? new Set() : recorded).length;
          if (objects > 0 || (ended && records.length > 0)) collected.push({ ...base, reason: ended ? 'ended' : 'orphaned', checkpoints: ended ? records.length : 0, objects });
          continue;
        }
        // nothing to collect
        if (ended ? records.length === 0 && keys.length === 0 : orphanedCheckpointKeys(jobId, keys, Number.POSITIVE_INFINITY, recorded).length === 0) continue;
        const lease = request.leases.get(jobId);
        if (lease === undefined) throw new Error('gc holds no lease on the run');
        const store = checkpointStore(jobId, lease.epoch);
        if (ended) {
          const discarded = await discardJobCheckpoints({ jobId, store, storage });
          if (discarded.checkpoints + discarded.objects > 0) collected.push({ ...base, reason: 'ended', ...discarded });
        } else {
          const below = await store.nextCheckpointId();
          const kept = new Set((await store.completed()).map((c) => c.checkpointId));
          const orphans = orphanedCheckpointKeys(jobId, keys, below, kept);
          for (const key of orphans) await storage.delete(key);
          if (orphans.length > 0) collected.push({ ...base, reason: 'orphaned', checkpoints: 0, objects: orphans.length });
        }
        continue;
      }
      // live, or unknown to the log: only what is older than its newest completed checkpoint and never completed
      const newest = Math.max(0, ...recorded);
      const orphans = orphanedCheckpointKeys(jobId, keys, newest, recorded);
      if (!dryRun) for (const key of orphans) await storage.delete(key);
      if (orphans.length > 0) collected.push({ ...base, reason: 'orphaned', checkpoints: 0, objects: orphans.length });
    } catch (error) {
      onSkipped(jobId, error as Error);
    }
  }
  return collected;
}
