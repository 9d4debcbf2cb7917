import type Database from 'better-sqlite3';
import type { CheckpointStore, CompletedCheckpoint } from '@weft/engine';
import { decodeCheckpoint } from './checkpoint-records.js';
import { fencedError } from './event-log-errors.js';
import type { StoreRetry } from './retry.js';

export const CHECKPOINT_SCHEMA = `
CREATE TABLE IF NOT EXISTS weft_checkpoint_ids (
  job_id TEXT PRIMARY KEY,
  last_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS weft_checkpoints (
  job_id TEXT NOT NULL,
  checkpoint_id INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  checkpoint TEXT NOT NULL,
  PRIMARY KEY (job_id, checkpoint_id)
) WITHOUT ROWID;
`;

type Fenced = { fenced: number };

/**
 * A job's completed checkpoints in the SQLite database of its event log, fenced by the job master's epoch
 * like its appends: each write checks, in the same BEGIN IMMEDIATE transaction, that the epoch is still the
 * job's newest (WEFT_ERR_FENCED otherwise; nothing written). Ids come from a per-job counter, so they keep
 * increasing across job masters.
 */
export class SqliteCheckpointStore implements CheckpointStore {
  readonly #next: Database.Transaction<() => number | Fenced>;
  readonly #add: Database.Transaction<(id: number, body: string) => Fenced | undefined>;
  readonly #remove: Database.Transaction<(id: number) => Fenced | undefined>;
  readonly #list: Database.Statement<[string], { checkpoint: string }>;

  constructor(
    db: Database.Database,
    private readonly jobId: string,
    private readonly epoch: number,
    private readonly retry: StoreRetry,
    private readonly description: string,
  ) {
    const newest = db.prepare<[string], { epoch: number }>('SELECT epoch FROM weft_job_leases WHERE job_id = ?');
    const fenced = (): Fenced | undefined => {
      const current = newest.get(jobId)?.epoch ?? 0;
      return current === epoch ? undefined : { fenced: current };
    };
    const last = db.prepare<[string], { last_id: number }>('SELECT last_id FROM weft_checkpoint_ids WHERE job_id = ?');
    const setLast = db.prepare('INSERT INTO weft_checkpoint_ids (job_id, last_id) VALUES (?, ?) ON CONFLICT (job_id) DO UPDATE SET last_id = excluded.last_id');
    const insert = db.prepare('INSERT OR REPLACE INTO weft_checkpoints (job_id, checkpoint_id, epoch, checkpoint) VALUES (?, ?, ?, ?)');
    const remove = db.prepare('DELETE FROM weft_checkpoints WHERE job_id = ? AND checkpoint_id = ?');
    this.#list = db.prepare('SELECT checkpoint FROM weft_checkpoints WHERE job_id = ? ORDER BY checkpoint_id');
    this.#next = db.transaction(() => {
      const refused = fenced();
      if (refused !== undefined) return refused;
      const id = (last.get(jobId)?.last_id ?? 0) + 1;
      setLast.run(jobId, id);
      return id;
    });
    this.#add = db.transaction((id: number, body: string) => fenced() ?? (insert.run(jobId, id, epoch, body), undefined));
    this.#remove = db.transaction((id: number) => fenced() ?? (remove.run(jobId, id), undefined));
  }

  async nextCheckpointId(): Promise<number> {
    const outcome = await this.retry('nextCheckpointId', this.jobId, () => this.#next.immediate());
    if (typeof outcome !== 'number') throw fencedError(this.jobId, this.epoch, outcome.fenced);
    return outcome;
  }

  async addCompleted(checkpoint: CompletedCheckpoint): Promise<void> {
    const refused = await this.retry('addCompleted', this.jobId, () => this.#add.immediate(checkpoint.checkpointId, JSON.stringify(checkpoint)));
    if (refused !== undefined) throw fencedError(this.jobId, this.epoch, refused.fenced);
  }

  async completed(): Promise<CompletedCheckpoint[]> {
    const rows = await this.retry('completed', this.jobId, () => this.#list.all(this.jobId));
    return rows.map((row) => decodeCheckpoint(row.checkpoint, this.jobId, this.description));
  }

  async remove(checkpointId: number): Promise<void> {
    const refused = await this.retry('removeCheckpoint', this.jobId, () => this.#remove.immediate(checkpointId));
    if (refused !== undefined) throw fencedError(this.jobId, this.epoch, refused.fenced);
  }
}
