import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { S3Client } from '@aws-sdk/client-s3';
import { invalidArgument, type JsonValue, ShuffleError } from '@weft/shuffle-api';
import type { ResolvedS3StoreOptions } from '../config/store-options.js';
import { storageUnavailable } from '../storage/storage-errors.js';
import { parseS3Url, resolveS3Connection, type S3FileSystemOptions, validateS3FileSystemOptions } from './s3-file-system-options.js';
import { S3PartJoiner, uploadGone } from './s3-part-joiner.js';
import { awsS3 } from '../lazy/aws-s3.js';

/** The shapes the S3FileSystem answers with (structurally @weft/engine's ExternalFileSystem: this package does not import the engine). */
export interface S3File {
  readonly url: string;
  readonly size: number;
}

export interface S3FileWriter {
  write(chunk: string): Promise<void>;
  complete(): Promise<void>;
  abort(): Promise<void>;
}

export interface S3StagedFile {
  commit(): Promise<void>;
  rollBack(): Promise<void>;
  discard(): Promise<void>;
}

/** Requests an S3FileSystem made, for tests and benchmarks. */
export interface S3FileSystemStats {
  /** Ranged GETs of `read()`. */
  rangedReads: number;
  bytesRead: number;
}

interface AwsErrorShape {
  readonly name?: string;
  readonly Code?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
}

