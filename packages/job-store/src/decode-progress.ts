import type { JobProgress, PublishedJobProgress } from '@weft/engine';

const COUNTERS = ['elapsedMs', 'tasksFinished', 'tasksTotal', 'tasksRunning', 'regionsFinished', 'regionsTotal', 'recordsRead', 'recordsShuffled', 'bytesShuffled', 'failures'] as const satisfies readonly (keyof JobProgress)[];

/**
 * A stored progress snapshot (JSON of a PublishedJobProgress), checked: undefined when it is not one (a
 * damaged or foreign value is no progress, never an error — progress is best effort). Counters a newer
 * weft added are dropped; a missing one reads 0.
 */
export function decodeProgress(jobId: string, text: string | null | undefined): PublishedJobProgress | undefined {
  if (text === null || text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { epoch, atMs, progress } = value as Record<string, unknown>;
  if (typeof epoch !== 'number' || typeof atMs !== 'number' || typeof progress !== 'object' || progress === null) return undefined;
  const counters = Object.fromEntries(COUNTERS.map((name) => {
    const n = (progress as Record<string, unknown>)[name];
    return [name, typeof n === 'number' && Number.isFinite(n) ? n : 0];
  })) as unknown as JobProgress;
  return { jobId, epoch, atMs, progress: counters };
}
