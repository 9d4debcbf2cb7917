import { hostname } from 'node:os';
import { isEngineError, type JobEventLog, type JobLog, type JobRunRecord } from '@weft/engine';

/** The leases `weft gc` holds on the dead runs it collects, by job id; `close()` releases them all. */
export interface DeadRunLeases {
  readonly byJobId: ReadonlyMap<string, JobLog>;
  close(): Promise<void>;
}

/**
 * Takes the lease of every dead run gc is about to collect, each only while the run's newest epoch is
 * still the one gc read (`open({ ifEpoch })`): a run of the job id that opened it since is neither fenced
 * nor touched (reported through `onSkipped`, as is a store failure). Once gc holds a lease, a run that
 * opens the id later fences gc's checkpoint records and its `deleteRun`, so its log and checkpoints stay.
 */
export async function leaseDeadRuns(log: JobEventLog, dead: readonly JobRunRecord[], onSkipped: (jobId: string, error: Error) => void): Promise<DeadRunLeases> {
  const byJobId = new Map<string, JobLog>();
  const owner = `weft gc ${hostname()}:${process.pid}`;
  for (const run of dead) {
    try {
      byJobId.set(run.jobId, await log.open({ jobId: run.jobId, owner, ifEpoch: run.epoch }));
    } catch (error) {
      onSkipped(run.jobId, error as Error);
    }
  }
  return {
    byJobId,
    close: async () => void (await Promise.allSettled([...byJobId.values()].map((lease) => lease.close()))),
  };
}

/**
 * Deletes a dead run from the log under gc's lease (`ifEpoch`, undefined: none taken); false — the log
 * kept, a line on `stderr` — when a run opened the job id while gc removed it (the partitions gc had
 * already unregistered are gone for that run, as after a lost shuffle store).
 */
export async function deleteDeadRun(log: JobEventLog, jobId: string, epoch: number | undefined, stderr: { write(text: string): unknown }): Promise<boolean> {
  try {
    await log.deleteRun(jobId, { ifEpoch: epoch });
    return true;
  } catch (error) {
    if (!isEngineError(error, 'WEFT_ERR_FENCED')) throw error;
    stderr.write(`weft gc: kept the log of ${jobId}: ${error.message}\n`);
    return false;
  }
}
