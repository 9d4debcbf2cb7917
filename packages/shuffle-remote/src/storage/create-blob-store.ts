import type { BlobStoreOptions } from '../config/store-options.js';
import { resolveS3StoreOptions } from '../config/store-options.js';
import type { BlobStore } from './blob-store.js';
import { LocalBlobStore } from './local-blob-store.js';
import { S3BlobStore } from './s3-blob-store.js';

/** The BlobStore for validated options (S3 settings not given come from the AWS environment variables). */
export function createBlobStore(options: BlobStoreOptions, env: Readonly<Record<string, string | undefined>> = process.env): BlobStore {
  if (options.type === 'file') return new LocalBlobStore(options);
  return new S3BlobStore(resolveS3StoreOptions(options, env));
}