export function s3StatusOf(error: unknown): number | undefined {
  return (error as AwsErrorShape | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const e = error as AwsErrorShape | undefined;
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.Code === 'NoSuchKey' || s3StatusOf(error) === 404;
}

/**
 * Job inputs and outputs in S3 (`s3://bucket/key`), for the engine's text sources and sinks — it has
 * the shape of @weft/engine's ExternalFileSystem, scheme `s3`. Inputs are listed (the object, or the
 * objects directly under `key/`) and read with one ranged GET per `read()`. A sink attempt writes its
 * own object: parts of a multipart upload once it passes `minPartBytes`, else one PutObject at
 * `complete()`. Publishing (`stage`) joins the attempts' objects, in order, into a multipart upload
 * of the output key — invisible until `commit()` completes it (S3 makes an object visible only whole,
 * at CompleteMultipartUpload or PutObject: the output key never exists half-written); an output
 * smaller than one part is held in memory and committed with one PutObject. The bytes pass through the
 * job master (s3rver, the test server, has no UploadPartCopy; and parts under 5 MiB could not use it).
 *
 * Endpoint, region and credentials come from the options, else the same AWS variables as the shuffle's
 * S3 store, resolved when first used. `reference` lets worker processes rebuild it. Errors are
 * ShuffleErrors: SHF_ERR_INVALID_ARGUMENT (field `url`) for a malformed URL or a missing input,
 * SHF_ERR_STORAGE_UNAVAILABLE when S3 fails.
 *
 * Not done here: incomplete multipart uploads of attempts killed mid-write are aborted by
 * `deleteUnder` where the server lists them; give the bucket an AbortIncompleteMultipartUpload
 * lifecycle rule for the rest.
 */
export class S3FileSystem {
  readonly scheme = 's3';
  readonly reference: { readonly module: string; readonly exportName: string; readonly options: JsonValue };
  readonly stats: S3FileSystemStats = { rangedReads: 0, bytesRead: 0 };
  readonly #options: S3FileSystemOptions;
  readonly #env: Readonly<Record<string, string | undefined>>;
  #connection: { client: S3Client; agent: HttpAgent | HttpsAgent; resolved: ResolvedS3StoreOptions } | undefined;
  #closed: Promise<void> | undefined;

  constructor(options: S3FileSystemOptions = {}, env: Readonly<Record<string, string | undefined>> = process.env) {
    this.#options = validateS3FileSystemOptions(options as JsonValue);
    this.#env = env;
    this.reference = { module: '@weft/shuffle-remote', exportName: 'createS3FileSystem', options: { ...this.#options } as JsonValue };
  }

  get #s3(): { client: S3Client; resolved: ResolvedS3StoreOptions } {
    if (this.#closed !== undefined) throw new ShuffleError('SHF_ERR_CLOSED', 'the S3 file system is closed');
    if (this.#connection === undefined) {
      const resolved = resolveS3Connection(this.#options, this.#env);
      const https = resolved.endpoint === undefined || resolved.endpoint.startsWith('https:');
      const agent = https ? new HttpsAgent({ keepAlive: true, maxSockets: 64 }) : new HttpAgent({ keepAlive: true, maxSockets: 64 });
      const client = new awsS3.S3Client({
        region: resolved.region,
        ...(resolved.endpoint === undefined ? {} : { endpoint: resolved.endpoint }),
        forcePathStyle: resolved.forcePathStyle,
        ...(resolved.credentials === undefined ? {} : { credentials: resolved.credentials }),
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        maxAttempts: resolved.maxAttempts,
        requestHandler: { connectionTimeout: resolved.connectTimeoutMs, requestTimeout: resolved.requestTimeoutMs, ...(https ? { httpsAgent: agent } : { httpAgent: agent }) },
      });
      this.#connection = { client, agent, resolved };
    }
    return this.#connection;
  }

  async list(url: string): Promise<S3File[]> {
    const { bucket, key } = parseS3Url(url);
    if (key !== '' && !key.endsWith('/')) {
      const size = await this.#size(bucket, key, url);
      if (size !== undefined) return [{ url, size }];
    }
    const prefix = key === '' || key.endsWith('/') ? key : `${key}/`;
    const files: S3File[] = [];
    let found = false;
    let token: string | undefined;
    do {
      const page = await this.#send(`list ${url}`, () =>
        this.#s3.client.send(new awsS3.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: '/', ContinuationToken: token })),
      );
      found ||= (page.Contents?.length ?? 0) > 0 || (page.CommonPrefixes?.length ?? 0) > 0;
      for (const object of page.Contents ?? []) {
        const name = object.Key?.slice(prefix.length) ?? '';
        if (name === '' || name.startsWith('.') || name.startsWith('_')) continue;
        files.push({ url: `s3://${bucket}/${prefix}${name}`, size: object.Size ?? 0 });
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    if (!found) throw invalidArgument('url', `no object ${url} and no objects under ${url.replace(/\/?$/, '/')}`, { url });
    // the order a local directory's names sort in (JavaScript's), not S3's byte order
    return files.sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
  }

  async read(url: string, position: number, length: number): Promise<Uint8Array> {
    const { bucket, key } = parseS3Url(url);
    if (length <= 0) return new Uint8Array(0);
    this.stats.rangedReads++;
    let response;
    try {
      response = await this.#s3.client.send(new awsS3.GetObjectCommand({ Bucket: bucket, Key: key, Range: `bytes=${position}-${position + length - 1}` }));
    } catch (cause) {
      if (s3StatusOf(cause) === 416) return new Uint8Array(0); // at or past the end
      if (isNotFound(cause)) throw invalidArgument('url', `no object ${url}`, { url });
      throw storageUnavailable(`s3://${bucket}`, `read ${url}`, cause);
    }
    const bytes = Buffer.from(await response.Body!.transformToByteArray());
    this.stats.bytesRead += bytes.length;
    return bytes.length > length ? bytes.subarray(0, length) : bytes;
  }

  async createWriter(url: string): Promise<S3FileWriter> {
    const { bucket, key } = parseS3Url(url);
    if (key === '' || key.endsWith('/')) throw invalidArgument('url', `${url} names no object`, { url });
    const joiner = new S3PartJoiner({ client: this.#s3.client, bucket, key, url, minPartBytes: this.#s3.resolved.minPartBytes });
    return {
      write: (chunk) => joiner.append(Buffer.from(chunk, 'utf8')),
      complete: async () => {
        const staged = await joiner.finish();
        await staged.commit();
      },
      abort: () => joiner.abort(),
    };
  }

  async exists(url: string): Promise<boolean> {
    const { bucket, key } = parseS3Url(url);
    return key !== '' && (await this.#size(bucket, key, url)) !== undefined;
  }

  async listUnder(dir: string): Promise<string[]> {
    const { bucket, key } = parseS3Url(dir);
    const prefix = key.endsWith('/') ? key : `${key}/`;
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.#send(`list ${dir}`, () => this.#s3.client.send(new awsS3.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token })));
      for (const object of page.Contents ?? []) if (object.Key !== undefined) out.push(`s3://${bucket}/${object.Key}`);
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    return out.sort();
  }

  async stage(request: { readonly target: string; readonly parts: readonly string[]; readonly tempDir: string }): Promise<S3StagedFile> {
    const { bucket, key } = parseS3Url(request.target);
    if (key === '' || key.endsWith('/')) throw invalidArgument('url', `${request.target} names no object`, { url: request.target });
    const joiner = new S3PartJoiner({ client: this.#s3.client, bucket, key, url: request.target, minPartBytes: this.#s3.resolved.minPartBytes });
    try {
      for (const part of request.parts) {
        const source = parseS3Url(part);
        const response = await this.#send(`read ${part}`, () => this.#s3.client.send(new awsS3.GetObjectCommand({ Bucket: source.bucket, Key: source.key })));
        for await (const chunk of response.Body as AsyncIterable<Uint8Array>) await joiner.append(chunk);
      }
      const upload = await joiner.finish();
      const previous = parseS3Url(`${request.tempDir}/previous`);
      let hadPrevious = false;
      return {
        commit: async () => {
          // what the target held, kept to put back on a rollback
          if ((await this.#size(bucket, key, request.target)) !== undefined) {
            await this.#copy({ bucket, key }, previous, `keep ${request.target}`);
            hadPrevious = true;
          }
          await upload.commit();
        },
        rollBack: async () => {
          if (hadPrevious) await this.#copy(previous, { bucket, key }, `restore ${request.target}`);
          else await this.delete(request.target);
        },
        discard: () => upload.discard(),
      };
    } catch (error) {
      await joiner.abort();
      throw error;
    }
  }

  /**
   * Transactions for two-phase-commit sinks: a multipart upload per transaction (`onStarted` gets `{ url,
   * uploadId, etags: [] }` once it is created, before its first part); the pre-commit sends the last part
   * and hands out `{ url, uploadId, etags }`; the commit completes the upload (done before: the object is
   * there and the server knows the upload no more — nothing changes); the abort aborts it (an upload
   * already gone, or a server without AbortMultipartUpload, is no error; a refused or failed abort is
   * SHF_ERR_STORAGE_UNAVAILABLE, so whoever tracks the upload keeps tracking it).
   */
  readonly transactions = {
    begin: async (url: string, options?: { onStarted?(abortHandle: JsonValue): Promise<void> }): Promise<{ write(chunk: string): Promise<void>; preCommit(): Promise<JsonValue>; abort(): Promise<void> }> => {
      const { bucket, key } = parseS3Url(url);
      if (key === '' || key.endsWith('/')) throw invalidArgument('url', `${url} names no object`, { url });
      const onStarted = options?.onStarted;
      const joiner = new S3PartJoiner({
        client: this.#s3.client,
        bucket,
        key,
        url,
        minPartBytes: this.#s3.resolved.minPartBytes,
        ...(onStarted === undefined ? {} : { onUploadCreated: (uploadId: string) => onStarted({ url, uploadId, etags: [] }) }),
      });
      return {
        write: (chunk) => joiner.append(Buffer.from(chunk, 'utf8')),
        preCommit: async () => {
          const { uploadId, etags } = await joiner.preCommit();
          return { url, uploadId, etags: [...etags] };
        },
        abort: () => joiner.abort({ strict: true }),
      };
    },
    commit: async (handle: JsonValue): Promise<void> => {
      const { url, uploadId, etags } = uploadHandle(handle);
      const { bucket, key } = parseS3Url(url);
      try {
        await this.#s3.client.send(new awsS3.CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) } }));
      } catch (cause) {
        // completed before (a re-commit after a restore): the object is in place
        if ((await this.#size(bucket, key, url)) !== undefined) return;
        throw storageUnavailable(`s3://${bucket}`, `complete ${url}`, cause);
      }
    },
    abort: async (handle: JsonValue): Promise<void> => {
      const { url, uploadId } = uploadHandle(handle);
      const { bucket, key } = parseS3Url(url);
      try {
        await this.#s3.client.send(new awsS3.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
      } catch (cause) {
        // gone already (completed or aborted: 404 NoSuchUpload), or a server without the call (s3rver: 405,
        // others 501): nothing more to do; anything else (denied, unreachable) leaves the upload, said
        if (!uploadGone(cause)) throw storageUnavailable(`s3://${bucket}`, `abort the upload of ${url}`, cause);
      }
    },
  };

  async delete(url: string): Promise<void> {
    const { bucket, key } = parseS3Url(url);
    try {
      await this.#s3.client.send(new awsS3.DeleteObjectCommand({ Bucket: bucket, Key: key }));
    } catch (cause) {
      if (!isNotFound(cause)) throw storageUnavailable(`s3://${bucket}`, `delete ${url}`, cause);
    }
  }

  async deleteUnder(dir: string): Promise<void> {
    const urls = await this.listUnder(dir);
    for (let i = 0; i < urls.length; i += 16) await Promise.all(urls.slice(i, i + 16).map((url) => this.delete(url)));
    await this.#abortUploadsUnder(dir);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#connection?.client.destroy();
      this.#connection?.agent.destroy();
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The object's size, or undefined when there is none. */
  async #size(bucket: string, key: string, url: string): Promise<number | undefined> {
    try {
      const head = await this.#s3.client.send(new awsS3.HeadObjectCommand({ Bucket: bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (cause) {
      if (isNotFound(cause)) return undefined;
      throw storageUnavailable(`s3://${bucket}`, `stat ${url}`, cause);
    }
  }

  async #copy(from: { bucket: string; key: string }, to: { bucket: string; key: string }, operation: string): Promise<void> {
    await this.#send(operation, () => this.#s3.client.send(new awsS3.CopyObjectCommand({ Bucket: to.bucket, Key: to.key, CopySource: encodeURI(`${from.bucket}/${from.key}`) })));
  }

  /** Aborts the unfinished multipart uploads under `dir/`; a server that cannot list them (s3rver) is skipped. */
  async #abortUploadsUnder(dir: string): Promise<void> {
    const { bucket, key } = parseS3Url(dir);
    const prefix = key.endsWith('/') ? key : `${key}/`;
    let uploads;
    try {
      uploads = await this.#s3.client.send(new awsS3.ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
    } catch {
      return;
    }
    for (const upload of uploads.Uploads ?? []) {
      await this.#s3.client.send(new awsS3.AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId })).catch(() => {});
    }
  }

  async #send<T>(operation: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (cause) {
      if (isNotFound(cause)) throw invalidArgument('url', `${operation}: not found`, { operation });
      throw storageUnavailable('S3', operation, cause);
    }
  }
}

/** The S3 file system of `options` (S3FileSystemOptions, plain JSON) — the export worker processes rebuild it by. */
export function createS3FileSystem(options: JsonValue | S3FileSystemOptions = {}): S3FileSystem {
  return new S3FileSystem(options as S3FileSystemOptions);
}

/** A transaction handle of S3FileSystem.transactions, checked. */
function uploadHandle(handle: JsonValue): { url: string; uploadId: string; etags: string[] } {
  const h = handle as { url?: unknown; uploadId?: unknown; etags?: unknown } | null;
  if (h === null || typeof h !== 'object' || typeof h.url !== 'string' || typeof h.uploadId !== 'string' || !Array.isArray(h.etags) || h.etags.some((e) => typeof e !== 'string')) {
    throw invalidArgument('handle', `expected an S3 transaction handle { url, uploadId, etags }, got ${JSON.stringify(handle)}`, {});
  }
  return { url: h.url, uploadId: h.uploadId, etags: h.etags as string[] };
}
