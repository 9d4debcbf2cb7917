import { randomUUID } from 'node:crypto';
import { mkdir, readFile, readdir, rm, rmdir, stat, statfs, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, ShuffleError, invalidConfig } from '@weft/shuffle-api';
import type { IndexLocation } from '../format/partition-index.js';
import { type CommittedPartition, validateCommittedPartition } from '../protocol/committed-partition.js';
import type { BlobReader, BlobWriter } from '../storage/blob-store.js';
import { LocalBlobStore } from '../storage/local-blob-store.js';
import { encodeKeySegment, objectKey } from '../storage/object-key.js';
import { storageUnavailable } from '../storage/storage-errors.js';
import { ProducerLeases } from './producer-leases.js';
import type { TierUpload } from './tier-upload.js';

/** One push in progress or pushed and not yet committed. */
export interface Upload {
  readonly jobId: string;
  readonly partitionId: string;
  readonly attempt: number;
  readonly key: string;
  readonly writer: BlobWriter;
  state: 'uploading' | 'complete' | 'gone';
  bytes: number;
  completedAtMs: number;
  /** Where the object's index lies, as the push validated it. */
  location?: IndexLocation;
  /** Its S3 tier copy, when the server has a tier: dropped with the upload, owned by the commit once committed. */
  tier?: TierUpload;
}

const MAX_CACHED_COMMITS = 10_000;

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/**
 * A server's partitions on its local disk, in the blocking layout: data objects in a LocalBlobStore under
 * `<dir>/objects` (key `<job>/<partition>/attempt-<n>.<writeId>.wsm`, the sort-merge object as pushed),
 * one commit record per committed partition under `<dir>/commits/<job>/<partition>.json`, created
 * exclusively (`wx`) so only one attempt's record can exist. Which partitions are committed is also kept
 * in memory (read at start-up), so a push or fetch of an uncommitted partition costs no file lookup.
 * Pushed-but-uncommitted objects are tracked in memory; at start-up every object without a commit record
 * is garbage and is deleted, and so is a commit record that does not parse (a write cut off by a crash).
 *
 * Keeps the counts the metrics and the registry report: disk bytes used, committed partitions.
 *
 * The directory must be this store's alone: `open()` deletes every object it finds without a commit record,
 * which on a shared directory would be another server's pushes. Its owner holds the directory's
 * DirectoryLock before calling `open()` (ShuffleServer.start does) and until after `close()`.
 */
export class PartitionStore {
  readonly objects: LocalBlobStore;
  serverId = '';
  diskUsedBytes = 0;
  partitions = 0;
  /** Keys of the objects `open()` deleted as garbage (their S3 tier copies, if any, go too). */
  garbageKeys: string[] = [];
  private readonly commitsDir: string;
  private readonly uploads = new Map<string, Upload[]>();
  private readonly cache = new Map<string, CommittedPartition>();
  /** Partition keys with a commit record on disk. */
  /** Partition key → its job id, for every committed partition here. */
  private readonly committedKeys = new Map<string, string>();
  /** Job directories under commits/ known to exist. */
  private readonly jobDirs = new Set<string>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly leases = new ProducerLeases();
  /** Drops in progress (close() waits for them). */
  private readonly drops = new Set<Promise<void>>();
  private uploadCounter = 0;
  /** Distinguishes this run's write ids from those of earlier runs on the same directory (the counter restarts). */
  private readonly runId = randomUUID().slice(0, 8);

  constructor(
    private readonly dir: string,
    private readonly logger: Logger,
    /** fsync each object when its push completes. */
    syncOnComplete = false,
  ) {
    this.objects = new LocalBlobStore({ dir: join(dir, 'objects'), syncOnComplete });
    this.commitsDir = join(dir, 'commits');
  }

