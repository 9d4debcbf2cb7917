import { type Logger, ShuffleError, type ShuffleDescriptor, isShuffleError } from '@weft/shuffle-api';
import type { CommittedPartition } from '../protocol/committed-partition.js';
import type { BlobWriter } from '../storage/blob-store.js';
import { PushChannel } from './push-channel.js';
import type { AttemptTarget, ShuffleServerClient } from './shuffle-server-client.js';

export interface HttpPushBlobWriterOptions {
  readonly client: ShuffleServerClient;
  readonly target: AttemptTarget;
  /** Up to this size the object is held and pushed in one replayable request at `complete()`. */
  readonly maxBufferedBytes: number;
  /** What a streamed push may have queued for the socket before `append` waits. */
  readonly streamQueueBytes: number;
  /** The commit request, asked at `complete()`: a held object is then pushed and committed in one request. */
  readonly commitRequest?: () => { readonly descriptor: ShuffleDescriptor; readonly subpartitionBytes: readonly number[] };
  /** Commit as one of several copies of the attempt (replicas, or after a move to a spare). @defaultValue false */
  readonly replica?: boolean;
  readonly logger: Logger;
}

/**
 * A BlobWriter that pushes the object to a shuffle server (`PUT …/attempts/<a>/data`). A small object is
 * held and sent at `complete()` in one request with a Content-Length (retried on retryable errors); once
 * it grows past `maxBufferedBytes` the push starts and streams (chunked, sent once), `append` waiting
 * while the socket is behind. Appended chunks are copied (the caller reuses its buffers), once;
 * `appendOwned` takes a copy already made (a ReplicatedPushBlobWriter shares one among its replicas).
 * While it still holds everything (nothing streamed, nothing committed) it may be moved to another
 * server (`moveTo`): a writer whose server died pushes there instead.
 */
export class HttpPushBlobWriter implements BlobWriter {
  readonly key: string;
  readonly uploadId = undefined;
  bytesWritten = 0;
  /** Set when `complete()` committed the object along with its push. */
  committed: CommittedPartition | undefined;
  private held: Uint8Array[] = [];
  private heldBytes = 0;
  private channel: PushChannel | undefined;
  private response: Promise<{ objectBytes: number }> | undefined;
  private readonly abortController = new AbortController();
  private aborted = false;

  private current: AttemptTarget;

  constructor(private readonly o: HttpPushBlobWriterOptions) {
    this.current = o.target;
    this.key = `${o.target.url}/…/${o.target.partitionId}@${o.target.attempt}`;
  }

  /** The server and attempt pushed to now. */
  get target(): AttemptTarget {
    return this.current;
  }

  /** True while every byte appended is still held here: nothing streamed, nothing committed. */
  get holdsAll(): boolean {
    return this.channel === undefined && this.committed === undefined && !this.aborted;
  }

  /** Pushes to `target` instead (only while `holdsAll`): the caller took the attempt's lease there. */
  moveTo(target: AttemptTarget): void {
    if (!this.holdsAll) throw new ShuffleError('SHF_ERR_CLOSED', `the push of ${target.partitionId} cannot move: its bytes were sent`);
    this.current = target;
  }

  get bufferedBytes(): number {
    return this.heldBytes + (this.channel?.bytes ?? 0);
  }

  get maxRetainedBytes(): number {
    return Math.max(this.o.maxBufferedBytes, this.o.streamQueueBytes);
  }

  async append(chunks: readonly Uint8Array[]): Promise<void> {
    let length = 0;
    for (const chunk of chunks) length += chunk.length;
    if (length === 0) return;
    if (this.aborted) throw new ShuffleError('SHF_ERR_CLOSED', `the push of ${this.o.target.partitionId} was aborted`);
    const copy = Buffer.allocUnsafe(length);
    let at = 0;
    for (const chunk of chunks) {
      copy.set(chunk, at);
      at += chunk.length;
    }
    return this.appendOwned(copy);
  }

  /** Appends `copy`, which the writer may keep (nobody changes it afterwards). */
  async appendOwned(copy: Uint8Array): Promise<void> {
    const length = copy.length;
    if (length === 0) return;
    if (this.aborted) throw new ShuffleError('SHF_ERR_CLOSED', `the push of ${this.o.target.partitionId} was aborted`);
    this.bytesWritten += length;
    if (this.channel === undefined) {
      this.held.push(copy);
      this.heldBytes += length;
      if (this.heldBytes <= this.o.maxBufferedBytes) return;
      this.startStreaming();
      return;
    }
    await this.channel.put(copy);
  }

  async complete(): Promise<number> {
    if (this.channel === undefined) {
      // held until it is acknowledged: a push that fails may be moved and sent again
      const push = { ...this.current, body: this.held, length: this.heldBytes, signal: this.abortController.signal };
      const commit = this.o.commitRequest?.();
      this.committed = commit === undefined ? undefined : await this.o.client.pushAndCommit(push, commit.descriptor, commit.subpartitionBytes, this.o.replica === true);
      if (this.committed === undefined) await this.o.client.push(push);
      this.held = [];
      this.heldBytes = 0;
      return this.bytesWritten;
    }
    this.channel.end();
    await this.response;
    return this.bytesWritten;
  }

  async abort(): Promise<void> {
    if (this.aborted) return;
    this.aborted = true;
    this.held = [];
    this.heldBytes = 0;
    this.abortController.abort();
    this.channel?.fail(new ShuffleError('SHF_ERR_CLOSED', `the push of ${this.o.target.partitionId} was aborted`));
    await this.response?.catch(() => undefined);
    await this.o.client.abort(this.current).catch((error: unknown) => {
      this.o.logger.debug({ partitionId: this.o.target.partitionId, error: (error as Error).message }, 'could not delete an aborted attempt on the server');
    });
  }

  private startStreaming(): void {
    const channel = new PushChannel(this.o.streamQueueBytes);
    this.channel = channel;
    for (const chunk of this.held) void channel.put(chunk).catch(() => undefined);
    this.held = [];
    this.heldBytes = 0;
    const response = this.o.client.push({ ...this.current, body: channel, signal: this.abortController.signal });
    // a refusal (409, 413, malformed) or a broken connection stops the writer's next append
    response.catch((error: unknown) => channel.fail(isShuffleError(error) ? error : new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', String(error), { cause: error })));
    this.response = response;
  }
}
