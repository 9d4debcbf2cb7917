import { type JobEventLog, type JobLog, type JobRunRecord, type LoggedJobEvent, type PublishedJobProgress, summarizeJobRun } from '@weft/engine';

/**
 * An in-memory JobEventLog for the UI's tests (the UI depends on no store): `events`, `leases` and
 * `progress` are edited by a test directly to stand for a job master's writes. `listRuns` sums up with the
 * engine's summarizeJobRun, as every real store does.
 */
export function testingEventLog(): JobEventLog & {
  readonly events: Map<string, LoggedJobEvent[]>;
  readonly renewed: Map<string, number>;
  readonly progress: Map<string, PublishedJobProgress>;
  append(jobId: string, type: string, data: unknown, atMs?: number): void;
} {
  const events = new Map<string, LoggedJobEvent[]>();
  const renewed = new Map<string, number>();
  const progress = new Map<string, PublishedJobProgress>();
  return {
    description: 'testing://memory',
    events,
    renewed,
    progress,
    append(jobId, type, data, atMs = Date.now()) {
      const list = events.get(jobId) ?? [];
      events.set(jobId, list);
      list.push({ v: 1, seq: list.length + 1, epoch: 1, atMs, type, data });
    },
    async open(): Promise<JobLog> {
      throw new Error('the UI never opens a log');
    },
    listRuns: async (): Promise<JobRunRecord[]> =>
      [...events].map(([jobId, list]) => summarizeJobRun({ jobId, epoch: 1, owner: 'test:1', takenAtMs: list[0]?.atMs ?? 0, renewedAtMs: renewed.get(jobId) }, list)),
    readRun: async (jobId) => {
      const list = events.get(jobId) ?? [];
      const newer = list.find((e) => e.v > 1);
      if (newer !== undefined) throw Object.assign(new Error(`the event log of job ${jobId} cannot be read: event ${newer.seq} has format version ${newer.v}`), { code: 'WEFT_ERR_EVENT_LOG' });
      return [...list];
    },
    readProgress: async (jobId) => progress.get(jobId),
    deleteRun: async (jobId) => void events.delete(jobId),
    close: async () => {},
    [Symbol.asyncDispose]: async () => {},
  };
}
