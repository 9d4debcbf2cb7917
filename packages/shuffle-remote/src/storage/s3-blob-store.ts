import { Agent as HttpAgent } from 'node:http';
import { Readable } from 'node:stream';
import { Agent as HttpsAgent } from 'node:https';
import type { S3Client } from '@aws-sdk/client-s3';
import { invalidConfig } from '@weft/shuffle-api';
import type { BlobReader, BlobStore, BlobWriter } from './blob-store.js';
import { checkKey } from './object-key.js';
import { S3BlobReader } from './s3-blob-reader.js';
import { S3BlobWriter } from './s3-blob-writer.js';
import { blobNotFound, blobTruncated, storageUnavailable } from './storage-errors.js';
import type { ResolvedS3StoreOptions } from '../config/store-options.js';
import { awsS3 } from '../lazy/aws-s3.js';

/** S3's smallest part (all but the last). */
export const S3_MIN_PART_BYTES = 5 * 1024 * 1024;
/** What a streamed upload body may have read ahead of the socket. */
const UPLOAD_HIGH_WATER_BYTES = 1024 * 1024;

interface AwsErrorShape {
  readonly name?: string;
  readonly code?: string;
  readonly Code?: string;
  readonly BucketRegion?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
  readonly $response?: { readonly headers?: Readonly<Record<string, string | undefined>> };
}

/** The region S3 says a bucket is in (a 301's `x-amz-bucket-region`), if it says. */
function bucketRegionOf(error: unknown): string | undefined {
  const e = error as AwsErrorShape | undefined;
  return e?.BucketRegion ?? e?.$response?.headers?.['x-amz-bucket-region'];
}

