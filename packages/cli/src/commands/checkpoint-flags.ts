import { CHECKPOINT_RETENTIONS, type CheckpointingMode, type CheckpointRetention, isCheckpointRetention } from '@weft/engine';
import { integerFlag, usageError } from '../parse-command-args.js';
import { parseDuration } from './gc-command.js';

/** The `weft run` flags of a streaming job's checkpoints. */
export const CHECKPOINT_FLAGS = {
  'checkpoint-interval': { type: 'string' },
  'checkpoint-mode': { type: 'string' },
  'checkpoint-timeout': { type: 'string' },
  'checkpoints-retained': { type: 'string' },
  'tolerable-checkpoint-failures': { type: 'string' },
  'from-checkpoint': { type: 'string' },
  'checkpoint-retention': { type: 'string' },
} as const;

export type CheckpointFlagValues = { readonly [K in keyof typeof CHECKPOINT_FLAGS]?: string | undefined };

export const CHECKPOINT_USAGE = `Checkpoints (a streaming job: its sources are ctx.generate(…); every edge pipelined; runs in process, on
worker processes with --workers N, or on a cluster's executors with --cluster):
  --checkpoint-interval D   take a checkpoint every D (1s, 500ms, 2m; > 0): sources inject barriers, every
                            task aligns them, snapshots its keyed and operator state into the --store and
                            acknowledges; the job master records the completed checkpoint in the --meta
                            store. A failed task's region restarts from the latest completed checkpoint.
                            SIGINT / SIGTERM cancel the job (exit 1); its checkpoints stay (unless
                            --checkpoint-retention removes them)
  --checkpoint-retention R  what the job's end does with its checkpoints (Flink's externalized-checkpoint-
                            retention): retain-on-cancellation (default: removed when the job succeeds,
                            kept when it fails or is cancelled) | delete-on-cancellation (kept only when
                            it fails) | delete (removed at every end) | retain (kept at every end).
                            Removed = every completed checkpoint of the job id (record first, then its
                            state) and whatever checkpoints that never completed left; a run a newer one
                            of the job id took over removes nothing. weft gc collects what a crash left
  --checkpoint-mode M       exactly-once (default: aligned barriers) | at-least-once (barriers tracked,
                            never aligned: a restore may count a record twice)
  --checkpoint-timeout D    a checkpoint not completed within D is aborted (default 10m)
  --checkpoints-retained N  completed checkpoints kept (default 1); older ones are removed with their state
  --tolerable-checkpoint-failures N
                            failed checkpoints in a row tolerated (default 0); one more fails the job
                            over globally: every task restarts from the latest checkpoint, as the
                            restart strategy allows, else the job fails
  --from-checkpoint C       with --job-id and --checkpoint-interval: start from checkpoint C (latest, or
                            its id) of that job, at this run's --parallelism (key groups and source splits
                            are redistributed). A missing or corrupted checkpoint, or one taken with another
                            max parallelism: exit 2, naming the checkpoint`;

export interface CheckpointFlags {
  readonly intervalMs: number;
  readonly mode?: CheckpointingMode;
  readonly timeoutMs?: number;
  readonly retained?: number;
  readonly tolerableFailures?: number;
  readonly restoreFrom?: 'latest' | number;
  readonly retention?: CheckpointRetention;
}

function durationFlag(flag: string, value: string): number {
  const ms = /^\d+$/.test(value.trim()) ? Number(value) : parseDuration(value);
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0) throw usageError('run', `${flag} must be a duration > 0 such as 1s, 500ms or 2m, got ${JSON.stringify(value)}`);
  return Math.max(1, Math.round(ms));
}

/** What the checkpoint flags ask for (undefined: no checkpoints); WEFT_ERR_USAGE naming the flag for bad values. */
export function parseCheckpointFlags(values: CheckpointFlagValues & { readonly 'job-id'?: string | undefined }): CheckpointFlags | undefined {
  const interval = values['checkpoint-interval'];
  if (interval === undefined) {
    const orphan = (['checkpoint-mode', 'checkpoint-timeout', 'checkpoints-retained', 'tolerable-checkpoint-failures', 'from-checkpoint', 'checkpoint-retention'] as const).find((f) => values[f] !== undefined);
    if (orphan !== undefined) throw usageError('run', `--${orphan} needs --checkpoint-interval`);
    return undefined;
  }
  const intervalMs = durationFlag('--checkpoint-interval', interval);
  const mode = values['checkpoint-mode'];
  if (mode !== undefined && mode !== 'exactly-once' && mode !== 'at-least-once') throw usageError('run', `--checkpoint-mode must be exactly-once or at-least-once, got ${JSON.stringify(mode)}`);
  const timeout = values['checkpoint-timeout'];
  const retained = integerFlag('run', '--checkpoints-retained', values['checkpoints-retained'], 1);
  const tolerable = integerFlag('run', '--tolerable-checkpoint-failures', values['tolerable-checkpoint-failures'], 0);
  const from = values['from-checkpoint'];
  let restoreFrom: 'latest' | number | undefined;
  if (from !== undefined) {
    if (values['job-id'] === undefined) throw usageError('run', '--from-checkpoint needs --job-id: it restores a checkpoint of that job');
    if (from === 'latest') restoreFrom = 'latest';
    else if (/^[1-9]\d*$/.test(from) && Number.isSafeInteger(Number(from))) restoreFrom = Number(from);
    else throw usageError('run', `--from-checkpoint must be latest or a checkpoint id (an integer >= 1), got ${JSON.stringify(from)}`);
  }
  const retention = values['checkpoint-retention'];
  if (retention !== undefined && !isCheckpointRetention(retention)) throw usageError('run', `--checkpoint-retention must be ${CHECKPOINT_RETENTIONS.join(', ')}, got ${JSON.stringify(retention)}`);
  return {
    intervalMs,
    ...(mode === undefined ? {} : { mode }),
    ...(timeout === undefined ? {} : { timeoutMs: durationFlag('--checkpoint-timeout', timeout) }),
    ...(retained === undefined ? {} : { retained }),
    ...(tolerable === undefined ? {} : { tolerableFailures: tolerable }),
    ...(restoreFrom === undefined ? {} : { restoreFrom }),
    ...(retention === undefined ? {} : { retention }),
  };
}
