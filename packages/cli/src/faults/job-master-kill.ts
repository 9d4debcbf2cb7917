import type { JobEventInput, JobEventLog, JobLog, JobProgress, LoggedJobEvent } from '@weft/engine';

/** When the job master kills itself: once the log durably holds `at` events of type `type`. */
export interface JobMasterKillPoint {
  readonly type: string;
  readonly at: number;
}

/**
 * `eventLog`, with every log it opens watched for the kill point (`--inject-faults kill-job-master`):
 * the append that makes the job's count of `type` events reach `at` — counting the history earlier runs
 * wrote, so a run that resumes a job killed there is not killed again — calls `kill` once it is durable
 * and before the job master hears of it. `killPoint` is asked at each append (the harness resolves a
 * random `at` once it knows the job); undefined: no kill.
 */
export function killingEventLog(eventLog: JobEventLog, killPoint: () => JobMasterKillPoint | undefined, kill: () => void): JobEventLog {
  return {
    description: eventLog.description,
    open: async (request) => watched(await eventLog.open(request), killPoint, kill),
    listRuns: () => eventLog.listRuns(),
    readRun: (jobId) => eventLog.readRun(jobId),
    ...(eventLog.readRunRecord === undefined ? {} : { readRunRecord: (jobId: string) => eventLog.readRunRecord?.(jobId) ?? Promise.resolve(undefined) }),
    deleteRun: (jobId, options) => eventLog.deleteRun(jobId, options),
    ...(eventLog.readProgress === undefined ? {} : { readProgress: (jobId: string) => eventLog.readProgress?.(jobId) ?? Promise.resolve(undefined) }),
    // the completed checkpoints stay in the store (not in memory): a run resumed after the kill restores them
    ...(eventLog.checkpointStore === undefined ? {} : { checkpointStore: (jobId: string, epoch: number) => (eventLog.checkpointStore as NonNullable<JobEventLog['checkpointStore']>)(jobId, epoch) }),
    close: () => eventLog.close(),
    [Symbol.asyncDispose]: () => eventLog.close(),
  };
}

function watched(log: JobLog, killPoint: () => JobMasterKillPoint | undefined, kill: () => void): JobLog {
  const counts = new Map<string, number>();
  for (const event of log.history) counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
  return {
    jobId: log.jobId,
    epoch: log.epoch,
    history: log.history,
    async append(event: JobEventInput): Promise<LoggedJobEvent> {
      const stored = await log.append(event);
      const count = (counts.get(event.type) ?? 0) + 1;
      counts.set(event.type, count);
      const point = killPoint();
      if (point !== undefined && point.type === event.type && point.at === count) kill();
      return stored;
    },
    ...(log.publishProgress === undefined ? {} : { publishProgress: (progress: JobProgress) => log.publishProgress?.(progress) ?? Promise.resolve() }),
    close: () => log.close(),
    [Symbol.asyncDispose]: () => log.close(),
  };
}