  /** Creates the layout, reads (or creates) the server id, deletes garbage and counts what is kept. */
  async open(): Promise<void> {
    try {
      await mkdir(this.commitsDir, { recursive: true });
    } catch (cause) {
      throw invalidConfig('dir', `cannot create ${this.commitsDir}: ${(cause as Error).message}`, cause);
    }
    await this.objects.start();
    const idFile = join(this.dir, 'server-id');
    try {
      this.serverId = (await readFile(idFile, 'utf8')).trim();
    } catch (cause) {
      if (!isErrno(cause, 'ENOENT')) throw invalidConfig('dir', `cannot read ${idFile}: ${(cause as Error).message}`, cause);
      this.serverId = `ss-${randomUUID()}`;
      await writeFile(idFile, `${this.serverId}\n`, { flag: 'wx' }).catch(async () => {
        this.serverId = (await readFile(idFile, 'utf8')).trim();
      });
    }
    const referenced = new Set<string>();
    for (const job of await readdir(this.commitsDir)) {
      for (const name of await readdir(join(this.commitsDir, job))) {
        const path = join(this.commitsDir, job, name);
        if (!name.endsWith('.json')) {
          await rm(path, { force: true }); // a commit's temporary file
          continue;
        }
        const record = await this.readRecord(path);
        if (record === undefined) {
          await rm(path, { force: true });
          continue;
        }
        referenced.add(record.objectKey);
        this.committedKeys.set(this.partitionKey(record.jobId, record.partitionId), record.jobId);
        this.jobDirs.add(join(this.commitsDir, job));
        this.partitions++;
      }
    }
    this.garbageKeys = [];
    for (const key of await this.objects.listKeys()) {
      if (!referenced.has(key)) {
        await this.objects.delete(key);
        this.garbageKeys.push(key);
        continue;
      }
      this.diskUsedBytes += (await stat(this.objectPath(key))).size;
    }
    this.logger.info({ serverId: this.serverId, partitions: this.partitions, diskUsedBytes: this.diskUsedBytes, garbageObjects: this.garbageKeys.length }, 'partition store opened');
  }

  /** Free bytes on the data disk. */
  async freeBytes(): Promise<number> {
    const s = await statfs(this.dir);
    return Number(s.bavail) * Number(s.bsize);
  }

