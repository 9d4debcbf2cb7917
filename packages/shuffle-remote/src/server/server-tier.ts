import { invalidConfig } from '@weft/shuffle-api';
import { type S3StoreOptions, resolveS3StoreOptions } from '../config/store-options.js';
import { parseStoreUrl } from '../config/store-url.js';
import type { BlobReader } from '../storage/blob-store.js';
import { S3BlobStore } from '../storage/s3-blob-store.js';
import { MAX_PARTS } from '../storage/s3-blob-writer.js';
import type { TierMode } from './shuffle-server-options.js';
import { TierUpload } from './tier-upload.js';
import { TransferSlots } from './transfer-slots.js';

export interface ServerTierOptions {
  /** `s3://bucket/prefix` or S3 options. */
  readonly store: string | S3StoreOptions;
  readonly mode: TierMode;
  /** S3 transfers (write-through parts, commit copies) at once. */
  readonly maxTransfers: number;
  /** Keep the local copy of a committed partition (false: fetches read the S3 copy). */
  readonly keepLocal: boolean;
  /** The largest object a push may bring (write-through parts grow so it fits in S3's 10,000 parts). */
  readonly maxObjectBytes: number;
}

/**
 * The S3 tier of a shuffle server: copies of committed partitions under the same object keys as on
 * disk, in an S3BlobStore, so they outlive the server. Each push gets a TierUpload (`begin`), which
 * becomes an S3 object only when its attempt commits. At most `maxTransfers` S3 transfers run at once
 * (TransferSlots), each reading the local file in bounded pieces: the tier's memory is bounded by
 * `maxTransfers`, not by the number of pushes or commits.
 */
export class ServerTier {
  readonly store: S3BlobStore;
  readonly slots: TransferSlots;
  readonly mode: TierMode;
  readonly keepLocal: boolean;
  /** Size of a write-through part. */
  readonly partBytes: number;

  constructor(options: ServerTierOptions, env: Readonly<Record<string, string | undefined>> = process.env) {
    const parsed = typeof options.store === 'string' ? parseStoreUrl(options.store, 'tier.store') : options.store;
    if (parsed.type !== 's3') throw invalidConfig('tier.store', `the tier must be an S3 store (s3://bucket/prefix), got ${JSON.stringify(options.store)}`);
    const resolved = resolveS3StoreOptions(parsed, env);
    this.store = new S3BlobStore(resolved);
    this.slots = new TransferSlots(options.maxTransfers);
    this.mode = options.mode;
    this.keepLocal = options.keepLocal;
    this.partBytes = Math.max(resolved.minPartBytes, Math.ceil(options.maxObjectBytes / MAX_PARTS));
  }

  get description(): string {
    return this.store.description;
  }

  /** Checks the bucket is reachable: SHF_ERR_INVALID_CONFIG naming the setting otherwise. */
  async start(): Promise<void> {
    await this.store.start();
  }

  /** The tier copy of a push that is starting (key as on disk). */
  begin(key: string, openLocal: () => Promise<BlobReader>): TierUpload {
    return new TierUpload({ store: this.store, key, mode: this.mode, partBytes: this.partBytes, slots: this.slots, openLocal });
  }

  /** A reader of a committed partition's S3 copy. */
  openReader(key: string): Promise<BlobReader> {
    return this.store.openReader(key);
  }

  delete(key: string): Promise<void> {
    return this.store.delete(key);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
