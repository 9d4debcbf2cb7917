import { type Clock, type Logger, systemClock } from '@weft/shuffle-api';
import type { ResolvedRemoteShuffleOptions } from '../config/remote-shuffle-options.js';
import { createMetadataStore } from '../metadata/create-metadata-store.js';
import type { MetadataStore } from '../metadata/metadata-store.js';
import type { BlobStore } from '../storage/blob-store.js';
import { createBlobStore } from '../storage/create-blob-store.js';

/**
 * The blob and metadata stores of one master or environment, started together (fail fast: each start
 * error is SHF_ERR_INVALID_CONFIG naming the setting) and closed together.
 */
export class StorePair {
  readonly blob: BlobStore;
  readonly meta: MetadataStore;
  private starting: Promise<void> | undefined;
  private closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: ResolvedRemoteShuffleOptions, logger: Logger, clock: Clock = systemClock) {
    this.blob = createBlobStore(options.store);
    this.meta = createMetadataStore(options, logger, clock);
  }

  /** Starts both stores once; a failed start may be tried again. */
  start(): Promise<void> {
    this.starting ??= (async () => {
      // both settle before anything is closed, so a store still connecting is not left open
      const results = await Promise.allSettled([this.blob.start(), this.meta.start()]);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed === undefined) return;
      this.starting = undefined;
      await Promise.allSettled([this.blob.close(), this.meta.close()]);
      throw failed.reason;
    })();
    return this.starting;
  }

  /** Closes both, whatever happens to either. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.closed = true;
    await this.starting?.catch(() => undefined);
    const results = await Promise.allSettled([this.blob.close(), this.meta.close()]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}
