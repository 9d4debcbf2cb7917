import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type Clock, type SerializedShuffleError, type ShuffleDescriptor, invalidConfig, systemClock } from '@weft/shuffle-api';
import type { SqliteMetaOptions } from '../config/store-options.js';
import { storageUnavailable, storeNotOpen } from '../storage/storage-errors.js';
import type {
  AttemptRecord,
  AttemptState,
  BeginAttemptRequest,
  CommitOutcome,
  CommitRecord,
  MetadataStore,
  PartitionLookup,
  PartitionRegistration,
  RegisterJobOutcome,
  RegisterOutcome,
  ReleaseOutcome,
} from './metadata-store.js';
import { descriptorEpoch, sameRegistration } from './metadata-store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS weft_jobs (
  job_id TEXT PRIMARY KEY,
  registered_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS weft_partitions (
  job_id TEXT NOT NULL,
  partition_id TEXT NOT NULL,
  persistent INTEGER NOT NULL,
  descriptor TEXT NOT NULL,
  registered_at INTEGER NOT NULL,
  PRIMARY KEY (job_id, partition_id)
);
CREATE TABLE IF NOT EXISTS weft_attempts (
  write_id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  partition_id TEXT NOT NULL,
  producer_id TEXT NOT NULL,
  object_key TEXT NOT NULL,
  state TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  upload_id TEXT,
  failure TEXT,
  closed INTEGER NOT NULL DEFAULT 0,
  collected INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS weft_attempts_by_partition ON weft_attempts (job_id, partition_id);
CREATE INDEX IF NOT EXISTS weft_attempts_by_state ON weft_attempts (state, collected);
CREATE TABLE IF NOT EXISTS weft_job_epochs (
  job_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS weft_commits (
  job_id TEXT NOT NULL,
  partition_id TEXT NOT NULL,
  write_id TEXT NOT NULL UNIQUE,
  record TEXT NOT NULL,
  committed_at INTEGER NOT NULL,
  PRIMARY KEY (job_id, partition_id)
);
`;

/** SQLite result codes worth retrying: another process holds the lock, or the disk hiccupped. */
const TRANSIENT_SQLITE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL)/;

interface AttemptRow {
  write_id: string;
  job_id: string;
  partition_id: string;
  producer_id: string;
  object_key: string;
  state: string;
  started_at: number;
  heartbeat_at: number;
  upload_id: string | null;
  failure: string | null;
  closed: number;
  collected: number;
}

function toAttempt(row: AttemptRow): AttemptRecord {
  return {
    writeId: row.write_id,
    jobId: row.job_id,
    partitionId: row.partition_id,
    producerId: row.producer_id,
    objectKey: row.object_key,
    state: row.state as AttemptState,
    startedAtMs: row.started_at,
    heartbeatAtMs: row.heartbeat_at,
    ...(row.upload_id === null ? {} : { uploadId: row.upload_id }),
    ...(row.failure === null ? {} : { failure: JSON.parse(row.failure) as SerializedShuffleError }),
    closed: row.closed === 1,
    collected: row.collected === 1,
  };
}

/**
 * Metadata in an SQLite file (better-sqlite3): survives restarts, and is safe for several processes on
 * one machine — WAL journal, a busy timeout so writers queue for the lock, every decision in one
 * `BEGIN IMMEDIATE` transaction, and a primary key on (job, partition) in the commit table so a second
 * commit can never land.
 */
export class SqliteMetadataStore implements MetadataStore {
  readonly description: string;
  private db: Database.Database | undefined;
  private closed = false;

  constructor(
    private readonly options: SqliteMetaOptions,
    private readonly clock: Clock = systemClock,
  ) {
    this.description = `sqlite://${options.path}`;
  }

  async start(): Promise<void> {
    if (this.db !== undefined) return;
    try {
      mkdirSync(dirname(this.options.path), { recursive: true });
      const db = new Database(this.options.path, { timeout: this.options.busyTimeoutMs ?? 10_000 });
      try {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        db.pragma('foreign_keys = OFF');
        db.exec(SCHEMA);
      } catch (error) {
        db.close();
        throw error;
      }
      this.db = db;
      this.closed = false;
    } catch (cause) {
      throw invalidConfig('meta', `cannot open the SQLite database ${this.options.path}: ${(cause as Error).message}`, cause);
    }
  }

  async close(): Promise<void> {
    const db = this.db;
    this.db = undefined;
    this.closed = true;
    db?.close();
  }

  async registerJob(jobId: string, epoch?: number): Promise<RegisterJobOutcome> {
    return this.transaction('registerJob', (db): RegisterJobOutcome => {
      if (epoch !== undefined) {
        const newest = this.newestEpoch(db, jobId);
        if (newest !== undefined && newest > epoch) return { status: 'fenced', newestEpoch: newest };
        this.raiseEpoch(db, jobId, epoch);
      }
      db.prepare('INSERT OR IGNORE INTO weft_jobs (job_id, registered_at) VALUES (?, ?)').run(jobId, this.clock.now());
      return { status: 'registered' };
    });
  }

  async registerPartition(r: PartitionRegistration): Promise<RegisterOutcome> {
    return this.transaction('registerPartition', (db): RegisterOutcome => {
      const now = this.clock.now();
      if (r.epoch !== undefined) {
        const newest = this.newestEpoch(db, r.jobId);
        if (newest !== undefined && newest > r.epoch) return { status: 'fenced', newestEpoch: newest };
        this.raiseEpoch(db, r.jobId, r.epoch);
      }
      const current = this.registeredDescriptor(db, r.jobId, r.partitionId);
      // another attempt (or epoch) replaces the registration: its commit goes, its attempts are released
      const released = current !== undefined && !sameRegistration(current, r.descriptor) ? this.releaseIn(db, r.jobId, r.partitionId) : [];
      db.prepare('INSERT OR IGNORE INTO weft_jobs (job_id, registered_at) VALUES (?, ?)').run(r.jobId, now);
      db.prepare(
        `INSERT INTO weft_partitions (job_id, partition_id, persistent, descriptor, registered_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (job_id, partition_id) DO UPDATE SET persistent = excluded.persistent, descriptor = excluded.descriptor`,
      ).run(r.jobId, r.partitionId, r.persistent ? 1 : 0, JSON.stringify(r.descriptor), now);
      return { status: 'registered', released: { attempts: released, nowMs: now } };
    });
  }

  async beginAttempt(a: BeginAttemptRequest): Promise<'ok' | 'not-registered'> {
    return this.transaction('beginAttempt', (db) => {
      const registered = db.prepare('SELECT 1 FROM weft_partitions WHERE job_id = ? AND partition_id = ?').get(a.jobId, a.partitionId);
      if (registered === undefined) return 'not-registered';
      const now = this.clock.now();
      db.prepare(
        `INSERT OR IGNORE INTO weft_attempts (write_id, job_id, partition_id, producer_id, object_key, state, started_at, heartbeat_at)
         VALUES (?, ?, ?, ?, ?, 'writing', ?, ?)`,
      ).run(a.writeId, a.jobId, a.partitionId, a.producerId, a.objectKey, now, now);
      return 'ok';
    });
  }

  async heartbeat(writeId: string, uploadId?: string): Promise<AttemptState | 'missing'> {
    return this.transaction('heartbeat', (db) => {
      const row = db.prepare('SELECT state FROM weft_attempts WHERE write_id = ?').get(writeId) as { state: AttemptState } | undefined;
      if (row === undefined) return 'missing';
      if (row.state !== 'committed') {
        db.prepare('UPDATE weft_attempts SET heartbeat_at = ?, upload_id = COALESCE(?, upload_id) WHERE write_id = ?').run(
          this.clock.now(),
          uploadId ?? null,
          writeId,
        );
      }
      return row.state;
    });
  }

  async failAttempt(writeId: string, failure: SerializedShuffleError): Promise<void> {
    this.run('failAttempt', (db) => {
      db.prepare("UPDATE weft_attempts SET state = 'failed', failure = ? WHERE write_id = ? AND state = 'writing'").run(JSON.stringify(failure), writeId);
    });
  }

  async closeAttempt(writeId: string): Promise<void> {
    this.run('closeAttempt', (db) => {
      db.prepare('UPDATE weft_attempts SET closed = 1 WHERE write_id = ?').run(writeId);
    });
  }

  async commit(c: CommitRecord): Promise<CommitOutcome> {
    return this.transaction('commit', (db): CommitOutcome => {
      const attempt = db.prepare('SELECT state FROM weft_attempts WHERE write_id = ?').get(c.writeId) as { state: AttemptState } | undefined;
      const conflicted = (): void => {
        db.prepare("UPDATE weft_attempts SET state = 'conflicted' WHERE write_id = ? AND state = 'writing'").run(c.writeId);
      };
      // a newer job master first: what it did since (released this partition, swept this attempt, committed
      // its own attempt) is its doing — the old run learns it was fenced
      const epoch = descriptorEpoch(c.descriptor);
      const newest = this.newestEpoch(db, c.jobId);
      if (epoch !== undefined && newest !== undefined && newest > epoch) {
        conflicted();
        return { status: 'epoch-fenced', epoch, newestEpoch: newest };
      }
      const existing = db.prepare('SELECT write_id FROM weft_commits WHERE job_id = ? AND partition_id = ?').get(c.jobId, c.partitionId) as
        | { write_id: string }
        | undefined;
      if (existing !== undefined) {
        if (existing.write_id === c.writeId) return { status: 'committed' };
        conflicted();
        return { status: 'conflict', winner: existing.write_id };
      }
      if (attempt === undefined) return { status: 'fenced', state: 'missing' };
      const registered = this.registeredDescriptor(db, c.jobId, c.partitionId);
      if (registered === undefined) {
        db.prepare("UPDATE weft_attempts SET state = 'released' WHERE write_id = ? AND state = 'writing'").run(c.writeId);
        return { status: 'not-registered' };
      }
      if (!sameRegistration(registered, c.descriptor)) {
        conflicted();
        return { status: 'superseded', current: registered.producer.producerId };
      }
      if (attempt.state !== 'writing') return { status: 'fenced', state: attempt.state };
      const now = this.clock.now();
      db.prepare('INSERT INTO weft_commits (job_id, partition_id, write_id, record, committed_at) VALUES (?, ?, ?, ?, ?)').run(
        c.jobId,
        c.partitionId,
        c.writeId,
        JSON.stringify({ ...c, committedAtMs: now }),
        now,
      );
      db.prepare("UPDATE weft_attempts SET state = 'committed', heartbeat_at = ? WHERE write_id = ?").run(now, c.writeId);
      return { status: 'committed' };
    });
  }

  async lookupPartition(jobId: string, partitionId: string): Promise<PartitionLookup> {
    return this.transaction('lookupPartition', (db) => {
      const registered = db.prepare('SELECT 1 FROM weft_partitions WHERE job_id = ? AND partition_id = ?').get(jobId, partitionId) !== undefined;
      const commit = db.prepare('SELECT record FROM weft_commits WHERE job_id = ? AND partition_id = ?').get(jobId, partitionId) as
        | { record: string }
        | undefined;
      const attempts = (db.prepare('SELECT * FROM weft_attempts WHERE job_id = ? AND partition_id = ?').all(jobId, partitionId) as AttemptRow[]).map(toAttempt);
      return {
        registered,
        commit: commit === undefined ? undefined : (JSON.parse(commit.record) as CommitRecord),
        attempts,
        nowMs: this.clock.now(),
      };
    }, false);
  }

  async listCommitted(jobId: string): Promise<CommitRecord[]> {
    return this.run('listCommitted', (db) =>
      (db.prepare('SELECT record FROM weft_commits WHERE job_id = ?').all(jobId) as { record: string }[]).map((row) => JSON.parse(row.record) as CommitRecord),
    );
  }

  async releasePartition(jobId: string, partitionId: string, epoch?: number): Promise<ReleaseOutcome> {
    return this.transaction('releasePartition', (db): ReleaseOutcome => {
      const newest = this.newestEpoch(db, jobId);
      if (epoch !== undefined && newest !== undefined && newest > epoch) return { status: 'fenced', newestEpoch: newest };
      return { status: 'released', attempts: this.releaseIn(db, jobId, partitionId), nowMs: this.clock.now() };
    });
  }

  async releaseJob(jobId: string, keepPersistent: boolean, epoch?: number): Promise<ReleaseOutcome> {
    return this.transaction('releaseJob', (db): ReleaseOutcome => {
      const newest = this.newestEpoch(db, jobId);
      if (epoch !== undefined && newest !== undefined && newest > epoch) return { status: 'fenced', newestEpoch: newest };
      const partitions = db
        .prepare(`SELECT partition_id FROM weft_partitions WHERE job_id = ?${keepPersistent ? ' AND persistent = 0' : ''}`)
        .all(jobId) as { partition_id: string }[];
      // attempts of partitions that were never registered here (or were released before: a writer killed
      // mid-write keeps its lease, so its object outlived that release) go too — not a kept persistent one's
      const orphans = db
        .prepare(
          `SELECT DISTINCT partition_id FROM weft_attempts WHERE job_id = ?${keepPersistent ? ' AND partition_id NOT IN (SELECT partition_id FROM weft_partitions WHERE job_id = ? AND persistent = 1)' : ''}`,
        )
        .all(...(keepPersistent ? [jobId, jobId] : [jobId])) as { partition_id: string }[];
      const ids = new Set([...partitions, ...orphans].map((row) => row.partition_id));
      const released = [...ids].flatMap((partitionId) => this.releaseIn(db, jobId, partitionId));
      const remaining = db.prepare('SELECT 1 FROM weft_partitions WHERE job_id = ? LIMIT 1').get(jobId);
      if (remaining === undefined) db.prepare('DELETE FROM weft_jobs WHERE job_id = ?').run(jobId);
      return { status: 'released', attempts: released, nowMs: this.clock.now() };
    });
  }

  async collectGarbage(leaseMs: number, limit: number): Promise<AttemptRecord[]> {
    return this.transaction('collectGarbage', (db) => {
      const cutoff = this.clock.now() - leaseMs;
      db.prepare("UPDATE weft_attempts SET state = 'abandoned' WHERE state = 'writing' AND heartbeat_at < ?").run(cutoff);
      const rows = db
        .prepare(
          `SELECT * FROM weft_attempts WHERE state NOT IN ('writing', 'committed') AND collected = 0
           AND (closed = 1 OR heartbeat_at < ?) LIMIT ?`,
        )
        .all(cutoff, limit) as AttemptRow[];
      return rows.map(toAttempt);
    });
  }

  async forgetAttempt(writeId: string): Promise<void> {
    this.transaction('forgetAttempt', (db) => {
      // failed and abandoned attempts stay (collected) so consumers still learn why the producer is gone
      db.prepare("UPDATE weft_attempts SET collected = 1 WHERE write_id = ? AND state IN ('failed', 'abandoned')").run(writeId);
      db.prepare("DELETE FROM weft_attempts WHERE write_id = ? AND state IN ('conflicted', 'released')").run(writeId);
    });
  }

  /** Raises the job's newest epoch to `epoch` (never lowers it). */
  private raiseEpoch(db: Database.Database, jobId: string, epoch: number): void {
    db.prepare('INSERT INTO weft_job_epochs (job_id, epoch) VALUES (?, ?) ON CONFLICT (job_id) DO UPDATE SET epoch = MAX(epoch, excluded.epoch)').run(jobId, epoch);
  }

  private newestEpoch(db: Database.Database, jobId: string): number | undefined {
    return (db.prepare('SELECT epoch FROM weft_job_epochs WHERE job_id = ?').get(jobId) as { epoch: number } | undefined)?.epoch;
  }

  private registeredDescriptor(db: Database.Database, jobId: string, partitionId: string): ShuffleDescriptor | undefined {
    const row = db.prepare('SELECT descriptor FROM weft_partitions WHERE job_id = ? AND partition_id = ?').get(jobId, partitionId) as { descriptor: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.descriptor) as ShuffleDescriptor);
  }

  /** Unregisters one partition inside a transaction; returns its attempts, now `released`. */
  private releaseIn(db: Database.Database, jobId: string, partitionId: string): AttemptRecord[] {
    db.prepare('DELETE FROM weft_partitions WHERE job_id = ? AND partition_id = ?').run(jobId, partitionId);
    db.prepare('DELETE FROM weft_commits WHERE job_id = ? AND partition_id = ?').run(jobId, partitionId);
    // attempts whose object is already gone have nothing left to collect
    db.prepare('DELETE FROM weft_attempts WHERE job_id = ? AND partition_id = ? AND collected = 1').run(jobId, partitionId);
    db.prepare("UPDATE weft_attempts SET state = 'released' WHERE job_id = ? AND partition_id = ?").run(jobId, partitionId);
    return (db.prepare('SELECT * FROM weft_attempts WHERE job_id = ? AND partition_id = ?').all(jobId, partitionId) as AttemptRow[]).map(toAttempt);
  }

  private database(): Database.Database {
    if (this.db === undefined) throw storeNotOpen(`metadata store ${this.description}`, this.closed);
    return this.db;
  }

  private run<T>(operation: string, body: (db: Database.Database) => T): T {
    const db = this.database();
    try {
      return body(db);
    } catch (cause) {
      const code = String((cause as { code?: unknown }).code ?? '');
      throw storageUnavailable(this.description, operation, cause, TRANSIENT_SQLITE.test(code));
    }
  }

  private transaction<T>(operation: string, body: (db: Database.Database) => T, write = true): T {
    return this.run(operation, (db) => {
      const tx = db.transaction(() => body(db));
      return write ? tx.immediate() : tx.deferred();
    });
  }
}

