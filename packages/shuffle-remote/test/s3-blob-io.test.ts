import { strict as assert } from 'node:assert';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { ShuffleError, isShuffleError } from '@weft/shuffle-api';
import type { S3BlobStore } from '@weft/shuffle-remote';
import { S3BlobReader } from '../src/storage/s3-blob-reader.js';
import { S3BlobWriter } from '../src/storage/s3-blob-writer.js';

const MiB = 1024 * 1024;

/** The bytes of a test object: byte i is i mod 251. */
function objectBytes(length: number): Buffer {
  return Buffer.from(Uint8Array.from({ length }, (_, i) => i % 251));
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

/** What S3BlobWriter and S3BlobReader ask of their store, recorded; the object lives in `object`. */
class StubStore {
  readonly description = 's3://stub/';
  readonly calls: string[] = [];
  object = objectBytes(0);
  /** The next stream opened breaks after this many bytes. */
  breakAfter: number | undefined;

  fullKey(key: string): string {
    return key;
  }

  async putStream(_key: string, length: number, body: () => AsyncIterable<Uint8Array>): Promise<void> {
    this.calls.push(`put ${length}`);
    this.object = await collect(body());
    assert.equal(this.object.length, length);
  }

  async createUpload(): Promise<string> {
    this.calls.push('create');
    this.object = Buffer.alloc(0);
    return 'upload-1';
  }

  async uploadPartStream(_key: string, _id: string, part: number, length: number, body: () => AsyncIterable<Uint8Array>): Promise<string> {
    const bytes = await collect(body());
    assert.equal(bytes.length, length);
    this.calls.push(`part ${part} ${length}`);
    this.object = Buffer.concat([this.object, bytes]);
    return `etag-${part}`;
  }

  async completeUpload(_key: string, _id: string, etags: readonly string[]): Promise<void> {
    this.calls.push(`complete ${etags.length}`);
  }

  async readRange(_key: string, _full: string, offset: number, length: number): Promise<Uint8Array> {
    this.calls.push(`get ${offset}+${length}`);
    // as the real store: a short object is corrupt
    if (offset + length > this.object.length) throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `read of ${length} at ${offset} past the end`);
    return this.object.subarray(offset, offset + length);
  }

  async openRange(_key: string, _full: string, from: number, to: number): Promise<Readable> {
    this.calls.push(`stream ${from}-${to}`);
    const bytes = this.object.subarray(from, to);
    const breakAfter = this.breakAfter;
    this.breakAfter = undefined;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < bytes.length; at += 1000) {
        if (breakAfter !== undefined && at >= breakAfter) throw new Error('connection reset');
        yield bytes.subarray(at, Math.min(bytes.length, at + 1000));
      }
    }
    return Readable.from(chunks());
  }
}

const asStore = (stub: StubStore): S3BlobStore => stub as unknown as S3BlobStore;

describe('S3 blob writer: whole objects', () => {
  it('writes an object up to maxPutBytes with one streamed PutObject', async () => {
    const stub = new StubStore();
    const writer = new S3BlobWriter(asStore(stub), 'k', 5 * MiB, 64 * MiB);
    const data = objectBytes(3 * MiB + 17);
    await writer.writeWhole(data.length, (start, end) => Readable.from([data.subarray(start, end)]));
    assert.deepEqual(stub.calls, [`put ${data.length}`]);
    assert.ok(stub.object.equals(data));
    assert.equal(writer.bytesWritten, data.length);
  });

  it('writes a larger object as a multipart upload of parts of at least the minimum, each asked of the body by range', async () => {
    const stub = new StubStore();
    const writer = new S3BlobWriter(asStore(stub), 'k', 5 * MiB, 8 * MiB);
    const data = objectBytes(12 * MiB + 5);
    const ranges: string[] = [];
    await writer.writeWhole(data.length, (start, end) => {
      ranges.push(`${start}-${end}`);
      return Readable.from([data.subarray(start, end)]);
    });
    assert.deepEqual(stub.calls, ['create', `part 1 ${5 * MiB}`, `part 2 ${5 * MiB}`, `part 3 ${2 * MiB + 5}`, 'complete 3']);
    assert.deepEqual(ranges, [`0-${5 * MiB}`, `${5 * MiB}-${10 * MiB}`, `${10 * MiB}-${12 * MiB + 5}`]);
    assert.ok(stub.object.equals(data));
    assert.equal(writer.uploadId, 'upload-1');
  });
});

describe('S3 blob reader', () => {
  it('serves the pieces of a planned range from one GET, and any other read with a GET of its own', async () => {
    const stub = new StubStore();
    stub.object = objectBytes(100_000);
    const reader = new S3BlobReader(asStore(stub), 'k', 'k');
    reader.plan([
      { offset: 10_000, length: 50_000 },
      { offset: 70_000, length: 20_000 },
    ]);
    const got: Uint8Array[] = [];
    const into = new Uint8Array(8192);
    for (let at = 10_000; at < 60_000; at += 8192) got.push(Buffer.from(await reader.read(at, Math.min(8192, 60_000 - at), into)));
    got.push(await reader.read(70_000, 20_000));
    got.push(await reader.read(5, 10));
    await reader.close();
    assert.deepEqual(stub.calls, ['stream 10000-60000', 'get 70000+20000', 'get 5+10']);
    assert.ok(Buffer.concat(got.slice(0, -2)).equals(stub.object.subarray(10_000, 60_000)));
    assert.ok(Buffer.from(got.at(-1)!).equals(stub.object.subarray(5, 15)));
  });

  it('reopens a planned range where it stopped when its stream breaks', async () => {
    const stub = new StubStore();
    stub.object = objectBytes(50_000);
    stub.breakAfter = 20_000;
    const reader = new S3BlobReader(asStore(stub), 'k', 'k');
    reader.plan([{ offset: 0, length: 50_000 }]);
    const got: Uint8Array[] = [];
    for (let at = 0; at < 50_000; at += 10_000) got.push(Buffer.from(await reader.read(at, 10_000)));
    await reader.close();
    assert.deepEqual(stub.calls, ['stream 0-50000', 'stream 20000-50000']);
    assert.ok(Buffer.concat(got).equals(stub.object));
  });

  it('reports a planned stream that ends early as SHF_ERR_DATA_CORRUPTED when reopening does not help', async () => {
    const stub = new StubStore();
    stub.object = objectBytes(30_000);
    const reader = new S3BlobReader(asStore(stub), 'k', 'k');
    reader.plan([{ offset: 0, length: 40_000 }]);
    await reader.read(0, 10_000);
    await reader.read(10_000, 10_000);
    const error = await reader.read(20_000, 20_000).then(
      () => assert.fail('expected a truncated object'),
      (e: unknown) => e,
    );
    assert.ok(isShuffleError(error, 'SHF_ERR_DATA_CORRUPTED'), String(error));
    assert.deepEqual(stub.calls, ['stream 0-40000', 'get 20000+20000']);
    await reader.close();
  });
});
