import type { S3Client } from '@aws-sdk/client-s3';
import { storageUnavailable } from '../storage/storage-errors.js';
import { awsS3 } from '../lazy/aws-s3.js';

/** S3's most parts in one multipart upload. */
const MAX_PARTS = 10_000;

export interface S3PartJoinerOptions {
  readonly client: S3Client;
  readonly bucket: string;
  readonly key: string;
  /** The object's URL, for errors. */
  readonly url: string;
  /** Every part but the last is at least this long (S3: 5 MiB). */
  readonly minPartBytes: number;
  /** Awaited once the multipart upload is created, before its first part goes up (a rejection aborts the upload and fails the call that opened it). */
  readonly onUploadCreated?: (uploadId: string) => Promise<void>;
}

/** A joined object, every byte uploaded: `commit()` makes it visible whole; `discard()` drops it. */
export interface S3PendingObject {
  commit(): Promise<void>;
  discard(): Promise<void>;
}

/**
 * Bytes appended in order, becoming one object at `key`: once `minPartBytes` are held they go up as a
 * part of a multipart upload (opened then); `finish()` sends the tail as the last part and returns the
 * upload to complete — or, for an object that never filled one part, the bytes held for one PutObject.
 * Either way nothing is visible at `key` before `commit()`. One call at a time. Holds at most about
 * `minPartBytes` plus one append.
 */
export class S3PartJoiner {
  readonly #options: S3PartJoinerOptions;
  #held: Uint8Array[] = [];
  #heldBytes = 0;
  #uploadId: string | undefined;
  readonly #etags: string[] = [];
  #aborted = false;
  /** `onUploadCreated` failed: the bytes held then were dropped, so every later call fails with this. */
  #broken: unknown;

  constructor(options: S3PartJoinerOptions) {
    this.#options = options;
  }

  async append(chunk: Uint8Array): Promise<void> {
    if (this.#broken !== undefined) throw this.#broken;
    if (chunk.length === 0) return;
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#heldBytes >= this.#options.minPartBytes) await this.#sendPart();
  }

  async finish(): Promise<S3PendingObject> {
    if (this.#broken !== undefined) throw this.#broken;
    const { client, bucket, key, url } = this.#options;
    if (this.#uploadId === undefined) {
      const body = Buffer.concat(this.#held, this.#heldBytes);
      this.#held = [];
      return {
        commit: () => this.#call(`upload ${url}`, () => client.send(new awsS3.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length }))).then(() => {}),
        discard: async () => {},
      };
    }
    if (this.#heldBytes > 0) await this.#sendPart();
    const uploadId = this.#uploadId;
    const parts = this.#etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 }));
    return {
      commit: () =>
        this.#call(`complete ${url}`, () => client.send(new awsS3.CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }))).then(() => {}),
      discard: () => abortUpload(client, bucket, key, uploadId),
    };
  }

  /**
   * Sends what is held as the last part — opening the multipart upload if no part went up yet — and returns
   * the upload: any process completes it with CompleteMultipartUpload (a two-phase-commit pre-commit).
   */
  async preCommit(): Promise<{ readonly uploadId: string; readonly etags: readonly string[] }> {
    if (this.#broken !== undefined) throw this.#broken;
    if (this.#heldBytes > 0 || this.#uploadId === undefined) await this.#sendPart();
    return { uploadId: this.#uploadId as string, etags: [...this.#etags] };
  }

  /**
   * Drops what was appended: the open upload is aborted. Idempotent. `strict`: an abort S3 refused or
   * could not be sent fails (SHF_ERR_STORAGE_UNAVAILABLE; the upload is still there) — else it is ignored.
   */
  async abort(options: { readonly strict?: boolean } = {}): Promise<void> {
    this.#held = [];
    this.#heldBytes = 0;
    const uploadId = this.#uploadId;
    this.#uploadId = undefined;
    this.#aborted = true;
    if (uploadId !== undefined) await abortUpload(this.#options.client, this.#options.bucket, this.#options.key, uploadId, options.strict === true);
  }

  async #sendPart(): Promise<void> {
    const { client, bucket, key, url } = this.#options;
    const body = Buffer.concat(this.#held, this.#heldBytes);
    this.#held = [];
    this.#heldBytes = 0;
    if (this.#etags.length >= MAX_PARTS) throw storageUnavailable(`s3://${bucket}`, `upload ${url}`, new Error(`more than ${MAX_PARTS} parts; raise minPartBytes`), false);
    if (this.#uploadId === undefined) {
      const created = await this.#call(`upload ${url}`, async () => {
        const out = await client.send(new awsS3.CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
        if (out.UploadId === undefined) throw new Error('CreateMultipartUpload returned no UploadId');
        return out.UploadId;
      });
      try {
        await this.#options.onUploadCreated?.(created);
      } catch (error) {
        this.#broken = error;
        await abortUpload(client, bucket, key, created);
        throw error;
      }
      this.#uploadId = created;
    }
    const uploadId = this.#uploadId;
    const partNumber = this.#etags.length + 1;
    const out = await this.#call(`upload part ${partNumber} of ${url}`, () => client.send(new awsS3.UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length })));
    this.#etags.push(out.ETag ?? '');
    if (this.#aborted) await abortUpload(client, bucket, key, uploadId); // aborted while the part was in flight
  }

  async #call<T>(operation: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (cause) {
      throw storageUnavailable(`s3://${this.#options.bucket}`, operation, cause);
    }
  }
}

/**
 * Aborts an unfinished multipart upload; an upload already gone and a server without the call (s3rver) are
 * no error. Any other failure is ignored, or with `strict` thrown (the upload is still there).
 */
async function abortUpload(client: S3Client, bucket: string, key: string, uploadId: string, strict = false): Promise<void> {
  try {
    await client.send(new awsS3.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
  } catch (cause) {
    if (strict && !uploadGone(cause)) throw storageUnavailable(`s3://${bucket}`, `abort the upload of ${key}`, cause);
  }
}

/** An abort of a multipart upload that has nothing to do: the upload is gone (404 NoSuchUpload), or the server has no such call (405, 501). */
export function uploadGone(error: unknown): boolean {
  const e = error as { readonly name?: string; readonly $metadata?: { readonly httpStatusCode?: number } } | undefined;
  const status = e?.$metadata?.httpStatusCode;
  return status === 404 || status === 405 || status === 501 || e?.name === 'NoSuchUpload';
}
