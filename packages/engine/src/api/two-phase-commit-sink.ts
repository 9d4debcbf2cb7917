import type { JsonValue } from '@weft/shuffle-api';
import type { ExternalFileSystem } from '../io/external-file-system.js';

/** What a two-phase-commit sink knows of the subtask attempt it writes for. */
export interface TwoPhaseCommitSinkContext {
  readonly jobId: string;
  readonly operatorName: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly attempt: number;
  /** Directory relative paths resolve against (the job master's working directory). */
  readonly cwd: string;
  /** Where `<scheme>://` outputs live (RunJobOptions.fileSystems). */
  readonly fileSystems: readonly ExternalFileSystem[];
}

/**
 * A transaction's handle: plain JSON naming everything needed to commit or abort it from another
 * process or a later run (a part file, an upload id and its parts, a transaction id). It goes into the
 * checkpoint's operator state, so it must not refer to anything in memory.
 */
export type TransactionHandle = JsonValue;

/**
 * A sink that writes exactly once through transactions (Flink's TwoPhaseCommitSinkFunction, the Sink V2
 * committer model). One instance per subtask attempt, made by the factory handed to `sinkTo`.
 *
 * Lifecycle, driven by the engine on the task's event loop (one call at a time, in this order):
 * - `beginTransaction()` when the attempt opens and after every pre-commit: the records that follow go
 *   into it. Its handle is recorded in the next checkpoint as the *open* transaction.
 * - `write(handle, value)` for each record, into the open transaction. Nothing written is visible yet.
 * - `preCommit(handle)` at a checkpoint barrier (and once at the end of input): flush, make the
 *   transaction durable but not visible; it returns the handle to commit it by (it may differ from the
 *   one begun, e.g. with the upload's parts). That handle goes into the checkpoint's operator state
 *   before the checkpoint is acknowledged; a rejection declines the checkpoint.
 * - `commit(handle)` once the job master says the checkpoint that pre-committed it completed
 *   (notifyCheckpointComplete), or, on restore, for every pre-committed handle of the restored checkpoint
 *   — so a handle may be committed again after it was committed once: **commit is idempotent** (a
 *   re-commit makes no change). A rejection fails the task (its transaction stays pre-committed and is
 *   committed again when the task restores).
 * - `abort(handle)`: the open transaction when the attempt fails or is cancelled, and, on restore, the
 *   transaction the restored checkpoint recorded as open (its records are replayed). Idempotent; an
 *   aborted transaction leaves nothing visible (no part file, no upload, no entry).
 * - At the end of input the open transaction is pre-committed and committed once the whole job
 *   succeeded (the final commit, as the batch sinks publish at the end of the job).
 *
 * Restore with another parallelism: the recorded handles are dealt over the new subtasks (operator list
 * state, split), so `commit` and `abort` take handles another subtask began.
 *
 * Lingering transactions — staged by an earlier attempt of the subtask and not recorded in the restored
 * checkpoint (pre-committed for a checkpoint that never completed, or begun after the one restored; every
 * transaction of an earlier attempt when the job restarts with no checkpoint to restore): a sink that
 * can find them by name implements `abortLingering`, called once when an attempt opens, after the
 * restore's commits and aborts (Flink's Kafka sink aborting lingering transactions by transactional-id
 * prefix). A sink without it leaves them for an outside clean-up (`weft gc` collects the staging that
 * `TwoPhaseCommitSinkFactory.staging` describes once the job ended).
 *
 * Not in the contract: ordering between subtasks; how long a pre-committed transaction may wait for its
 * commit; lingering transactions of subtasks a restore with a smaller parallelism no longer has (left
 * to the clean-up).
 */
export interface TwoPhaseCommitSink<T> {
  beginTransaction(): Promise<TransactionHandle> | TransactionHandle;
  /** A promise holds the task back until it settles (backpressure); a rejection fails the task. */
  write(handle: TransactionHandle, value: T): Promise<void> | void;
  preCommit(handle: TransactionHandle): Promise<TransactionHandle>;
  commit(handle: TransactionHandle): Promise<void>;
  abort(handle: TransactionHandle): Promise<void>;
  /**
   * Aborts the lingering transactions of this instance's subtask (same job, operator and subtask index;
   * another attempt): every one staged that is not in `request.keep` (the pre-committed handles the
   * restored checkpoint recorded, over all its subtasks: what a completed checkpoint still commits; empty
   * when the attempt restores nothing). The engine calls it when an attempt opens, before its first
   * `beginTransaction`, once no earlier attempt of the subtask runs; the job master's own instances
   * (attempt -1) never get it. Resolves with the number aborted. Idempotent.
   */
  abortLingering?(request: AbortLingeringRequest): Promise<number>;
  /** Releases what the instance holds (connections); called once after success or failure. */
  close?(): Promise<void> | void;
}

export interface AbortLingeringRequest {
  /** Handles not to touch, whoever staged them: what the restored checkpoint recorded pre-committed. */
  readonly keep: readonly TransactionHandle[];
}

/**
 * Where a sink stages its transactions, as plain JSON recorded in the job's event log
 * (`job-submitted`), so that `weft gc` can collect what a job that ended left staged without loading the
 * job: `{ kind: 'file-commit', dir }` (fileCommitSink, on a local or an `s3://` directory) or `{ kind:
 * 'redis-stream', url, keyPrefix }` (redisStreamSink). Another kind is recorded and left alone.
 */
export type TwoPhaseCommitStaging = { readonly kind: string } & { readonly [key: string]: JsonValue };

/**
 * What a `sinkTo` sink promises (Flink's DeliveryGuarantee, its EXACTLY_ONCE and NONE): `exactly-once`, the
 * default — each record committed once, given exactly-once checkpoints; `none` — the same transactions,
 * declared to promise nothing of the records a failure takes with it. A job with approximate recovery,
 * which loses the records in flight, writes only through `none` sinks (an `exactly-once` one is refused
 * at start: WEFT_ERR_APPROXIMATE_REFUSED).
 */
export type DeliveryGuarantee = 'exactly-once' | 'none';

/**
 * Makes the sink instance of one subtask attempt. `staging`, when set, says where its transactions are
 * staged (see TwoPhaseCommitStaging): `weft gc` collects them there once the job ended.
 */
export type TwoPhaseCommitSinkFactory<T> = ((context: TwoPhaseCommitSinkContext) => TwoPhaseCommitSink<T>) & { readonly staging?: TwoPhaseCommitStaging };
