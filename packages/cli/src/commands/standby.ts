import type { JobEventLog, JobRunRecord } from '@weft/engine';
import { type CliIo, ExitCode } from '../command.js';

/** How long a job's lease may go unrenewed before a standby takes the job over (`--standby-takeover-ms`). */
export const DEFAULT_STANDBY_TAKEOVER_MS = 5_000;
/** How often a standby reads the job's lease. */
const POLL_MS = 500;

export type StandbyOutcome =
  /** The job's master stopped renewing its lease: this process takes the job over (resumes it). */
  | { readonly kind: 'take-over'; readonly run: JobRunRecord }
  /** The job ended (succeeded, failed or was cancelled) while this process waited: nothing to take over. */
  | { readonly kind: 'ended'; readonly run: JobRunRecord };

/**
 * `weft run … --job-id ID --standby`: waits while another job master holds ID's lease — renewed every
 * second by its open job log (JobRunRecord.leaseRenewedAtMs) — and returns once the lease went
 * unrenewed for `takeoverMs` (its master is dead or cut off: the caller resumes the job, whose new
 * epoch fences the old master) or the run ended. A run not started yet is waited for: a standby never
 * starts a job. Renewals carry the holder's clock, so hosts' clocks must agree within `takeoverMs`.
 */
export async function waitAsStandby(request: { eventLog: JobEventLog; jobId: string; takeoverMs: number; io: CliIo; clock?: () => number }): Promise<StandbyOutcome> {
  const { eventLog, jobId, takeoverMs, io } = request;
  const clock = request.clock ?? Date.now;
  let said = '';
  const say = (line: string): void => {
    if (line === said) return;
    said = line;
    io.stderr.write(`weft run: standby for job ${jobId}: ${line}\n`);
  };
  for (;;) {
    const run = (await eventLog.listRuns()).find((r) => r.jobId === jobId);
    if (run === undefined) {
      say('waiting for the job to start (a standby never starts one)');
    } else if (run.status !== 'unfinished') {
      return { kind: 'ended', run };
    } else {
      const silentMs = clock() - (run.leaseRenewedAtMs ?? 0);
      if (silentMs > takeoverMs) {
        say(`its job master ${run.owner ?? '(unknown)'} (epoch ${run.epoch}) has not renewed the job's lease for ${silentMs} ms; taking the job over`);
        return { kind: 'take-over', run };
      }
      say(`waiting while ${run.owner ?? 'another job master'} (epoch ${run.epoch}) holds the job's lease`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * The standby part of `weft run --standby`: waits on the job's lease in a log of its own (closed after);
 * resolves undefined when this process is to take the job over, else the exit code of the run that ended
 * meanwhile (0 when it succeeded), having said so on stderr.
 */
export async function standBy(request: { openEventLog: () => Promise<JobEventLog>; jobId: string; takeoverMs: number; io: CliIo }): Promise<number | undefined> {
  const eventLog = await request.openEventLog();
  let outcome: StandbyOutcome;
  try {
    outcome = await waitAsStandby({ eventLog, jobId: request.jobId, takeoverMs: request.takeoverMs, io: request.io });
  } finally {
    await eventLog.close().catch(() => {});
  }
  if (outcome.kind === 'take-over') return undefined;
  request.io.stderr.write(`weft run: standby for job ${request.jobId}: the job ${outcome.run.status} (epoch ${outcome.run.epoch}) while this standby waited; nothing to take over\n`);
  return outcome.run.status === 'succeeded' ? ExitCode.OK : ExitCode.FAILED;
}
