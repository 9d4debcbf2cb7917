import type { JobEventLog, JobLog, JobRunRecord, LoggedJobEvent } from '@weft/engine';

/**
 * An in-memory JobEventLog for engine tests (the engine may not depend on @weft/job-store): epochs grow
 * per open, appends are stored as JSON (a round trip, as a real store's), and `events` may be edited by a
 * test to stand for a run that died at some point. No fencing or durability beyond this process.
 */
export function testingJobEventLog(): JobEventLog & { readonly events: Map<string, LoggedJobEvent[]> } {
  const events = new Map<string, LoggedJobEvent[]>();
  const epochs = new Map<string, number>();
  return {
    description: 'testing://memory',
    events,
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
        close: async () => {},
        [Symbol.asyncDispose]: async () => {},
      };
    },
    listRuns: async (): Promise<JobRunRecord[]> => [],
    readRun: async (jobId) => [...(events.get(jobId) ?? [])],
    deleteRun: async (jobId) => void events.delete(jobId),
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  };
}