  /** Runs `body` with the partition's lock held (commits and releases of one partition never interleave). */
  async withLock<T>(jobId: string, partitionId: string, body: () => Promise<T>): Promise<T> {
    const key = this.partitionKey(jobId, partitionId);
    const previous = this.locks.get(key) ?? Promise.resolve();
    const run = previous.then(body, body);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  async createUpload(jobId: string, partitionId: string, attempt: number): Promise<Upload> {
    const writeId = `${this.serverId}-${this.runId}-${(++this.uploadCounter).toString(36)}`;
    const key = objectKey({ jobId, partitionId, producerId: `attempt-${attempt}`, writeId });
    const writer = await this.objects.createWriter(key);
    const upload: Upload = { jobId, partitionId, attempt, key, writer, state: 'uploading', bytes: 0, completedAtMs: 0 };
    const pkey = this.partitionKey(jobId, partitionId);
    const list = this.uploads.get(pkey);
    if (list === undefined) this.uploads.set(pkey, [upload]);
    else list.push(upload);
    return upload;
  }

  /** Appends to an upload's object, counting disk use. */
  async append(upload: Upload, chunks: readonly Uint8Array[], bytes: number): Promise<void> {
    await upload.writer.append(chunks);
    upload.bytes += bytes;
    this.diskUsedBytes += bytes;
  }

  /** The upload is whole; it waits for its commit. False when it was dropped (its partition released) meanwhile. */
  async completeUpload(upload: Upload, nowMs: number): Promise<boolean> {
    if (upload.state !== 'uploading') return false;
    await upload.writer.complete();
    if (upload.state !== 'uploading') return false;
    // a newer complete push of the same attempt replaces an older one
    for (const other of [...this.uploadsOf(upload.jobId, upload.partitionId)]) {
      if (other !== upload && other.attempt === upload.attempt && other.state === 'complete') await this.dropUpload(other);
    }
    upload.state = 'complete';
    upload.completedAtMs = nowMs;
    return true;
  }

  /** Drops an upload, its S3 tier copy and its object (aborting it when still uploading). Idempotent. */
  async dropUpload(upload: Upload): Promise<void> {
    const state = upload.state;
    upload.state = 'gone';
    this.forgetUpload(upload);
    if (state === 'gone') return;
    const drop = this.deleteUpload(upload, state);
    this.drops.add(drop);
    try {
      await drop;
    } finally {
      this.drops.delete(drop);
    }
  }

  private async deleteUpload(upload: Upload, state: Upload['state']): Promise<void> {
    // the tier copy first: a crash before the disk file goes leaves garbage that start-up finds (and its copy)
    await upload.tier?.abort();
    try {
      if (state === 'uploading') await upload.writer.abort();
      else await this.objects.delete(upload.key);
    } catch (error) {
      this.logger.warn({ key: upload.key, error: (error as Error).message }, 'could not delete an upload');
    }
    this.diskUsedBytes -= upload.bytes;
    upload.bytes = 0;
  }

  /** The latest complete push of `attempt`, if any. */
  completeUploadOf(jobId: string, partitionId: string, attempt: number): Upload | undefined {
    return this.uploadsOf(jobId, partitionId).findLast((u) => u.attempt === attempt && u.state === 'complete');
  }

  uploadsOf(jobId: string, partitionId: string): readonly Upload[] {
    return this.uploads.get(this.partitionKey(jobId, partitionId)) ?? [];
  }

  /** Takes or renews a producer's lease on an attempt until `expiresAtMs`. */
  renewLease(jobId: string, partitionId: string, attempt: number, expiresAtMs: number): void {
    this.leases.renew(this.partitionKey(jobId, partitionId), attempt, expiresAtMs);
  }

  /** Drops an attempt's lease (all attempts' when `attempt` is undefined). */
  dropLease(jobId: string, partitionId: string, attempt?: number): void {
    this.leases.drop(this.partitionKey(jobId, partitionId), attempt);
  }

  /** True while a producer is at work on the (uncommitted) partition: a live lease or a push in progress. */
  isPending(jobId: string, partitionId: string, nowMs: number): boolean {
    if (this.leases.isLeased(this.partitionKey(jobId, partitionId), nowMs)) return true;
    return this.uploadsOf(jobId, partitionId).some((u) => u.state !== 'gone');
  }

  /** The committed record of a partition, or undefined. */
  async committed(jobId: string, partitionId: string): Promise<CommittedPartition | undefined> {
    const pkey = this.partitionKey(jobId, partitionId);
    if (!this.committedKeys.has(pkey)) return undefined;
    const cached = this.cache.get(pkey);
    if (cached !== undefined) return cached;
    const record = await this.readRecord(this.commitPath(jobId, partitionId));
    if (record !== undefined) this.remember(pkey, record);
    return record;
  }

  /**
   * Writes the commit record of `upload` (which becomes owned by the record). Exclusive: throws
   * SHF_ERR_COMMIT_CONFLICT if a record exists. Other attempts' complete uploads of the partition are dropped.
   */
  async writeCommit(record: CommittedPartition, upload: Upload): Promise<void> {
    const path = this.commitPath(record.jobId, record.partitionId);
    const jobDir = join(path, '..');
    try {
      if (!this.jobDirs.has(jobDir)) {
        await mkdir(jobDir, { recursive: true });
        this.jobDirs.add(jobDir);
      }
      await writeFile(path, JSON.stringify(record), { flag: 'wx' });
    } catch (cause) {
      if (isErrno(cause, 'EEXIST')) {
        throw new ShuffleError('SHF_ERR_COMMIT_CONFLICT', `partition ${record.partitionId} is already committed`, { context: { partitionId: record.partitionId } });
      }
      this.jobDirs.delete(jobDir);
      await unlink(path).catch(() => undefined);
      throw storageUnavailable('the server disk', `commit ${record.partitionId}`, cause);
    }
    this.committedKeys.set(this.partitionKey(record.jobId, record.partitionId), record.jobId);
    this.forgetUpload(upload);
    upload.state = 'gone';
    this.dropLease(record.jobId, record.partitionId);
    this.partitions++;
    this.remember(this.partitionKey(record.jobId, record.partitionId), record);
    for (const other of [...this.uploadsOf(record.jobId, record.partitionId)]) {
      if (other.state === 'complete') await this.dropUpload(other);
    }
  }

  /** Removes a partition: its commit record, its object and every upload of it. Returns the record it had. */
  async release(jobId: string, partitionId: string): Promise<CommittedPartition | undefined> {
    const record = await this.committed(jobId, partitionId);
    const pkey = this.partitionKey(jobId, partitionId);
    this.cache.delete(pkey);
    this.committedKeys.delete(pkey);
    if (record !== undefined) {
      try {
        await unlink(this.commitPath(jobId, partitionId));
        this.partitions--;
      } catch (cause) {
        if (!isErrno(cause, 'ENOENT')) throw storageUnavailable('the server disk', `release ${partitionId}`, cause);
      }
      await this.deleteObject(record.objectKey);
    }
    for (const upload of [...this.uploadsOf(jobId, partitionId)]) await this.dropUpload(upload);
    this.uploads.delete(pkey);
    this.leases.drop(pkey);
    return record;
  }

  /** The ids of the jobs with a committed partition here. */
  committedJobIds(): string[] {
    return [...new Set(this.committedKeys.values())];
  }

  /** The committed partitions of a job. */
  async listJob(jobId: string): Promise<CommittedPartition[]> {
    const dir = join(this.commitsDir, encodeKeySegment('jobId', jobId));
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (cause) {
      if (isErrno(cause, 'ENOENT')) return [];
      throw storageUnavailable('the server disk', `list job ${jobId}`, cause);
    }
    const out: CommittedPartition[] = [];
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      const record = await this.readRecord(join(dir, name));
      if (record !== undefined && record.jobId === jobId) out.push(record);
    }
    return out;
  }

