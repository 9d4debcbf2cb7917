import type { TransactionHandle, TwoPhaseCommitSink, TwoPhaseCommitSinkFactory } from '../api/two-phase-commit-sink.js';
import { EngineError } from '../errors/engine-error.js';
import type { OperatorContext, SinkOutput, StreamOperator } from './stream-operator.js';

/**
 * The operator list state of a two-phase-commit sink: `[checkpointId, phase, handle]` — the transactions
 * pre-committed and not yet known committed (`pre-committed`, committed again on restore) and the one
 * open when the checkpoint was taken (`open`, aborted on restore).
 */
export const TRANSACTIONS_STATE = 'two-phase-commit-transactions';

/**
 * The same pre-committed handles again, as a union list (every restored subtask gets all of them): what
 * no subtask's `abortLingering` may touch, whichever subtask a restore with another parallelism deals
 * them to.
 */
export const COMMITTABLES_STATE = 'two-phase-commit-committables';

type RecordedTransaction = [number, 'pre-committed' | 'open', TransactionHandle];

/**
 * Drives a TwoPhaseCommitSink (see its contract): a transaction open from `open()`, pre-committed at each
 * checkpoint (its handle recorded in operator state before the acknowledgement) and a new one begun,
 * committed when the checkpoint completes (`notifyCheckpointComplete`), the open one aborted on failure
 * or cancellation. A restored attempt first commits the pre-committed handles its checkpoint recorded and
 * aborts the open one; then every attempt of a checkpointed job has its sink abort the lingering
 * transactions of its subtask (`abortLingering`, when the sink has it), keeping every handle the restored
 * checkpoint recorded pre-committed. At the end of input the open transaction is pre-committed and reported
 * (`SinkOutput` kind `two-phase-commit`): the job master commits it once the whole job succeeded, or
 * aborts it when the job failed.
 */
export class TwoPhaseCommitSinkOperator implements StreamOperator {
  readonly #sink: TwoPhaseCommitSink<unknown>;
  /** The sink operator's uid: two sinks of one name are told apart by it at the final commit. */
  readonly #uid: string;
  readonly #context: OperatorContext;
  #open: TransactionHandle | undefined;
  /** Pre-committed at a checkpoint, not yet committed: by checkpoint id, in order. */
  #pending: { readonly checkpointId: number; readonly handle: TransactionHandle }[] = [];
  /** Every asynchronous sink call, one at a time in order (writes that returned a promise included). */
  #chain: Promise<void> = Promise.resolve();
  #final: TransactionHandle | undefined;
  /** Records that arrived between a pre-commit and the next transaction's begin. */
  #held: unknown[] = [];
  #finished = false;
  /** `sinkOutput()` handed the final transaction to the task's result (the job master commits or aborts it). */
  #handedOver = false;
  /** A pre-commit or a begin failed: the records that follow have no transaction, so the task fails. */
  #broken: unknown;

  constructor(create: TwoPhaseCommitSinkFactory<unknown>, uid: string, context: OperatorContext) {
    this.#uid = uid;
    this.#context = context;
    const { jobId, operatorName, subtask, parallelism, attempt, cwd, fileSystems } = context;
    this.#sink = create(Object.freeze({ jobId, operatorName, subtask, parallelism, attempt, cwd, fileSystems }));
    if (this.#sink === null || typeof this.#sink !== 'object' || typeof this.#sink.beginTransaction !== 'function') {
      throw this.#failure('the sinkTo factory returned no TwoPhaseCommitSink', undefined);
    }
  }

  async open(): Promise<void> {
    const state = this.#context.state;
    const keep: TransactionHandle[] = [];
    if (state?.restored === true) {
      const recorded = state.operator().listState<RecordedTransaction>(TRANSACTIONS_STATE, 'split').get();
      const ordered = [...recorded].sort((a, b) => a[0] - b[0]);
      for (const [, phase, handle] of ordered) {
        if (phase === 'pre-committed') keep.push(handle);
        try {
          await (phase === 'pre-committed' ? this.#sink.commit(handle) : this.#sink.abort(handle));
        } catch (error) {
          throw this.#failure(`cannot ${phase === 'pre-committed' ? 'commit' : 'abort'} restored transaction ${JSON.stringify(handle)}`, error);
        }
      }
      // a checkpoint written before the union list existed has only this subtask's share
      keep.push(...state.operator().listState<TransactionHandle>(COMMITTABLES_STATE, 'union').get());
    }
    // what earlier attempts of this subtask staged after the restored checkpoint (or at all, restoring nothing)
    if (state !== undefined && this.#sink.abortLingering !== undefined) {
      const abortLingering = this.#sink.abortLingering.bind(this.#sink);
      await this.#call('abort the lingering transactions', () => abortLingering({ keep }));
    }
    this.#open = await this.#call('begin a transaction', () => this.#sink.beginTransaction());
    this.#record();
  }

  collect(value: unknown): void {
    if (this.#broken !== undefined) throw this.#broken;
    const handle = this.#open;
    if (handle === undefined) {
      // after a barrier, before the next transaction began: held for it (the task waits for it to begin)
      this.#held.push(value);
      if (this.#held.length === 1) this.#context.backpressure.blockOn(this.#chain);
      return;
    }
    this.#write(handle, value);
  }

  #write(handle: TransactionHandle, value: unknown): void {
    const written = this.#sink.write(handle, value);
    if (written !== undefined && typeof (written as Promise<void>).then === 'function') {
      this.#chain = this.#chain.then(() => written).catch((error: unknown) => {
        throw this.#failure('cannot write', error);
      });
      this.#context.backpressure.blockOn(this.#chain);
    }
  }

