import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteJobEventLog } from '@weft/job-store';
import { createTempDir, type TempDir } from '@weft/testkit';
import { describeJobEventLogContract } from './support/job-event-log-contract.js';

let dir: TempDir | undefined;
let path = '';
let raw: Database.Database | undefined;
let holder: Database.Database | undefined;

const lastSeq = (db: Database.Database, jobId: string): number =>
  (db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM weft_job_events WHERE job_id = ?').get(jobId) as { seq: number }).seq;

describeJobEventLogContract('SqliteJobEventLog', {
  async setUp() {
    dir = await createTempDir('weft-job-store-');
    path = join(dir.path, 'meta.db');
    new SqliteJobEventLog({ path }).close();
    raw = new Database(path);
  },
  async tearDown() {
    holder?.close();
    raw?.close();
    await dir?.remove();
  },
  url: () => `sqlite://${path}`,
  create: async (options) => new SqliteJobEventLog({ path }, { busyTimeoutMs: 20, ...options }),
  async appendTorn(jobId) {
    const db = raw as Database.Database;
    const seq = lastSeq(db, jobId) + 1;
    const whole = JSON.stringify({ v: 1, seq, epoch: 1, atMs: 1, type: 'task-finished', data: { executionVertexId: 'a#0' } });
    db.prepare('INSERT INTO weft_job_events (job_id, seq, epoch, event) VALUES (?, ?, 1, ?)').run(jobId, seq, whole.slice(0, whole.length >> 1));
  },
  async appendRaw(jobId, event) {
    (raw as Database.Database).prepare('INSERT INTO weft_job_events (job_id, seq, epoch, event) VALUES (?, ?, ?, ?)').run(jobId, event.seq, event.epoch, JSON.stringify(event));
  },
  async disrupt() {
    holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
  },
  async restore() {
    holder?.exec('COMMIT');
    holder?.close();
    holder = undefined;
  },
  async breakWrites() {
    // what SQLITE_FULL does to an insert, without filling a disk: the write fails, and stays failing
    (raw as Database.Database).exec(`CREATE TRIGGER weft_test_full BEFORE INSERT ON weft_job_events BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
  },
  async unbreakWrites() {
    (raw as Database.Database).exec('DROP TRIGGER IF EXISTS weft_test_full');
  },
});

describe('SqliteJobEventLog: a database another process keeps locked', () => {
  it("names the job's lease owner when open() gives up on a lock held past retryTimeoutMs (a job master stopped while writing)", async () => {
    await using tmp = await createTempDir('weft-job-store-locked-');
    const file = join(tmp.path, 'meta.db');
    {
      await using store = new SqliteJobEventLog({ path: file });
      const log = await store.open({ jobId: 'stopped', owner: 'somehost:4242' });
      await log.append({ type: 'job-submitted', data: {} });
    }
    // what a job master SIGSTOPped inside a write transaction leaves: the write lock, held
    const stopped = new Database(file);
    stopped.exec('BEGIN IMMEDIATE');
    try {
      await using store = new SqliteJobEventLog({ path: file }, { busyTimeoutMs: 20, retryTimeoutMs: 200 });
      await assert.rejects(store.open({ jobId: 'stopped', owner: 'resume:1' }), (error: unknown) => {
        assert.equal((error as { code?: unknown }).code, 'WEFT_ERR_EVENT_LOG');
        assert.match((error as Error).message, /somehost:4242/);
        assert.match((error as Error).message, /epoch 1/);
        assert.match((error as Error).message, /SIGCONT|stopped/);
        assert.equal((error as Error).message.match(/job event log/g)?.length, 1, (error as Error).message);
        return true;
      });
    } finally {
      stopped.exec('ROLLBACK');
      stopped.close();
    }
  });
});
