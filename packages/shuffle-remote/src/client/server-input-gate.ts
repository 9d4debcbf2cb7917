import { type Logger, type ShuffleDescriptor, ShuffleError, type SubpartitionRange, closedError, isShuffleError, partitionNotFound } from '@weft/shuffle-api';
import { WireError } from '../protocol/wire-errors.js';
import { type PartitionSource, SortMergeInputGate } from '../shuffle-core/sort-merge-input-gate.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { FetchedRangeReader } from './fetched-range-reader.js';
import { ResumingRangeReader } from './resuming-range-reader.js';
import type { PartitionLocator } from './partition-locator.js';
import type { ServerPartitionDetails } from './server-descriptor.js';
import type { ShuffleServerClient } from './shuffle-server-client.js';

export interface ServerInputGateOptions {
  readonly inputs: readonly ShuffleDescriptor[];
  readonly range: SubpartitionRange;
  readonly client: ShuffleServerClient;
  readonly locator: PartitionLocator;
  readonly options: ResolvedShuffleServerClientOptions;
  readonly logger: Logger;
  readonly onClosed?: () => void;
}

/** Another place a partition may be read from when its server cannot serve it, tried in order. */
interface Fallback {
  /** For logs: `replica <serverId>`, `S3 tier`. */
  readonly name: string;
  /** The partition's source there, or undefined when this place does not hold it. */
  open(): Promise<PartitionSource | undefined>;
}

/**
 * Reads partitions from shuffle servers, input after input: one streamed fetch of the gate's subpartition
 * range per input, decoded by SortMergeInputGate's range reader. Batches are views into received chunks,
 * valid until the next read.
 *
 * When the descriptor's server cannot serve the partition (packages/shuffle-remote/README.md, "When is a
 * server dead?"):
 * - slow (a headers or body timeout: a paused or overloaded server) or in trouble (connection reset,
 *   503) while its registry record is live at the same URL — the retryable error is thrown as it is: the
 *   server is not declared dead, the partition not lost; a server that moved is asked at its new URL;
 * - gone — it refused connections (or could not be connected to) through all the client's retries
 *   (`context.unreachable`), even while its registry record is still live (the process is not
 *   listening); or it is slow or in trouble and its record expired (no heartbeat for the registry's
 *   TTL); or it answered PARTITION_NOT_FOUND — then the fallbacks are tried
 *   in order: every other server that may hold a copy (the descriptor's replicas, the servers the commit
 *   index lists as holding one, the descriptor's spares a writer may have moved to), then the S3 tier's
 *   copy recorded in the commit index. When none holds it, the gate fails with SHF_ERR_PARTITION_NOT_FOUND naming the
 *   partition, with the server's error as its cause (so the engine re-runs the producer, and the master,
 *   told of the failure, excludes the server).
 */
export class ServerInputGate extends SortMergeInputGate {
  /** Cancels the fetch being opened when the gate closes. */
  private opening: AbortController | null = null;

  constructor(private readonly g: ServerInputGateOptions) {
    super({ inputs: g.inputs, range: g.range, readBufferBytes: g.options.readBufferBytes, maxRecordBytes: g.options.maxRecordBytes, onClosed: g.onClosed });
  }

  protected override onClose(): void {
    this.opening?.abort();
  }

  /**
   * Opens the partition (see `locate`) behind a reader that, when the fetch breaks half-way (its server
   * killed mid-range, a connection reset), locates it again — so a dead server's partition with no other
   * copy becomes SHF_ERR_PARTITION_NOT_FOUND there too, and one with a copy is read on from the copy.
   */
  protected async openSource(descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    const first = await this.locate(descriptor);
    const reader = new ResumingRangeReader({ partitionId: descriptor.partition.partitionId, first, reopen: () => this.locate(descriptor) });
    return { reader, location: first.location };
  }

  /** Finds the partition where it can be read: its server, the server's new URL, a replica, or the S3 tier. */
  private async locate(descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const { partitionId } = descriptor.partition;
    const locator = this.g.locator;
    let failure: ShuffleError;
    try {
      return await this.fetchWhenCommitted(details.url, details.serverId, descriptor);
    } catch (error) {
      if (!isShuffleError(error) || this.closed) throw error;
      failure = error;
    }
    const dead = failure.context['unreachable'] === true;
    const notFound = failure.code === 'SHF_ERR_PARTITION_NOT_FOUND';
    // slow (a timeout) or in trouble (reset, 503): maybe alive — only the registry can tell
    const troubled = !dead && !notFound && failure.retryable;
    if (!dead && !notFound && !troubled) throw failure;
    // a copy anywhere else is read at once, whatever ails this server
    for (const fallback of this.fallbacksOf(descriptor)) {
      const source = await fallback.open();
      if (source !== undefined) {
        this.g.logger.info({ partitionId, serverId: details.serverId, from: fallback.name, error: failure.message }, 'reading a partition elsewhere: its server cannot serve it');
        if (dead) locator.reportUnreachable(details);
        return source;
      }
    }
    if (notFound) throw failure;
    if (locator.hasRegistry) {
      const live = await locator.liveServer(details.serverId);
      // alive at its address and only slow or in trouble: retryable, not lost
      if (live !== undefined && live.url === details.url && troubled) throw failure;
      // it came back elsewhere
      if (live !== undefined && live.url !== details.url) {
        try {
          return await this.fetchWhenCommitted(live.url, details.serverId, descriptor);
        } catch (error) {
          if (!isShuffleError(error) || this.closed || !(error.context['unreachable'] === true || error.code === 'SHF_ERR_PARTITION_NOT_FOUND')) throw error;
        }
      }
    } else if (troubled) {
      throw failure; // without a registry a slow server is only slow
    }
    const why = dead
      ? `its shuffle server ${details.serverId} (${details.url}) refuses connections`
      : `its shuffle server ${details.serverId} is gone (no heartbeat, and it ${failure.code === 'SHF_ERR_TIMEOUT' ? 'does not answer' : 'fails requests'})`;
    throw partitionNotFound(partitionId, `${why} and no replica or S3 tier copy holds it`, failure);
  }

