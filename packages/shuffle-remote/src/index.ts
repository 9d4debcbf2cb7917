export { createRemoteShuffleServiceFactory, type RemoteShuffleServiceFactory } from './blocking/remote-shuffle-service-factory.js';
export { RemoteShuffleMaster, type SweepResult } from './blocking/remote-shuffle-master.js';
export { RemoteShuffleEnvironment } from './blocking/remote-shuffle-environment.js';
export { RemoteResultPartitionWriter } from './blocking/remote-result-partition-writer.js';
export { writerBudget, type WriterBudget } from './shuffle-core/writer-budget.js';
export { REMOTE_SHUFFLE_SERVICE_ID } from './blocking/descriptor-checks.js';
export {
  DEFAULT_COMPRESSION_BY_STORE,
  DEFAULT_REMOTE_SHUFFLE_OPTIONS,
  resolveRemoteShuffleOptions,
  type RemoteShuffleOptions,
  type ResolvedRemoteShuffleOptions,
} from './config/remote-shuffle-options.js';
export type {
  BlobStoreOptions,
  FileStoreOptions,
  MetadataStoreOptions,
  RedisMetaOptions,
  S3StoreOptions,
  SqliteMetaOptions,
} from './config/store-options.js';
export { parseMetaUrl, parseStoreUrl } from './config/store-url.js';
// storage and format: the standalone shuffle server reuses the on-disk layout through these
export type { BlobReader, BlobStore, BlobWriter } from './storage/blob-store.js';
export { createBlobStore } from './storage/create-blob-store.js';
export { LocalBlobStore } from './storage/local-blob-store.js';
export { S3BlobStore } from './storage/s3-blob-store.js';
export { checkKey, encodeKeySegment, objectKey } from './storage/object-key.js';
export { PartitionFileWriter, type PartitionFileSummary, type Region, type RegionEntry } from './format/partition-file-writer.js';
export { SubpartitionRangeReader, type RangeBlock } from './format/subpartition-range-reader.js';
export { decodeFooter, FOOTER_BYTES, type IndexLocation } from './format/partition-index.js';
export { BLOCK_KIND_DATA, BLOCK_KIND_EVENT } from './format/block-codec.js';
export type { MetadataStore, AttemptRecord, CommitRecord } from './metadata/metadata-store.js';
export { createMetadataStore } from './metadata/create-metadata-store.js';
export { createS3FileSystem, S3FileSystem, type S3File, type S3FileSystemStats, type S3FileWriter, type S3StagedFile } from './files/s3-file-system.js';
export type { S3FileSystemOptions } from './files/s3-file-system-options.js';
