import { type Logger, ShuffleError, type ShuffleDescriptor, isShuffleError } from '@weft/shuffle-api';
import type { BlobWriter } from '../storage/blob-store.js';
import { HttpPushBlobWriter } from './http-push-blob-writer.js';
import type { ServerLocation } from './server-descriptor.js';
import type { AttemptTarget, ShuffleServerClient } from './shuffle-server-client.js';

export interface ReplicatedPushBlobWriterOptions {
  readonly client: ShuffleServerClient;
  /** The attempt on each server that gets a copy, primary first. */
  readonly targets: readonly (AttemptTarget & { readonly serverId: string })[];
  /** Servers a copy whose server died may move to, in order (each takes at most one). */
  readonly spares: readonly ServerLocation[];
  readonly maxBufferedBytes: number;
  readonly streamQueueBytes: number;
  readonly attemptLeaseMs: number;
  readonly commitRequest: () => { readonly descriptor: ShuffleDescriptor; readonly subpartitionBytes: readonly number[] };
  /** Commit as one copy among several (the server then accepts the same attempt committed elsewhere). */
  readonly replica: boolean;
  readonly logger: Logger;
}

interface Copy {
  readonly push: HttpPushBlobWriter;
  serverId: string;
  committed: boolean;
  /** A move in progress (a lease renewal and a push may fail at once: the copy moves once). */
  moving?: Promise<boolean>;
}

/**
 * The data object of one attempt pushed to one or more shuffle servers (`replicas`): every appended
 * chunk is copied once and handed to each server's HttpPushBlobWriter, so every copy gets the same bytes
 * (framed and encoded once, by the partition writer). Whatever a server does wrong that is an outage
 * (unreachable, broken connection, timeout) costs only its copy: a copy that still holds all its bytes
 * (a small partition, not sent yet, or no byte written) moves to the first spare whose lease it can
 * take and is sent there; otherwise it is dropped as long as another copy remains. When none remains,
 * the writer fails with SHF_ERR_STORAGE_UNAVAILABLE (retryable) carrying `server`, `serverId` and, when
 * the server cannot be reached at all, `unreachable: true` — the task restarts, placed elsewhere.
 * Refusals (conflict, invalid, too large) fail the writer whatever the other copies do.
 */
export class ReplicatedPushBlobWriter implements BlobWriter {
  readonly key: string;
  readonly uploadId = undefined;
  bytesWritten = 0;
  private readonly copies: Copy[];
  /** Copies dropped after an outage: aborted (best effort) with the others. */
  private readonly dropped: Copy[] = [];
  private readonly spares: ServerLocation[];

  constructor(private readonly o: ReplicatedPushBlobWriterOptions) {
    this.spares = [...o.spares];
    this.copies = o.targets.map((target) => ({
      push: new HttpPushBlobWriter({
        client: o.client,
        target,
        maxBufferedBytes: o.maxBufferedBytes,
        streamQueueBytes: o.streamQueueBytes,
        commitRequest: o.commitRequest,
        replica: o.replica,
        logger: o.logger,
      }),
      serverId: target.serverId,
      committed: false,
    }));
    this.key = this.copies[0]!.push.key;
  }

  /** Servers holding a copy now (the ones still in the push), primary first. */
  get servers(): ServerLocation[] {
    return this.copies.map((c) => ({ serverId: c.serverId, url: c.push.target.url }));
  }

  get bufferedBytes(): number {
    // held chunks are shared by the copies; a streamed copy's queue is its own
    let most = 0;
    for (const c of this.copies) most = Math.max(most, c.push.bufferedBytes);
    return most;
  }

  get maxRetainedBytes(): number {
    return Math.max(this.o.maxBufferedBytes, this.o.streamQueueBytes);
  }

  /** Takes (or renews) the attempt's lease on every copy's server. */
  async lease(): Promise<void> {
    await this.each((c) => this.o.client.lease(c.push.target, this.o.attemptLeaseMs));
  }

  async append(chunks: readonly Uint8Array[]): Promise<void> {
    let length = 0;
    for (const chunk of chunks) length += chunk.length;
    if (length === 0) return;
    const copy = Buffer.allocUnsafe(length);
    let at = 0;
    for (const chunk of chunks) {
      copy.set(chunk, at);
      at += chunk.length;
    }
    this.bytesWritten += length;
    await this.each((c) => c.push.appendOwned(copy));
  }

  /** Completes every copy's push (a small partition's is committed with it). */
  async complete(): Promise<number> {
    await this.each(async (c) => {
      await c.push.complete();
      if (c.push.committed !== undefined) c.committed = true;
    });
    return this.bytesWritten;
  }

  /** Commits every copy not yet committed; resolves once each remaining copy is. */
  async commit(): Promise<void> {
    const { descriptor, subpartitionBytes } = this.o.commitRequest();
    await this.each(async (c) => {
      if (c.committed) return;
      await this.o.client.commit(c.push.target, descriptor, subpartitionBytes, this.o.replica);
      c.committed = true;
    });
  }

