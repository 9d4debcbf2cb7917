import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { invalidConfig } from '@weft/shuffle-api';
import type { BlobReader, BlobStore, BlobWriter } from './blob-store.js';
import { checkKey } from './object-key.js';
import { blobNotFound, blobTruncated, storageUnavailable } from './storage-errors.js';
import type { ResolvedS3StoreOptions } from '../config/store-options.js';

/** S3's smallest part (all but the last). */
export const S3_MIN_PART_BYTES = 5 * 1024 * 1024;
const MAX_PARTS = 10_000;

interface AwsErrorShape {
  readonly name?: string;
  readonly code?: string;
  readonly Code?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
}

function statusOf(error: unknown): number | undefined {
  return (error as AwsErrorShape | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const e = error as AwsErrorShape | undefined;
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.Code === 'NoSuchKey' || statusOf(error) === 404;
}

/**
 * Objects in an S3 bucket under a key prefix. Writers stream: appends go out as multipart-upload parts
 * (each at least `minPartBytes`; a smaller tail is held until the next append), an object that never
 * reaches one part is a single PutObject. Reads are ranged GETs.
 */
export class S3BlobStore implements BlobStore {
  readonly description: string;
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly agent: HttpAgent | HttpsAgent;
  private closed = false;

  constructor(private readonly options: ResolvedS3StoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix;
    this.description = `s3://${options.bucket}/${options.prefix}`;
    const https = options.endpoint === undefined || options.endpoint.startsWith('https:');
    const agentOptions = { keepAlive: true, maxSockets: 64 };
    this.agent = https ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      forcePathStyle: options.forcePathStyle,
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      maxAttempts: options.maxAttempts,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs,
        requestTimeout: options.requestTimeoutMs,
        ...(https ? { httpsAgent: this.agent } : { httpAgent: this.agent }),
      },
    });
  }

  async start(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (cause) {
      const status = statusOf(cause);
      if (status === 404 || (cause as AwsErrorShape).name === 'NoSuchBucket') {
        throw invalidConfig('store.bucket', `bucket ${this.bucket} does not exist at ${this.options.endpoint ?? 'AWS S3'}`, cause);
      }
      if (status === 403 || status === 401) {
        throw invalidConfig(
          'store.credentials',
          `access to bucket ${this.bucket} was refused (${status}); check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY`,
          cause,
        );
      }
      const reason = cause instanceof Error ? cause.message || cause.name : String(cause);
      throw invalidConfig('store.endpoint', `cannot reach S3 at ${this.options.endpoint ?? `region ${this.options.region}`}: ${reason}`, cause);
    }
  }

  async createWriter(key: string): Promise<BlobWriter> {
    return new S3BlobWriter(this, checkKey(key), this.options.minPartBytes);
  }

  async openReader(key: string): Promise<BlobReader> {
    const fullKey = this.fullKey(checkKey(key));
    return {
      read: (offset, length, into) => this.readRange(key, fullKey, offset, length, into),
      close: async () => undefined,
    };
  }

  async delete(key: string, options: { readonly uploadId?: string } = {}): Promise<void> {
    const fullKey = this.fullKey(checkKey(key));
    if (options.uploadId !== undefined) await this.abortUpload(fullKey, options.uploadId);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: fullKey }));
    } catch (cause) {
      if (!isNotFound(cause)) throw storageUnavailable(this.description, `delete ${key}`, cause);
    }
  }

  async listKeys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }),
        );
      } catch (cause) {
        throw storageUnavailable(this.description, 'list', cause);
      }
      for (const object of page.Contents ?? []) if (object.Key !== undefined) out.push(object.Key.slice(this.prefix.length));
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out.sort();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.destroy();
    this.agent.destroy();
  }

  fullKey(key: string): string {
    return this.prefix + key;
  }

  /** Aborts an unfinished multipart upload; servers that do not implement it (s3rver) are ignored. */
  async abortUpload(fullKey: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: fullKey, UploadId: uploadId }));
    } catch (cause) {
      const status = statusOf(cause);
      if (status === 404 || status === 405 || status === 501) return;
      throw storageUnavailable(this.description, `abort upload of ${fullKey}`, cause);
    }
  }

  async putObject(fullKey: string, body: Uint8Array): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: body, ContentLength: body.length }));
  }

  async createUpload(fullKey: string): Promise<string> {
    const out = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: fullKey }));
    if (out.UploadId === undefined) throw new Error('CreateMultipartUpload returned no UploadId');
    return out.UploadId;
  }

  async uploadPart(fullKey: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<string> {
    const out = await this.client.send(
      new UploadPartCommand({ Bucket: this.bucket, Key: fullKey, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length }),
    );
    return out.ETag ?? '';
  }

  async completeUpload(fullKey: string, uploadId: string, etags: readonly string[]): Promise<void> {
    await this.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.bucket,
        Key: fullKey,
        UploadId: uploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    );
  }

  private async readRange(key: string, fullKey: string, offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const out = into === undefined ? Buffer.allocUnsafe(length) : into.subarray(0, length);
    if (length === 0) return out;
    let filled = 0;
    try {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: fullKey, Range: `bytes=${offset}-${offset + length - 1}` }),
      );
      const body = response.Body as AsyncIterable<Uint8Array> | undefined;
      if (body === undefined) throw new Error('GetObject returned no body');
      for await (const chunk of body) {
        const n = Math.min(chunk.length, length - filled);
        out.set(n === chunk.length ? chunk : chunk.subarray(0, n), filled);
        filled += n;
      }
    } catch (cause) {
      if (isNotFound(cause)) throw blobNotFound(this.description, key, cause);
      if (statusOf(cause) === 416) throw blobTruncated(this.description, key, offset, length, 0);
      throw storageUnavailable(this.description, `read ${key}`, cause);
    }
    if (filled < length) throw blobTruncated(this.description, key, offset, length, filled);
    return out;
  }
}