  /**
   * Where else the partition may be read, in order: the descriptor's replicas, the servers the commit
   * index lists as holding a copy, the descriptor's spares, then the S3 tier. The one place to extend (a
   * new kind of copy goes here, in the order it should be tried).
   */
  private fallbacksOf(descriptor: ShuffleDescriptor): Fallback[] {
    const { jobId } = descriptor;
    const { partitionId } = descriptor.partition;
    const locator = this.g.locator;
    const fallbacks: Fallback[] = [];
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const tried = new Set([details.url]);
    const fresh = (url: string | undefined): url is string => url !== undefined && !tried.has(url) && (tried.add(url), true);
    const copyAt = (name: string, serverId: string, url: string): Fallback => ({
      name,
      open: async () => {
        try {
          return await this.fetchWhenCommitted(url, serverId, descriptor);
        } catch (error) {
          if (!isShuffleError(error) || this.closed) throw error;
          this.g.logger.debug({ partitionId, serverId, error: error.message }, 'another server cannot serve a partition');
          return undefined;
        }
      },
    });
    for (const replica of details.replicas ?? []) if (fresh(replica.url)) fallbacks.push(copyAt(`replica ${replica.serverId}`, replica.serverId, replica.url));
    if (locator.hasRegistry) {
      // the servers the commit index says committed a copy (a replica, or a spare a writer moved to), at their current URLs
      fallbacks.push({
        name: 'a copy the commit index lists',
        open: async () => {
          const committed = await locator.copiesOf(jobId, partitionId).catch(() => []);
          for (const record of committed) {
            if (record.serverId === details.serverId) continue;
            const live = await locator.liveServer(record.serverId).catch(() => undefined);
            if (!fresh(live?.url)) continue;
            const source = await copyAt(`copy ${record.serverId}`, record.serverId, live!.url).open();
            if (source !== undefined) return source;
          }
          return undefined;
        },
      });
    }
    for (const spare of details.spares ?? []) if (fresh(spare.url)) fallbacks.push(copyAt(`spare ${spare.serverId}`, spare.serverId, spare.url));
    if (locator.hasRegistry) {
      fallbacks.push({
        name: 'S3 tier',
        open: async () => {
          const record = await locator.commitOf(jobId, partitionId);
          const reader = record === undefined ? undefined : await locator.openTierCopy(record);
          if (record === undefined || reader === undefined) return undefined;
          const { numberOfSubpartitions, numberOfRegions, indexOffset, indexLength } = record;
          return { reader, location: { numberOfSubpartitions, numberOfRegions, indexOffset, indexLength } };
        },
      });
    }
    return fallbacks;
  }

  /** Fetches, waiting (with growing pauses) while the server says the producer is still writing. */
  private async fetchWhenCommitted(url: string, serverId: string, descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    let delay = 5;
    for (;;) {
      try {
        return await this.fetchFrom(url, serverId, descriptor);
      } catch (error) {
        if (this.closed || !isShuffleError(error) || error.context['wire'] !== WireError.PARTITION_PENDING.wire) throw error;
      }
      await this.sleep(delay);
      delay = Math.min(delay * 2, this.g.options.commitPollMaxMs);
    }
  }

  private async fetchFrom(url: string, serverId: string, descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const { start, end } = this.g.range;
    const partitionId = descriptor.partition.partitionId;
    if (this.closed) throw closedError('input gate');
    const opening = new AbortController();
    this.opening = opening;
    let response;
    try {
      response = await this.g.client.fetch({ url, serverId, token: details.token, jobId: descriptor.jobId, partitionId, start, end, signal: opening.signal });
    } finally {
      this.opening = null;
    }
    // once the response started, the reader owns the body; errors after its destruction are expected
    response.body.on('error', () => undefined);
    if (response.attempt !== descriptor.producer.attempt) {
      // another attempt's data (a stale copy): not this partition's, as if it were not here
      response.body.destroy();
      throw partitionNotFound(partitionId, `${url} holds attempt ${response.attempt} of it, not attempt ${descriptor.producer.attempt}`);
    }
    if (response.location.numberOfSubpartitions !== descriptor.partition.numberOfSubpartitions) {
      response.body.destroy();
      throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${partitionId} on ${url} has ${response.location.numberOfSubpartitions} subpartitions, its descriptor ${descriptor.partition.numberOfSubpartitions}`, {
        context: { partitionId },
      });
    }
    return { reader: new FetchedRangeReader({ body: response.body, location: response.location, start, end, partitionId }), location: response.location };
  }
}
