import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeleteObjectCommand } from '@aws-sdk/client-s3';
import type { RemoteShuffleOptions } from '@weft/shuffle-remote';
import { type RedisServer, type S3Server, type TempDir, createTempDir, startRedis, startS3Server } from '@weft/testkit';
import { s3StoreOn } from './s3-store-on.js';

/**
 * One storage configuration for integration tests: local directory + SQLite, or s3rver + redis-server
 * (real servers, started once per file). Each test asks for `options(label)`, a fresh namespace.
 */
export interface Backend extends AsyncDisposable {
  readonly name: string;
  readonly redis: RedisServer | undefined;
  /** JSON options of a fresh namespace (its own directory or bucket prefix and key prefix). */
  options(label: string, extra?: RemoteShuffleOptions): RemoteShuffleOptions;
  /** Data objects stored now in a namespace, as paths of their bytes on this machine's disk. */
  objectFiles(label: string): Promise<string[]>;
  /** Deletes a data object through the store's own API (rm for a directory, DeleteObject for S3). */
  deleteObject(label: string, key: string): Promise<void>;
  /** Flips one byte of a stored object's bytes on disk. */
  flipByte(label: string, key: string, offset: number): Promise<void>;
  close(): Promise<void>;
}

async function filesUnder(dir: string, suffix = ''): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith(suffix)).map((e) => join(e.parentPath ?? '', e.name)).sort();
}

async function flipAt(path: string, offset: number): Promise<void> {
  const bytes = await readFile(path);
  if (offset >= bytes.length) throw new Error(`offset ${offset} is past the end of ${path} (${bytes.length})`);
  bytes[offset]! ^= 0x5a;
  await writeFile(path, bytes);
}

export async function localSqliteBackend(): Promise<Backend> {
  const dir: TempDir = await createTempDir('weft-it-local-');
  const data = (label: string): string => join(dir.path, label, 'data');
  return {
    name: 'local directory + SQLite',
    redis: undefined,
    options: (label, extra = {}) => ({ store: `file://${data(label)}`, meta: `sqlite://${join(dir.path, label, 'meta.db')}`, ...extra }),
    objectFiles: (label) => filesUnder(data(label)),
    deleteObject: (label, key) => rm(join(data(label), ...key.split('/'))),
    flipByte: (label, key, offset) => flipAt(join(data(label), ...key.split('/')), offset),
    close: () => dir.remove(),
    [Symbol.asyncDispose]: () => dir.remove(),
  };
}

const BUCKET = 'weft-it';

export async function s3RedisBackend(): Promise<Backend> {
  let s3: S3Server | undefined;
  let redis: RedisServer | undefined;
  try {
    [s3, redis] = await Promise.all([startS3Server({ buckets: [BUCKET] }), startRedis()]);
  } catch (error) {
    await Promise.allSettled([s3?.stop(), redis?.close()]);
    throw error;
  }
  const server = s3;
  const objectFiles = async (label: string): Promise<string[]> => filesUnder(join(server.dir, BUCKET, label), '._S3rver_object');
  const close = async (): Promise<void> => {
    await Promise.allSettled([server.stop(), redis?.close()]);
  };
  return {
    name: 'S3 (s3rver) + Redis',
    redis,
    options: (label, extra = {}) => ({
      store: s3StoreOn(server, BUCKET, `${label}/`),
      meta: { type: 'redis', url: redis!.url, keyPrefix: `it:${label}:` },
      producerMemoryBytes: 12 * 1024 * 1024,
      ...extra,
    }),
    objectFiles,
    deleteObject: async (label, key) => {
      await server.client().send(new DeleteObjectCommand({ Bucket: BUCKET, Key: `${label}/${key}` }));
    },
    flipByte: async (label, key, offset) => {
      // s3rver keeps an object's bytes in one file; find it by the key's last segment
      const last = key.split('/').pop()!;
      const files = (await objectFiles(label)).filter((f) => f.includes(last.slice(0, 20)));
      if (files.length !== 1) throw new Error(`expected one s3rver file for ${key}, found ${files.length}`);
      await flipAt(files[0]!, offset);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
