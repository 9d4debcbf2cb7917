import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type CheckpointStore, type DeleteJobRunOptions, EngineError, type JobEventLog, type JobLog, type JobRunRecord, type LoggedJobEvent, type OpenJobLogRequest, type PublishedJobProgress, summarizeJobRun, summarizeUnreadableJobRun } from '@weft/engine';
import { closedError, invalidConfig } from '@weft/shuffle-api';
import { decodeProgress } from './decode-progress.js';
import { decodeHistory, type DecodedHistory, type StoredEntry } from './decode-history.js';
import { epochMovedError, eventLogError, fencedError } from './event-log-errors.js';
import { type FencedJobLog, openedJobLog } from './fenced-job-log.js';
import { type JobEventLogOptions, type ResolvedJobEventLogOptions, resolveJobEventLogOptions } from './job-event-log-options.js';
import { type StoreRetry, storeRetry } from './retry.js';
import { CHECKPOINT_SCHEMA, SqliteCheckpointStore } from './sqlite-checkpoint-store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS weft_job_events (
  job_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  event TEXT NOT NULL,
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS weft_job_leases (
  job_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL,
  owner TEXT NOT NULL,
  taken_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS weft_job_lease_renewals (
  job_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL,
  renewed_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS weft_job_progress (
  job_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL,
  snapshot TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS weft_job_epoch_floors (
  job_id TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL
);
`;

/** SQLite result codes worth retrying: another connection holds the lock, or the disk hiccupped. */
const TRANSIENT_SQLITE = /^SQLITE_(BUSY|LOCKED|IOERR|PROTOCOL)/;

function isTransientSqlite(error: unknown): boolean {
  return TRANSIENT_SQLITE.test(String((error as { code?: unknown } | null)?.code ?? ''));
}

type AppendOutcome = { status: 'stored' } | { status: 'fenced'; newest: number } | { status: 'taken'; by: number };

interface LeaseRow {
  job_id: string;
  epoch: number;
  owner: string;
  taken_at: number;
  renewed_at: number | null;
}

/**
 * The job event log in an SQLite file (better-sqlite3), the embedded default: the same file as `--meta`
 * (its own tables). WAL journal with `synchronous = FULL`, so a committed append is on disk (fsync) before
 * `append()` resolves; several processes on one machine may share the file. `open()` bumps the epoch in a
 * `BEGIN IMMEDIATE` transaction that also reads the history; `append()` checks in its own `BEGIN
 * IMMEDIATE` transaction that its epoch is still the newest. A statement that meets another process's lock
 * waits `busyTimeoutMs`, then is retried with backoff until `retryTimeoutMs`.
 */
export class SqliteJobEventLog implements JobEventLog {
  readonly description: string;
  readonly #options: ResolvedJobEventLogOptions;
  readonly #db: Database.Database;
  readonly #logs = new Set<FencedJobLog>();
  #closing = false;
  #closed: Promise<void> | undefined;
  readonly #retry: StoreRetry;
  /** One append: the epoch check and the insert in one BEGIN IMMEDIATE transaction (`.immediate(...)`). */
  readonly #append: Database.Transaction<(jobId: string, event: LoggedJobEvent, body: string) => AppendOutcome>;

  /** Opens (creating when missing) the database at `path`; SHF_ERR_INVALID_CONFIG naming `setting` when it cannot. */
  constructor(request: { readonly path: string; readonly setting?: string }, options: JobEventLogOptions = {}) {
    this.#options = resolveJobEventLogOptions(options);
    this.description = `sqlite://${request.path}`;
    this.#retry = storeRetry({ description: this.description, options: this.#options, isTransient: isTransientSqlite, checkOpen: () => this.#checkOpen() });
    try {
      mkdirSync(dirname(request.path), { recursive: true });
      const db = new Database(request.path, { timeout: this.#options.busyTimeoutMs });
      try {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        db.exec(SCHEMA);
        db.exec(CHECKPOINT_SCHEMA);
      } catch (error) {
        db.close();
        throw error;
      }
      this.#db = db;
    } catch (cause) {
      throw invalidConfig(request.setting ?? 'meta', `cannot open the SQLite database ${request.path}: ${(cause as Error).message}`, cause);
    }
    const lease = this.#db.prepare<[string], { epoch: number }>('SELECT epoch FROM weft_job_leases WHERE job_id = ?');
    const existing = this.#db.prepare<[string, number], { epoch: number }>('SELECT epoch FROM weft_job_events WHERE job_id = ? AND seq = ?');
    const insert = this.#db.prepare('INSERT INTO weft_job_events (job_id, seq, epoch, event) VALUES (?, ?, ?, ?)');
    this.#append = this.#db.transaction((jobId: string, event: LoggedJobEvent, body: string): AppendOutcome => {
      const newest = lease.get(jobId)?.epoch ?? 0;
      if (newest !== event.epoch) return { status: 'fenced', newest };
      const taken = existing.get(jobId, event.seq);
      // the same epoch's event at this seq: an earlier try of this append went through
      if (taken !== undefined) return taken.epoch === event.epoch ? { status: 'stored' } : { status: 'taken', by: taken.epoch };
      insert.run(jobId, event.seq, event.epoch, body);
      return { status: 'stored' };
    });
  }

  /** The completed checkpoints of `jobId` in this database, written by the job master of `epoch` (fenced like its appends). */
  checkpointStore(jobId: string, epoch: number): CheckpointStore {
    return new SqliteCheckpointStore(this.#db, jobId, epoch, this.#retry, this.description);
  }

  async open(request: OpenJobLogRequest): Promise<JobLog> {
    const { jobId, owner, ifEpoch } = request;
    const opened = await this.#whileLocked(jobId, () => this.#retry('open', jobId, () =>
      this.#db
        .transaction(() => {
          const lease = this.#db.prepare('SELECT epoch FROM weft_job_leases WHERE job_id = ?').get(jobId) as { epoch: number } | undefined;
          if (ifEpoch !== undefined && (lease?.epoch ?? 0) !== ifEpoch) return { moved: lease?.epoch ?? 0, epoch: undefined };
          const floor = this.#db.prepare('SELECT epoch FROM weft_job_epoch_floors WHERE job_id = ?').get(jobId) as { epoch: number } | undefined;
          const epoch = Math.max(lease?.epoch ?? 0, floor?.epoch ?? 0) + 1;
          const decoded = this.#decode(jobId);
          if (decoded.tornTail !== undefined) this.#db.prepare('DELETE FROM weft_job_events WHERE job_id = ? AND seq = ?').run(jobId, Number(decoded.tornTail));
          this.#db
            .prepare(
              `INSERT INTO weft_job_leases (job_id, epoch, owner, taken_at) VALUES (?, ?, ?, ?)
               ON CONFLICT (job_id) DO UPDATE SET epoch = excluded.epoch, owner = excluded.owner, taken_at = excluded.taken_at`,
            )
            .run(jobId, epoch, owner, this.#options.clock());
          return { epoch, history: decoded.events };
        })
        .immediate(),
    ));
    if (opened.epoch === undefined) throw epochMovedError(jobId, 'open', ifEpoch ?? 0, opened.moved);
    const { epoch, history } = opened;
    return openedJobLog({
      jobId,
      epoch,
      owner,
      history,
      clock: this.#options.clock,
      logger: this.#options.logger,
      writer: {
        write: (event, checkOpen) => this.#write(jobId, event, checkOpen),
        renew: async (epoch, atMs) => this.#renew(jobId, epoch, atMs),
        publish: async (snapshot) => this.#publish(snapshot),
      },
      checkStoreOpen: () => this.#checkOpen(),
      openLogs: this.#logs,
    });
  }

  async readRun(jobId: string): Promise<readonly LoggedJobEvent[]> {
    return this.#retry('readRun', jobId, () => this.#decode(jobId).events);
  }

  async readProgress(jobId: string): Promise<PublishedJobProgress | undefined> {
    this.#checkOpen();
    const row = await this.#retry('readProgress', jobId, () => this.#db.prepare<[string], { snapshot: string }>('SELECT snapshot FROM weft_job_progress WHERE job_id = ?').get(jobId));
    return decodeProgress(jobId, row?.snapshot);
  }

  async listRuns(): Promise<JobRunRecord[]> {
    return this.#runs(undefined);
  }

  async readRunRecord(jobId: string): Promise<JobRunRecord | undefined> {
    return (await this.#runs(jobId))[0];
  }

  /** Every run's record (`only` undefined), or the one of `only`. */
  async #runs(only: string | undefined): Promise<JobRunRecord[]> {
    const rows = await this.#retry('listRuns', only, () => {
      const leases = `SELECT l.job_id, l.epoch, l.owner, l.taken_at, r.renewed_at FROM weft_job_leases l
             LEFT JOIN weft_job_lease_renewals r ON r.job_id = l.job_id AND r.epoch = l.epoch`;
      const orphans = 'SELECT DISTINCT job_id, 0, NULL, 0, NULL FROM weft_job_events WHERE job_id NOT IN (SELECT job_id FROM weft_job_leases)';
      if (only === undefined) return this.#db.prepare(`${leases} UNION ALL ${orphans}`).all() as LeaseRow[];
      return this.#db.prepare(`${leases} WHERE l.job_id = ? UNION ALL ${orphans} AND job_id = ?`).all(only, only) as LeaseRow[];
    });
    const runs: JobRunRecord[] = [];
    for (const row of rows) {
      const lease = { jobId: row.job_id, epoch: row.epoch, owner: row.owner ?? undefined, takenAtMs: row.taken_at, renewedAtMs: row.renewed_at ?? undefined };
      try {
        runs.push(summarizeJobRun(lease, await this.readRun(row.job_id)));
      } catch (error) {
        runs.push(summarizeUnreadableJobRun(lease, error));
      }
    }
    return runs.sort((a, b) => a.firstAtMs - b.firstAtMs || a.jobId.localeCompare(b.jobId));
  }

  /** One try: records the renewal while `epoch` still holds the lease; false once a newer epoch does. */
  #renew(jobId: string, epoch: number, atMs: number): boolean {
    this.#checkOpen();
    return this.#db
      .transaction(() => {
        const lease = this.#db.prepare<[string], { epoch: number }>('SELECT epoch FROM weft_job_leases WHERE job_id = ?').get(jobId);
        if (lease?.epoch !== epoch) return false;
        this.#db
          .prepare('INSERT INTO weft_job_lease_renewals (job_id, epoch, renewed_at) VALUES (?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET epoch = excluded.epoch, renewed_at = excluded.renewed_at')
          .run(jobId, epoch, atMs);
        return true;
      })
      .immediate();
  }

  /** One try: overwrites the job's progress while its epoch still holds the lease; false once a newer epoch does. */
  #publish(snapshot: PublishedJobProgress): boolean {
    this.#checkOpen();
    const { jobId, epoch } = snapshot;
    return this.#db
      .transaction(() => {
        const lease = this.#db.prepare<[string], { epoch: number }>('SELECT epoch FROM weft_job_leases WHERE job_id = ?').get(jobId);
        if (lease?.epoch !== epoch) return false;
        this.#db
          .prepare('INSERT INTO weft_job_progress (job_id, epoch, snapshot) VALUES (?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET epoch = excluded.epoch, snapshot = excluded.snapshot')
          .run(jobId, epoch, JSON.stringify(snapshot));
        return true;
      })
      .immediate();
  }

  async deleteRun(jobId: string, options: DeleteJobRunOptions = {}): Promise<void> {
    const { ifEpoch } = options;
    const moved = await this.#retry('deleteRun', jobId, () =>
      this.#db
        .transaction((): number | undefined => {
          if (ifEpoch !== undefined) {
            const lease = this.#db.prepare<[string], { epoch: number }>('SELECT epoch FROM weft_job_leases WHERE job_id = ?').get(jobId);
            if ((lease?.epoch ?? 0) !== ifEpoch) return lease?.epoch ?? 0;
          }
          // the epoch outlives the run: a later run of the id must still fence every earlier one (the
          // shuffle remembers the epochs it saw), so it starts above the newest
          this.#db
            .prepare(
              `INSERT INTO weft_job_epoch_floors (job_id, epoch) SELECT job_id, epoch FROM weft_job_leases WHERE job_id = ?
               ON CONFLICT (job_id) DO UPDATE SET epoch = MAX(epoch, excluded.epoch)`,
            )
            .run(jobId);
          this.#db.prepare('DELETE FROM weft_job_events WHERE job_id = ?').run(jobId);
          this.#db.prepare('DELETE FROM weft_job_leases WHERE job_id = ?').run(jobId);
          this.#db.prepare('DELETE FROM weft_job_lease_renewals WHERE job_id = ?').run(jobId);
          this.#db.prepare('DELETE FROM weft_job_progress WHERE job_id = ?').run(jobId);
          return undefined;
        })
        .immediate(),
    );
    if (moved !== undefined) throw epochMovedError(jobId, 'deleteRun', ifEpoch ?? 0, moved);
  }

  /** Closes every JobLog it opened (their pending appends stop retrying), then the database. Memoized. */
  close(): Promise<void> {
    this.#closing = true;
    return (this.#closed ??= (async () => {
      await Promise.allSettled([...this.#logs].map((log) => log.close()));
      this.#db.close();
    })());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #write(jobId: string, event: LoggedJobEvent, checkOpen: () => void): Promise<void> {
    const body = JSON.stringify(event);
    const outcome = await this.#retry('append', jobId, () => this.#append.immediate(jobId, event, body), checkOpen);
    if (outcome.status === 'fenced') throw fencedError(jobId, event.epoch, outcome.newest);
    if (outcome.status === 'taken') throw eventLogError({ jobId, description: this.description, problem: `seq ${event.seq} is already taken by epoch ${outcome.by}` });
  }

  #decode(jobId: string): DecodedHistory {
    const rows = this.#db.prepare('SELECT seq, event FROM weft_job_events WHERE job_id = ? ORDER BY seq').all(jobId) as { seq: number; event: string }[];
    const entries: StoredEntry[] = rows.map((row) => {
      const at = String(row.seq);
      let value: unknown;
      try {
        value = JSON.parse(row.event);
      } catch (error) {
        return { ok: false, problem: `not JSON (${(error as Error).message})`, at };
      }
      if ((value as { seq?: unknown } | null)?.seq !== row.seq) return { ok: false, problem: 'its seq differs from its row', at };
      return { ok: true, value, at };
    });
    return decodeHistory({ jobId, description: this.description, entries, logger: this.#options.logger });
  }

  /**
   * Runs `operation`; when it gives up on a lock another process kept (SQLITE_BUSY past the retries), the
   * WEFT_ERR_EVENT_LOG it rejects with also names the job's lease owner and epoch (a read needs no lock in
   * WAL mode): a job master stopped (SIGSTOP) inside a write keeps the whole database locked until it is
   * continued or killed, and nothing another process can do takes the lock from it.
   */
  async #whileLocked<T>(jobId: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
      if ((error as { code?: unknown } | null)?.code !== 'WEFT_ERR_EVENT_LOG' || !/^SQLITE_(BUSY|LOCKED)/.test(String(cause?.code ?? ''))) throw error;
      let holder = '';
      try {
        const lease = this.#db.prepare('SELECT epoch, owner FROM weft_job_leases WHERE job_id = ?').get(jobId) as { epoch: number; owner: string } | undefined;
        if (lease !== undefined) holder = `; the job's lease is held by ${lease.owner} (epoch ${lease.epoch})`;
      } catch {
        // the lease cannot be read either: the message stays as it was
      }
      const hint = `another process keeps the database locked${holder}; a job master stopped (SIGSTOP) while writing holds the lock until it is continued (SIGCONT) or killed`;
      throw new EngineError('WEFT_ERR_EVENT_LOG', `${(error as Error).message} — ${hint}`, { context: { jobId }, cause });
    }
  }

  #checkOpen(): void {
    if (this.#closing) throw closedError(`job event log ${this.description}`);
  }
}
