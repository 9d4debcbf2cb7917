import { invalidConfig } from '@weft/shuffle-api';
import { DEFAULT_S3_MIN_PART_BYTES, type S3StoreOptions, resolveS3StoreOptions } from '../config/store-options.js';
import { parseStoreUrl } from '../config/store-url.js';
import type { BlobReader, BlobWriter } from '../storage/blob-store.js';
import { S3BlobStore } from '../storage/s3-blob-store.js';
import type { TierMode } from './shuffle-server-options.js';

/**
 * The S3 tier of a shuffle server: copies of committed partitions under the same object keys as on
 * disk, in an S3BlobStore, so they outlive the server. `write-through` streams a push to S3 as it
 * arrives (a multipart upload: each push then holds up to one part, 8 MiB by default, in memory);
 * `on-commit` copies the pushed object when it is committed.
 */
export class ServerTier {
  readonly store: S3BlobStore;

  constructor(
    store: string | S3StoreOptions,
    readonly mode: TierMode,
    env: Readonly<Record<string, string | undefined>> = process.env,
  ) {
    const options = typeof store === 'string' ? parseStoreUrl(store, 'tier.store') : store;
    if (options.type !== 's3') throw invalidConfig('tier.store', `the tier must be an S3 store (s3://bucket/prefix), got ${JSON.stringify(store)}`);
    this.store = new S3BlobStore(resolveS3StoreOptions(options, env));
  }

  get description(): string {
    return this.store.description;
  }

  /** Checks the bucket is reachable: SHF_ERR_INVALID_CONFIG naming the setting otherwise. */
  async start(): Promise<void> {
    await this.store.start();
  }

  /** A streaming copy for a write-through push. */
  createWriter(key: string): Promise<BlobWriter> {
    return this.store.createWriter(key);
  }

  /** Copies a local object to the tier, one part at a time. */
  async copy(reader: BlobReader, objectBytes: number, key: string): Promise<void> {
    const writer = await this.store.createWriter(key);
    try {
      for (let offset = 0; offset < objectBytes; offset += DEFAULT_S3_MIN_PART_BYTES) {
        await writer.append([await reader.read(offset, Math.min(DEFAULT_S3_MIN_PART_BYTES, objectBytes - offset))]);
      }
      await writer.complete();
    } catch (error) {
      await writer.abort().catch(() => undefined);
      throw error;
    }
  }

  delete(key: string): Promise<void> {
    return this.store.delete(key);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
