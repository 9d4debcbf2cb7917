import { hostname } from 'node:os';
import { type JobEventLog, type JobLog, type JobRunRecord } from '@weft/engine';

/** How the owner of a lease `weft gc` took starts (`weft gc host:pid`). */
const GC_OWNER_PREFIX = 'weft gc ';

/** Whether a lease's owner is a `weft gc` (its renewals are no activity of the run). */
export function isGcOwner(owner: string | undefined): boolean {
  return owner?.startsWith(GC_OWNER_PREFIX) === true;
}

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
  const owner = `${GC_OWNER_PREFIX}${hostname()}:${process.pid}`;
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
