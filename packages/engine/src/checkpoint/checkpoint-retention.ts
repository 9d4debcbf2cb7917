/**
 * What happens to a job's checkpoints when it ends (Flink's `execution.checkpointing.externalized-checkpoint-retention`,
 * `weft run --checkpoint-retention`). A job that succeeds never needs them again; one that failed (its
 * restarts exhausted) or was cancelled is restored from its latest with `--from-checkpoint latest`.
 *
 * | retention | succeeded | cancelled | failed |
 * |---|---|---|---|
 * | `retain-on-cancellation` (default, Flink's RETAIN_ON_CANCELLATION) | deleted | kept | kept |
 * | `delete-on-cancellation` (Flink's DELETE_ON_CANCELLATION) | deleted | deleted | kept |
 * | `delete` (Flink's NO_EXTERNALIZED_CHECKPOINTS) | deleted | deleted | deleted |
 * | `retain` (nothing removed at the end; `checkpointing.retained` still prunes during the run) | kept | kept | kept |
 *
 * "Kept" is the `retained` newest completed ones; "deleted" is every completed checkpoint of the job id
 * (those earlier runs of it left included) and every snapshot left under `checkpoints/<job>/` by
 * checkpoints that never completed.
 */
export type CheckpointRetention = 'retain-on-cancellation' | 'delete-on-cancellation' | 'delete' | 'retain';

export const CHECKPOINT_RETENTIONS: readonly CheckpointRetention[] = ['retain-on-cancellation', 'delete-on-cancellation', 'delete', 'retain'];

export const DEFAULT_CHECKPOINT_RETENTION: CheckpointRetention = 'retain-on-cancellation';

/** How a run ended, for its checkpoints: `cancelled` is a run aborted from outside (SIGINT / SIGTERM, RunJobOptions.signal). */
export type CheckpointedJobEnd = 'succeeded' | 'failed' | 'cancelled';

export function isCheckpointRetention(value: unknown): value is CheckpointRetention {
  return typeof value === 'string' && (CHECKPOINT_RETENTIONS as readonly string[]).includes(value);
}

/** Whether a run that ended so removes its job's checkpoints under `retention` (the table above). */
export function discardsCheckpointsAtEnd(retention: CheckpointRetention, end: CheckpointedJobEnd): boolean {
  switch (retention) {
    case 'retain':
      return false;
    case 'delete':
      return true;
    case 'delete-on-cancellation':
      return end !== 'failed';
    case 'retain-on-cancellation':
      return end === 'succeeded';
  }
}
