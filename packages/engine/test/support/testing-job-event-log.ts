import type { JobEventLog, JobLog, JobRunRecord, LoggedJobEvent, PublishedJobProgress } from '@weft/engine';

/**
 * An in-memory JobEventLog for engine tests (the engine may not depend on @weft/job-store): epochs grow
 * per open, appends are stored as JSON (a round trip, as a real store's), and `events` may be edited by a
 * test to stand for a run that died at some point. No fencing or durability beyond this process.
 */
export function testingJobEventLog(): JobEventLog & { readonly events: Map<string, LoggedJobEvent[]>; readonly published: PublishedJobProgress[] } {
  const events = new Map<string, LoggedJobEvent[]>();
  /** Every progress snapshot published, in order (readProgress answers the last of a job). */
  const published: PublishedJobProgress[] = [];
  const epochs = new Map<string, number>();
  return {
    description: 'testing://memory',
    events,
    published,
    async open({ jobId }): Promise<JobLog> {
      const epoch = (epochs.get(jobId) ?? 0) + 1;
      epochs.set(jobId, epoch);
      const list = events.get(jobId) ?? [];
      events.set(jobId, list);
      return {
        jobId,
        epoch,
        history: [...list],
        async append(event) {
          const logged: LoggedJobEvent = { v: 1, seq: list.length + 1, epoch, atMs: Date.now(), type: event.type, data: JSON.parse(JSON.stringify(event.data)) };
          list.push(logged);
          return logged;
        },
        async publishProgress(progress) {
          published.push({ jobId, epoch, atMs: Date.now(), progress });
        },
        close: async () => {},
        [Symbol.asyncDispose]: async () => {},
      };
    },
    listRuns: async (): Promise<JobRunRecord[]> => [],
    readRun: async (jobId) => [...(events.get(jobId) ?? [])],
    readProgress: async (jobId) => published.filter((p) => p.jobId === jobId).at(-1),
    deleteRun: async (jobId) => void events.delete(jobId),
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  };
}