function statusOf(error: unknown): number | undefined {
  return (error as AwsErrorShape | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const e = error as AwsErrorShape | undefined;
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.Code === 'NoSuchKey' || statusOf(error) === 404;
}

/**
 * Objects in an S3 bucket under a key prefix. Writers (S3BlobWriter) stream appends as multipart-upload
 * parts, or write a whole object of known length with one streamed PutObject. Readers (S3BlobReader) make
 * ranged GETs, one per planned range.
 *
 * Streamed request bodies cannot be replayed by the SDK, so they go through a second client without SDK
 * retries (same connections), and this store retries them itself, asking the body again.
 */
export class S3BlobStore implements BlobStore {
  readonly description: string;
  readonly client: S3Client;
  /** For streamed bodies: no SDK retries. */
  private readonly streamingClient: S3Client;
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
    const config = {
      region: options.region,
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      forcePathStyle: options.forcePathStyle,
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
      requestChecksumCalculation: 'WHEN_REQUIRED' as const,
      responseChecksumValidation: 'WHEN_REQUIRED' as const,
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs,
        requestTimeout: options.requestTimeoutMs,
        ...(https ? { httpsAgent: this.agent } : { httpAgent: this.agent }),
      },
    };
    this.client = new awsS3.S3Client({ ...config, maxAttempts: options.maxAttempts });
    this.streamingClient = new awsS3.S3Client({ ...config, maxAttempts: 1 });
  }

  async start(): Promise<void> {
    try {
      await this.client.send(new awsS3.HeadBucketCommand({ Bucket: this.bucket }));
    } catch (cause) {
      const status = statusOf(cause);
      if (status === 301) {
        // the bucket lives in another region: S3 redirects instead of answering
        const setting = this.options.regionSetting ?? 'store.region';
        const where = bucketRegionOf(cause);
        throw invalidConfig(
          setting,
          `bucket ${this.bucket} is not in region ${this.options.region}${where === undefined ? '' : `, it is in ${where}`}; set ${setting} to the bucket's region`,
          cause,
        );
      }
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
      throw invalidConfig(this.options.endpointSetting ?? 'store.endpoint', `cannot reach S3 at ${this.options.endpoint ?? `region ${this.options.region}`}: ${reason}`, cause);
    }
  }

  async createWriter(key: string): Promise<BlobWriter> {
    return new S3BlobWriter(this, checkKey(key), this.options.minPartBytes, this.options.maxPutBytes);
  }

  async openReader(key: string): Promise<BlobReader> {
    return new S3BlobReader(this, key, this.fullKey(checkKey(key)));
  }

  async delete(key: string, options: { readonly uploadId?: string } = {}): Promise<void> {
    const fullKey = this.fullKey(checkKey(key));
    if (options.uploadId !== undefined) await this.abortUpload(fullKey, options.uploadId);
    try {
      await this.client.send(new awsS3.DeleteObjectCommand({ Bucket: this.bucket, Key: fullKey }));
    } catch (cause) {
      if (!isNotFound(cause)) throw storageUnavailable(this.description, `delete ${key}`, cause);
    }
  }

  /** DeleteObject answers alike whether or not the object was there, so a HeadObject asks first. */
  async deleteExisting(key: string, options: { readonly uploadId?: string } = {}): Promise<boolean> {
    const fullKey = this.fullKey(checkKey(key));
    try {
      await this.client.send(new awsS3.HeadObjectCommand({ Bucket: this.bucket, Key: fullKey }));
    } catch (cause) {
      if (!isNotFound(cause)) throw storageUnavailable(this.description, `delete ${key}`, cause);
      if (options.uploadId !== undefined) await this.abortUpload(fullKey, options.uploadId);
      return false;
    }
    await this.delete(key, options);
    return true;
  }

  async listKeys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new awsS3.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }),
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
    this.streamingClient.destroy();
    this.agent.destroy();
  }

  fullKey(key: string): string {
    return this.prefix + key;
  }

  /** Aborts an unfinished multipart upload; servers that do not implement it (s3rver) are ignored. */
  async abortUpload(fullKey: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new awsS3.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: fullKey, UploadId: uploadId }));
    } catch (cause) {
      const status = statusOf(cause);
      if (status === 404 || status === 405 || status === 501) return;
      throw storageUnavailable(this.description, `abort upload of ${fullKey}`, cause);
    }
  }

  async putObject(fullKey: string, body: Uint8Array): Promise<void> {
    await this.client.send(new awsS3.PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: body, ContentLength: body.length }));
  }

  async createUpload(fullKey: string): Promise<string> {
    const out = await this.client.send(new awsS3.CreateMultipartUploadCommand({ Bucket: this.bucket, Key: fullKey }));
    if (out.UploadId === undefined) throw new Error('CreateMultipartUpload returned no UploadId');
    return out.UploadId;
  }

  async uploadPart(fullKey: string, uploadId: string, partNumber: number, body: Uint8Array): Promise<string> {
    const out = await this.client.send(
      new awsS3.UploadPartCommand({ Bucket: this.bucket, Key: fullKey, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length }),
    );
    return out.ETag ?? '';
  }

  async completeUpload(fullKey: string, uploadId: string, etags: readonly string[]): Promise<void> {
    await this.client.send(
      new awsS3.CompleteMultipartUploadCommand({
        Bucket: this.bucket,
        Key: fullKey,
        UploadId: uploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    );
  }

  /** One PutObject of `length` bytes streamed from `body()`, retried (asking the body again) on retryable failures. */
  async putStream(fullKey: string, length: number, body: () => AsyncIterable<Uint8Array>): Promise<void> {
    await this.withRetries(() =>
      this.sendStreamed(body, (stream, abortSignal) => this.streamingClient.send(new awsS3.PutObjectCommand({ Bucket: this.bucket, Key: fullKey, Body: stream, ContentLength: length }), { abortSignal })),
    );
  }

  /** One part of `length` bytes streamed from `body()`, retried like `putStream`; resolves with its ETag. */
  async uploadPartStream(fullKey: string, uploadId: string, partNumber: number, length: number, body: () => AsyncIterable<Uint8Array>): Promise<string> {
    const out = await this.withRetries(() =>
      this.sendStreamed(body, (stream, abortSignal) =>
        this.streamingClient.send(new awsS3.UploadPartCommand({ Bucket: this.bucket, Key: fullKey, UploadId: uploadId, PartNumber: partNumber, Body: stream, ContentLength: length }), { abortSignal }),
      ),
    );
    return out.ETag ?? '';
  }

  /** The body of a GET of bytes [from, to) (a stream the caller destroys). */
  async openRange(key: string, fullKey: string, from: number, to: number): Promise<Readable> {
    try {
      const response = await this.client.send(new awsS3.GetObjectCommand({ Bucket: this.bucket, Key: fullKey, Range: `bytes=${from}-${to - 1}` }));
      const body = response.Body as Readable | undefined;
      if (body === undefined) throw new Error('GetObject returned no body');
      return body;
    } catch (cause) {
      if (isNotFound(cause)) throw blobNotFound(this.description, key, cause);
      if (statusOf(cause) === 416) throw blobTruncated(this.description, key, from, to - from, 0);
      throw storageUnavailable(this.description, `read ${key}`, cause);
    }
  }

  /**
   * Sends a command whose body streams from `body()`. When the body itself fails (its writer was aborted —
   * a task cancelled mid-upload), the request is aborted and that failure is what rejects, not retried
   * (BodyFailed): nothing is left with an 'error' no one listens to, which would end the process.
   */
  private async sendStreamed<T>(body: () => AsyncIterable<Uint8Array>, send: (stream: Readable, abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const stream = uploadBody(body());
    let failed: BodyFailed | undefined;
    stream.once('error', (error) => {
      failed = new BodyFailed(error);
      controller.abort();
    });
    try {
      return await send(stream, controller.signal);
    } catch (cause) {
      throw failed ?? cause;
    }
  }

  private async withRetries<T>(send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (cause) {
        if (cause instanceof BodyFailed) throw cause.cause;
        const status = statusOf(cause);
        const permanent = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
        if (permanent || attempt >= this.options.maxAttempts || this.closed) throw cause;
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
      }
    }
  }

  async readRange(key: string, fullKey: string, offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const out = into === undefined ? Buffer.allocUnsafe(length) : into.subarray(0, length);
    if (length === 0) return out;
    let filled = 0;
    try {
      const response = await this.client.send(
        new awsS3.GetObjectCommand({ Bucket: this.bucket, Key: fullKey, Range: `bytes=${offset}-${offset + length - 1}` }),
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

/** A request body from an async iterable of chunks, reading at most about a megabyte ahead of the socket. */
/** An upload whose body failed: its cause is the body's error (never retried). */
class BodyFailed extends Error {
  constructor(cause: unknown) {
    super('the upload body failed', { cause });
  }
}

function uploadBody(chunks: AsyncIterable<Uint8Array>): Readable {
  return Readable.from(chunks, { objectMode: false, highWaterMark: UPLOAD_HIGH_WATER_BYTES });
}
