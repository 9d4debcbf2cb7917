import { invalidEngineArgument } from '../errors/engine-error.js';
import { CHECKPOINT_RETENTIONS, type CheckpointRetention, DEFAULT_CHECKPOINT_RETENTION, isCheckpointRetention } from './checkpoint-retention.js';
import type { CheckpointStorage } from './checkpoint-storage.js';
import type { CheckpointStore } from './checkpoint-store.js';

/** A checkpointed run's guarantee: aligned barriers (exactly-once state) or a barrier tracker (at-least-once). */
export type CheckpointingMode = 'exactly-once' | 'at-least-once';

/** RunJobOptions.checkpointing: a streaming job's checkpoints (`weft run --checkpoint-interval`). */
export interface CheckpointingOptions {
  /** Milliseconds between checkpoints; an integer > 0. */
  readonly intervalMs: number;
  /** @defaultValue 'exactly-once' */
  readonly mode?: CheckpointingMode;
  /** A checkpoint not completed within this is aborted. @defaultValue 600000 (Flink's 10 minutes) */
  readonly timeoutMs?: number;
  /** Completed checkpoints kept; older ones are removed with their state. @defaultValue 1 */
  readonly retained?: number;
  /** Consecutive failed checkpoints (expired, a snapshot that could not be written) tolerated; one more fails the job over globally (every task restarts from the latest checkpoint, as the restart strategy allows). @defaultValue 0 */
  readonly tolerableFailures?: number;
  /** Where task snapshots go (the run's `--store`). */
  readonly storage: CheckpointStorage;
  /** Where completed checkpoints are recorded. @defaultValue the event log's (RunJobOptions.eventLog), else one in memory */
  readonly store?: CheckpointStore;
  /**
   * Start from a completed checkpoint of the job id (`--from-checkpoint latest|ID`), with this run's
   * parallelism: key groups and source splits are redistributed. Checked before anything runs
   * (WEFT_ERR_STATE_RESTORE naming the checkpoint). @defaultValue none: a fresh start
   */
  readonly restoreFrom?: 'latest' | number;
  /**
   * What happens to the job's checkpoints when the run ends (`--checkpoint-retention`): see
   * CheckpointRetention. A run that lost its lease to a newer run of the job id removes nothing.
   * @defaultValue 'retain-on-cancellation' (deleted when the job succeeds, kept when it fails or is cancelled)
   */
  readonly retention?: CheckpointRetention;
}

export interface ResolvedCheckpointingOptions extends Omit<CheckpointingOptions, 'mode' | 'retention'> {
  readonly mode: CheckpointingMode;
  readonly retention: CheckpointRetention;
}

const KEYS = new Set(['intervalMs', 'mode', 'timeoutMs', 'retained', 'tolerableFailures', 'storage', 'store', 'restoreFrom', 'retention']);

function positiveInteger(field: string, value: unknown, min: number): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)) throw invalidEngineArgument(`checkpointing.${field}`, `expected an integer >= ${min}, got ${String(value)}`);
}

/** Checks RunJobOptions.checkpointing once: WEFT_ERR_INVALID_ARGUMENT naming the option; unknown keys refused. */
export function resolveCheckpointingOptions(options: CheckpointingOptions): ResolvedCheckpointingOptions {
  if (typeof options !== 'object' || options === null) throw invalidEngineArgument('checkpointing', 'expected an object');
  for (const key of Object.keys(options)) if (!KEYS.has(key)) throw invalidEngineArgument(`checkpointing.${key}`, `unknown option (known: ${[...KEYS].join(', ')})`);
  if (typeof options.intervalMs !== 'number' || !Number.isSafeInteger(options.intervalMs) || options.intervalMs <= 0) throw invalidEngineArgument('checkpointing.intervalMs', `expected an integer > 0 (milliseconds), got ${String(options.intervalMs)}`);
  const mode = options.mode ?? 'exactly-once';
  if (mode !== 'exactly-once' && mode !== 'at-least-once') throw invalidEngineArgument('checkpointing.mode', `expected 'exactly-once' or 'at-least-once', got ${JSON.stringify(mode)}`);
  positiveInteger('timeoutMs', options.timeoutMs, 1);
  positiveInteger('retained', options.retained, 1);
  positiveInteger('tolerableFailures', options.tolerableFailures, 0);
  const storage = options.storage as Partial<CheckpointStorage> | undefined;
  if (typeof storage?.write !== 'function' || typeof storage.read !== 'function' || typeof storage.delete !== 'function') throw invalidEngineArgument('checkpointing.storage', 'expected a CheckpointStorage (write, read, delete)');
  if (options.store !== undefined && typeof options.store.nextCheckpointId !== 'function') throw invalidEngineArgument('checkpointing.store', 'expected a CheckpointStore');
  const from = options.restoreFrom;
  if (from !== undefined && from !== 'latest' && !(typeof from === 'number' && Number.isSafeInteger(from) && from >= 1)) throw invalidEngineArgument('checkpointing.restoreFrom', `expected 'latest' or a checkpoint id >= 1, got ${JSON.stringify(from)}`);
  const retention = options.retention ?? DEFAULT_CHECKPOINT_RETENTION;
  if (!isCheckpointRetention(retention)) throw invalidEngineArgument('checkpointing.retention', `expected one of ${CHECKPOINT_RETENTIONS.map((r) => `'${r}'`).join(', ')}, got ${JSON.stringify(retention)}`);
  return { ...options, mode, retention };
}
