import { type Logger, type ShuffleDescriptor, ShuffleError, type SubpartitionRange, closedError, isShuffleError, partitionNotFound } from '@weft/shuffle-api';
import { WireError } from '../protocol/wire-errors.js';
import { type PartitionSource, SortMergeInputGate } from '../shuffle-core/sort-merge-input-gate.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';
import { FetchedRangeReader } from './fetched-range-reader.js';
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

/**
 * Reads partitions from shuffle servers, input after input: one streamed fetch of the gate's subpartition
 * range per input, decoded by SortMergeInputGate's range reader. When the descriptor's server cannot serve
 * the partition, every other server that may hold a copy is tried (replicas, the commit index's copies,
 * spares); then the locator decides: a server that moved is asked at its new URL; a vanished server's
 * (expired heartbeat) partition is read from the S3 tier when it has a copy there, and is
 * SHF_ERR_PARTITION_NOT_FOUND when it does not. Batches are views into received chunks, valid until the
 * next read.
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
   * Opens the partition where it can be read: its server, else — when that server is unreachable or
   * lacks it — each other server that may hold a copy, in turn (see `otherCopies`), else the primary's
   * dead-server rule (`openPrimaryFallback`): its new URL, or the S3 tier.
   */
  protected async openSource(descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    let primaryError: unknown;
    try {
      return await this.fetchWhenCommitted(details.url, descriptor);
    } catch (error) {
      if (!isShuffleError(error) || this.closed || !mayHaveCopyElsewhere(error)) throw error;
      primaryError = error;
    }
    const tried = new Set([details.url]);
    for await (const url of this.otherCopies(descriptor, tried)) {
      try {
        const source = await this.fetchWhenCommitted(url, descriptor);
        this.g.logger.info({ partitionId: descriptor.partition.partitionId, serverId: details.serverId, from: url }, 'reading a copy of a partition: its server cannot serve it');
        return source;
      } catch (error) {
        if (!isShuffleError(error) || this.closed || !mayHaveCopyElsewhere(error)) throw error;
      }
    }
    return this.openPrimaryFallback(descriptor, primaryError as ShuffleError);
  }

  /**
   * Servers other than the primary that may hold a copy, each once: the descriptor's replicas, then
   * (with a registry) every server the commit index says committed it, at its current URL, then the
   * descriptor's spares (a writer whose server died may have moved there).
   */
  private async *otherCopies(descriptor: ShuffleDescriptor, tried: Set<string>): AsyncGenerator<string> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const fresh = (url: string | undefined): url is string => url !== undefined && !tried.has(url) && (tried.add(url), true);
    for (const replica of details.replicas ?? []) if (fresh(replica.url)) yield replica.url;
    if (this.g.locator.hasRegistry) {
      const committed = await this.g.locator.copiesOf(descriptor.jobId, descriptor.partition.partitionId).catch(() => []);
      for (const record of committed) {
        if (record.serverId === details.serverId) continue;
        const live = await this.g.locator.liveServer(record.serverId).catch(() => undefined);
        if (fresh(live?.url)) yield live!.url;
      }
    }
    for (const spare of details.spares ?? []) if (fresh(spare.url)) yield spare.url;
  }

  /** The primary's dead-server rule, once no other copy answered: a moved server, the S3 tier, or lost. */
  private async openPrimaryFallback(descriptor: ShuffleDescriptor, error: ShuffleError): Promise<PartitionSource> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const { jobId } = descriptor;
    const { partitionId } = descriptor.partition;
    const locator = this.g.locator;
    const unreachable = error.context['unreachable'] === true || (error.retryable && error.code !== 'SHF_ERR_TIMEOUT');
    const notFound = error.code === 'SHF_ERR_PARTITION_NOT_FOUND';
    if (!locator.hasRegistry || (!unreachable && !notFound)) throw error;
    if (unreachable) {
      const live = await locator.liveServer(details.serverId);
      if (live !== undefined) {
        if (live.url === details.url) throw error; // alive but not answering: retryable, not lost
        return this.fetchWhenCommitted(live.url, descriptor);
      }
    }
    const record = await locator.commitOf(jobId, partitionId);
    const tierReader = record === undefined ? undefined : await locator.openTierCopy(record);
    if (record !== undefined && tierReader !== undefined) {
      this.g.logger.info({ partitionId, serverId: details.serverId }, 'reading a partition from the S3 tier: its server cannot serve it');
      return {
        reader: tierReader,
        location: {
          numberOfSubpartitions: record.numberOfSubpartitions,
          numberOfRegions: record.numberOfRegions,
          indexOffset: record.indexOffset,
          indexLength: record.indexLength,
        },
      };
    }
    if (notFound) throw error;
    throw partitionNotFound(partitionId, `its shuffle server ${details.serverId} is gone (no heartbeat) and no other server or S3 tier has a copy`, error);
  }

  /** Fetches, waiting (with growing pauses) while the server says the producer is still writing. */
  private async fetchWhenCommitted(url: string, descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    let delay = 5;
    for (;;) {
      try {
        return await this.fetchFrom(url, descriptor);
      } catch (error) {
        if (this.closed || !isShuffleError(error) || error.context['wire'] !== WireError.PARTITION_PENDING.wire) throw error;
      }
      await this.sleep(delay);
      delay = Math.min(delay * 2, this.g.options.commitPollMaxMs);
    }
  }

  private async fetchFrom(url: string, descriptor: ShuffleDescriptor): Promise<PartitionSource> {
    const details = descriptor.details as unknown as ServerPartitionDetails;
    const { start, end } = this.g.range;
    const partitionId = descriptor.partition.partitionId;
    if (this.closed) throw closedError('input gate');
    const opening = new AbortController();
    this.opening = opening;
    let response;
    try {
      response = await this.g.client.fetch({ url, token: details.token, jobId: descriptor.jobId, partitionId, start, end, signal: opening.signal });
    } finally {
      this.opening = null;
    }
    // once the response started, the reader owns the body; errors after its destruction are expected
    response.body.on('error', () => undefined);
    if (response.location.numberOfSubpartitions !== descriptor.partition.numberOfSubpartitions) {
      response.body.destroy();
      throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `partition ${partitionId} on ${url} has ${response.location.numberOfSubpartitions} subpartitions, its descriptor ${descriptor.partition.numberOfSubpartitions}`, {
        context: { partitionId },
      });
    }
    return { reader: new FetchedRangeReader({ body: response.body, location: response.location, start, end, partitionId }), location: response.location };
  }
}

/** An error after which another server may still serve the partition: an outage, or "not here". */
function mayHaveCopyElsewhere(error: ShuffleError): boolean {
  return error.code === 'SHF_ERR_PARTITION_NOT_FOUND' || error.context['unreachable'] === true || error.retryable;
}