  /** Partition ids of a job with uploads in memory (committed or not). */
  uploadedPartitionsOf(jobId: string): string[] {
    const out: string[] = [];
    for (const list of this.uploads.values()) {
      const first = list[0];
      if (first !== undefined && first.jobId === jobId) out.push(first.partitionId);
    }
    return out;
  }

  /** Removes the job's directory of commit records once it is empty. */
  async pruneJob(jobId: string): Promise<void> {
    const dir = join(this.commitsDir, encodeKeySegment('jobId', jobId));
    this.jobDirs.delete(dir);
    await rmdir(dir).catch(() => undefined);
  }

  /** Drops complete uploads nobody committed within `ttlMs`, and expired leases; returns how many uploads. */
  async sweep(nowMs: number, ttlMs: number): Promise<number> {
    this.leases.sweep(nowMs);
    let dropped = 0;
    for (const list of [...this.uploads.values()]) {
      for (const upload of [...list]) {
        if (upload.state === 'complete' && nowMs - upload.completedAtMs > ttlMs) {
          await this.dropUpload(upload);
          dropped++;
        }
      }
    }
    return dropped;
  }

  async openObject(key: string): Promise<BlobReader> {
    return this.objects.openReader(key);
  }

  /** Deletes an object, counting the disk it frees (`knownBytes`, or its size on disk). */
  async deleteObject(key: string, knownBytes?: number): Promise<void> {
    let size = knownBytes ?? 0;
    if (knownBytes === undefined) size = await stat(this.objectPath(key)).then((s) => s.size, () => 0);
    await this.objects.delete(key);
    this.diskUsedBytes -= size;
  }

  async close(): Promise<void> {
    for (const list of [...this.uploads.values()]) {
      for (const upload of [...list]) {
        // uploads in progress go; complete ones stay on disk for the next start-up to collect, but their S3 uploads go now
        if (upload.state === 'uploading') await this.dropUpload(upload);
        else await upload.tier?.abort();
      }
    }
    await Promise.allSettled([...this.drops]);
    await this.objects.close();
  }

  private forgetUpload(upload: Upload): void {
    const pkey = this.partitionKey(upload.jobId, upload.partitionId);
    const list = this.uploads.get(pkey);
    if (list === undefined) return;
    const i = list.indexOf(upload);
    if (i !== -1) list.splice(i, 1);
    if (list.length === 0) this.uploads.delete(pkey);
  }

  private remember(pkey: string, record: CommittedPartition): void {
    if (this.cache.size >= MAX_CACHED_COMMITS) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(pkey, record);
  }

  private async readRecord(path: string): Promise<CommittedPartition | undefined> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (cause) {
      if (isErrno(cause, 'ENOENT')) return undefined;
      throw storageUnavailable('the server disk', `read ${path}`, cause);
    }
    try {
      return validateCommittedPartition(JSON.parse(text));
    } catch (error) {
      this.logger.warn({ path, error: (error as Error).message }, 'ignoring an unreadable commit record');
      return undefined;
    }
  }

  private partitionKey(jobId: string, partitionId: string): string {
    return `${encodeKeySegment('jobId', jobId)}/${encodeKeySegment('partitionId', partitionId)}`;
  }

  private commitPath(jobId: string, partitionId: string): string {
    return join(this.commitsDir, encodeKeySegment('jobId', jobId), `${encodeKeySegment('partitionId', partitionId)}.json`);
  }

  /** LocalBlobStore keeps key `a/b/c` at `<root>/a/b/c`. */
  private objectPath(key: string): string {
    return join(this.dir, 'objects', ...key.split('/'));
  }
}