class S3BlobWriter implements BlobWriter {
  bytesWritten = 0;
  uploadId: string | undefined;
  private tail: Uint8Array | null = null;
  private sending = 0;
  private readonly etags: string[] = [];
  private readonly fullKey: string;
  private finished = false;

  constructor(
    private readonly store: S3BlobStore,
    readonly key: string,
    readonly maxRetainedBytes: number,
  ) {
    this.fullKey = store.fullKey(key);
  }

  get bufferedBytes(): number {
    return (this.tail?.length ?? 0) + this.sending;
  }

  async append(chunks: readonly Uint8Array[]): Promise<void> {
    const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    if (length === 0) return;
    this.bytesWritten += length;
    // one contiguous body: the tail, then the chunks (S3 needs each part's length up front)
    const joined = concat(this.tail === null ? chunks : [this.tail, ...chunks]);
    this.tail = null;
    if (joined.length < this.maxRetainedBytes) {
      this.tail = joined;
      return;
    }
    this.sending = joined.length;
    try {
      await this.sendPart(joined);
    } finally {
      this.sending = 0;
    }
  }

  async complete(): Promise<number> {
    const tail = this.tail ?? new Uint8Array(0);
    this.tail = null;
    try {
      if (this.uploadId === undefined) {
        await this.store.putObject(this.fullKey, tail);
      } else {
        if (tail.length > 0 || this.etags.length === 0) await this.sendPart(tail);
        await this.store.completeUpload(this.fullKey, this.uploadId, this.etags);
      }
    } catch (cause) {
      throw storageUnavailable(this.store.description, `complete ${this.key}`, cause);
    }
    this.finished = true;
    return this.bytesWritten;
  }

  async abort(): Promise<void> {
    this.tail = null;
    if (this.uploadId !== undefined && !this.finished) await this.store.abortUpload(this.fullKey, this.uploadId).catch(() => undefined);
    await this.store.delete(this.key).catch(() => undefined);
  }

  private async sendPart(body: Uint8Array): Promise<void> {
    try {
      this.uploadId ??= await this.store.createUpload(this.fullKey);
      if (this.etags.length >= MAX_PARTS) throw new Error(`object ${this.key} needs more than ${MAX_PARTS} parts; raise producerMemoryBytes`);
      this.etags.push(await this.store.uploadPart(this.fullKey, this.uploadId, this.etags.length + 1, body));
    } catch (cause) {
      throw storageUnavailable(this.store.description, `upload part ${this.etags.length + 1} of ${this.key}`, cause);
    }
  }
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!.slice();
  const out = Buffer.allocUnsafe(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
