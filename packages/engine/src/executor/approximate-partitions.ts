import type { ShuffleDescriptor } from '@weft/shuffle-api';
import { EngineError } from '../errors/engine-error.js';

/** A consumer waiting for the first registration of an approximate partition. */
interface Waiter {
  readonly resolve: (descriptor: ShuffleDescriptor) => void;
}

/**
 * The PIPELINED_APPROXIMATE partitions registered in one task executor, by partition id: the descriptor of
 * each one's latest attempt. An approximate edge joins two regions, both run by this executor (approximate
 * jobs run in process): the producer's RegionRunner registers its partition with the executor's pipelined
 * ShuffleMaster and publishes it here; a consumer's gate waits here until every partition it reads was
 * registered once. Later attempts are found by the shuffle itself (a gate rebinds to the partition's next
 * registration), so a consumer needs any attempt's descriptor, not the newest.
 *
 * In worker mode over a network shuffle the job master registers approximate partitions itself (at the
 * producer's worker) and tells every worker each new attempt (TaskExecutor.updatePartitionInfo): they are
 * published here too, a newer attempt replacing an older one, never the reverse (messages and deployments
 * may carry an older attempt than one already published).
 *
 * Ownership: the executor's; `close()` rejects the waits still pending. No timers of its own beyond a wait's.
 */
export class ApproximatePartitions {
  readonly #registered = new Map<string, ShuffleDescriptor>();
  readonly #waiting = new Map<string, Set<Waiter>>();

  /** Partition `descriptor.partition.partitionId` has a (new) attempt registered. */
  publish(descriptor: ShuffleDescriptor): void {
    const id = descriptor.partition.partitionId;
    const known = this.#registered.get(id);
    if (known !== undefined && known.producer.attempt > descriptor.producer.attempt) return;
    this.#registered.set(id, descriptor);
    const waiters = this.#waiting.get(id);
    this.#waiting.delete(id);
    for (const waiter of waiters ?? []) waiter.resolve(descriptor);
  }

  /** The newest attempt of partition `partitionId` published here, if any. */
  latest(partitionId: string): ShuffleDescriptor | undefined {
    return this.#registered.get(partitionId);
  }

  /**
   * A descriptor of partition `partitionId`: at once when one was registered, else once it is. Rejects with
   * `WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT` after `timeoutMs`, or with the signal's reason when aborted.
   */
  descriptorOf(request: { readonly partitionId: string; readonly executionVertexId: string; readonly timeoutMs: number; readonly signal: AbortSignal }): Promise<ShuffleDescriptor> {
    const { partitionId, executionVertexId, timeoutMs, signal } = request;
    const known = this.#registered.get(partitionId);
    if (known !== undefined) return Promise.resolve(known);
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<ShuffleDescriptor>((resolve, reject) => {
      const waiters = this.#waiting.get(partitionId) ?? new Set<Waiter>();
      this.#waiting.set(partitionId, waiters);
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        waiters.delete(waiter);
      };
      const waiter: Waiter = {
        resolve: (descriptor) => {
          done();
          resolve(descriptor);
        },
      };
      const onAbort = (): void => {
        done();
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new EngineError('WEFT_ERR_APPROXIMATE_RECONNECT_TIMEOUT', `task ${executionVertexId} did not reconnect to approximate input partition ${partitionId} within ${timeoutMs} ms (approximateReconnectTimeoutMs): its producer's partition was never registered`, {
            context: { executionVertexId, partitionId, timeoutMs },
          }),
        );
      }, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      waiters.add(waiter);
    });
  }

  /** How many consumers wait (for leak checks). */
  get waiting(): number {
    let n = 0;
    for (const set of this.#waiting.values()) n += set.size;
    return n;
  }
}