  async abort(): Promise<void> {
    await Promise.allSettled([...this.copies, ...this.dropped].map((c) => c.push.abort()));
  }

  /**
   * Runs `step` on every copy at once. A copy that fails with an outage is moved to a spare (and
   * `step` run again there) when it still holds its bytes, else dropped while another copy remains.
   */
  private async each(step: (copy: Copy) => Promise<void>): Promise<void> {
    // a lease renewal may run next to an append or a commit: work on this step's own list
    const copies = [...this.copies];
    if (copies.length === 0) throw new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', 'no server holding a copy of the partition is left', { retryable: true });
    const outcomes = await Promise.allSettled(copies.map((c) => this.withMoves(c, step)));
    let lastOutage: { copy: Copy; error: ShuffleError } | undefined;
    const failed: Copy[] = [];
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') return;
      const copy = copies[i]!;
      if (!this.copies.includes(copy)) return; // dropped by a concurrent step (and aborted): its failure no longer counts
      const error: unknown = outcome.reason;
      if (!isOutage(error)) throw error;
      failed.push(copy);
      lastOutage = { copy, error };
    });
    if (failed.length === 0) return;
    if (this.copies.every((c) => failed.includes(c))) throw await this.noCopyLeft(lastOutage!.copy, lastOutage!.error);
    for (const copy of failed) {
      const at = this.copies.indexOf(copy);
      if (at === -1) continue; // dropped by a concurrent step
      this.copies.splice(at, 1);
      this.dropped.push(copy);
      // its stream gets no more bytes: end it now, and drop what its server holds of it (if it can)
      void copy.push.abort();
      this.o.logger.warn({ partitionId: copy.push.target.partitionId, server: copy.push.target.url, serverId: copy.serverId, copiesLeft: this.copies.length }, 'dropping a copy of a partition: its server failed; pushing on to the others');
    }
  }

  private async withMoves(copy: Copy, step: (copy: Copy) => Promise<void>): Promise<void> {
    for (;;) {
      const at = copy.push.target.url;
      try {
        return await step(copy);
      } catch (error) {
        if (!isDead(error)) throw error;
        if (copy.push.target.url !== at) continue; // moved meanwhile (by a concurrent step): try there
        // one move at a time: a step failing while another moves the copy waits for that move
        copy.moving ??= (copy.push.holdsAll ? this.moveToSpare(copy) : Promise.resolve(false)).finally(() => {
          copy.moving = undefined;
        });
        const moved = await copy.moving;
        if (!moved) throw error;
      }
    }
  }

  /** Takes the lease on the first spare that answers and moves the copy there; false when none does. */
  private async moveToSpare(copy: Copy): Promise<boolean> {
    for (let spare = this.spares.shift(); spare !== undefined; spare = this.spares.shift()) {
      const target = { ...copy.push.target, url: spare.url };
      try {
        await this.o.client.lease(target, this.o.attemptLeaseMs);
      } catch (error) {
        this.o.logger.debug({ server: spare.url, error: (error as Error).message }, 'a spare shuffle server did not take a lease');
        continue;
      }
      this.o.logger.warn({ partitionId: target.partitionId, from: copy.push.target.url, to: spare.url }, 'its shuffle server died: moving the partition to a spare');
      // the abandoned server holds no committed copy; its upload, if any, is dropped by its sweep or at its next start
      void this.o.client.abort(copy.push.target).catch(() => undefined);
      copy.push.moveTo(target);
      copy.serverId = spare.serverId;
      return true;
    }
    return false;
  }

  /** The error a writer with no copy left fails with: retryable, naming the server, `unreachable` when it is. */
  private async noCopyLeft(copy: Copy, error: ShuffleError): Promise<ShuffleError> {
    const target = copy.push.target;
    let unreachable = error.context['unreachable'] === true;
    if (!unreachable && error.code !== 'SHF_ERR_TIMEOUT') {
      // a broken stream says little: a server that refuses a lease now is dead, one that answers was a blip
      unreachable = await this.o.client.lease(target, this.o.attemptLeaseMs).then(
        () => false,
        (probe: unknown) => isDead(probe),
      );
    }
    return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `pushing partition ${target.partitionId} failed: no server holding a copy is left (${error.message})`, {
      cause: error,
      retryable: true,
      context: { ...error.context, partitionId: target.partitionId, server: target.url, serverId: copy.serverId, ...(unreachable ? { unreachable: true } : {}) },
    });
  }
}

/** Transport trouble with one server (its copy may be given up), not a refusal. */
function isOutage(error: unknown): error is ShuffleError {
  if (!isShuffleError(error)) return false;
  if (error.context['unreachable'] === true) return true;
  return error.retryable && (error.code === 'SHF_ERR_STORAGE_UNAVAILABLE' || error.code === 'SHF_ERR_TIMEOUT');
}

/** The server cannot be reached at all (after the client's retries): its copy may move to a spare. */
function isDead(error: unknown): boolean {
  return isShuffleError(error) && error.context['unreachable'] === true && error.code !== 'SHF_ERR_TIMEOUT';
}