  /** Pre-commits the open transaction and begins the next; the state is recorded once the pre-commit is durable. */
  snapshotState(checkpointId: number): Promise<void> {
    const handle = this.#open;
    if (handle === undefined) return Promise.reject(new Error('the two-phase-commit sink has no open transaction'));
    this.#open = undefined;
    const step = this.#chain.then(async () => {
      const preCommitted = await this.#call('pre-commit', () => this.#sink.preCommit(handle));
      this.#pending.push({ checkpointId, handle: preCommitted });
      const next = await this.#call('begin a transaction', () => this.#sink.beginTransaction());
      this.#open = next;
      this.#record();
      const held = this.#held;
      this.#held = [];
      for (const value of held) this.#write(next, value);
    });
    // the checkpoint is declined (the rejection), and the task fails at its next record or its end
    this.#chain = step.catch((error: unknown) => {
      this.#broken ??= error;
    });
    return step;
  }

  /** The job master says checkpoint `checkpointId` completed: every transaction pre-committed for it or before is committed. */
  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    const step = this.#chain.then(async () => {
      while (this.#pending.length > 0 && (this.#pending[0]?.checkpointId ?? Infinity) <= checkpointId) {
        const { handle } = this.#pending[0] as { handle: TransactionHandle };
        await this.#call('commit', () => this.#sink.commit(handle));
        this.#pending.shift();
      }
    });
    this.#chain = step.catch(() => {});
    return step;
  }

  async finish(): Promise<void> {
    await this.#chain;
    if (this.#broken !== undefined) throw this.#broken;
    const handle = this.#open;
    this.#open = undefined;
    if (handle !== undefined) this.#final = await this.#call('pre-commit', () => this.#sink.preCommit(handle));
    this.#finished = true;
  }

  async close(): Promise<void> {
    await this.#chain.catch(() => {});
    const handle = this.#open;
    this.#open = undefined;
    // finished, but the task failed before it reported its sinks: the final transaction reaches no one
    const final = this.#handedOver ? undefined : this.#final;
    try {
      // a failure or a cancellation: the open transaction goes; pre-committed ones stay for a restore
      if (handle !== undefined) await this.#sink.abort(handle);
      if (final !== undefined) await this.#sink.abort(final);
    } finally {
      await this.#sink.close?.();
    }
  }

  sinkOutput(): SinkOutput | undefined {
    if (!this.#finished) return undefined;
    this.#handedOver = true;
    const { operatorName, subtask, parallelism } = this.#context;
    // pre-committed at checkpoints whose completion this attempt was not told of: committed with the final one (idempotent)
    const handles = [...this.#pending.map((p) => p.handle), ...(this.#final === undefined ? [] : [this.#final])];
    return { kind: 'two-phase-commit', sink: operatorName, uid: this.#uid, subtask, parallelism, handles };
  }

  /** Records the pending and open transactions in operator state (a checkpointed job only). */
  #record(): void {
    const state = this.#context.state;
    if (state === undefined) return;
    const entries: RecordedTransaction[] = this.#pending.map((p) => [p.checkpointId, 'pre-committed', p.handle]);
    if (this.#open !== undefined) entries.push([Number.MAX_SAFE_INTEGER, 'open', this.#open]);
    state.operator().listState<RecordedTransaction>(TRANSACTIONS_STATE, 'split').update(entries);
    state.operator().listState<TransactionHandle>(COMMITTABLES_STATE, 'union').update(this.#pending.map((p) => p.handle));
  }

  async #call<R>(what: string, fn: () => Promise<R> | R): Promise<R> {
    try {
      return await fn();
    } catch (error) {
      throw this.#failure(`cannot ${what}`, error);
    }
  }

  #failure(problem: string, cause: unknown): EngineError {
    const { operatorName, subtask } = this.#context;
    const message = cause === undefined ? problem : `${problem}: ${(cause as Error).message}`;
    return new EngineError('WEFT_ERR_SINK_FAILED', `sink ${JSON.stringify(operatorName)} (subtask ${subtask}) ${message}`, { ...(cause === undefined ? {} : { cause }), context: { operator: operatorName, subtask } });
  }
}
