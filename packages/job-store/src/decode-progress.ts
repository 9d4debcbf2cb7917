import type { JobProgress, PublishedJobProgress } from '@weft/engine';

const COUNTERS = ['elapsedMs', 'tasksFinished', 'tasksTotal', 'tasksRunning', 'regionsFinished', 'regionsTotal', 'recordsRead', 'recordsShuffled', 'bytesShuffled', 'failures'] as const satisfies readonly (keyof JobProgress)[];

/**
 * A stored progress snapshot (JSON of a PublishedJobProgress), checked: undefined when it is not one (a
 * damaged or foreign value is no progress, never an error — progress is best effort). Counters a newer
 * weft added are dropped; a missing one reads 0; per-vertex counters (`vertices`) are kept when present.
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
  const vertices = (progress as { vertices?: unknown }).vertices;
  const count = (n: unknown): number => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
  const perVertex = Array.isArray(vertices)
    ? vertices.flatMap((v: unknown) => {
        const r = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
        return typeof r['id'] === 'string' ? [{ id: r['id'], recordsIn: count(r['recordsIn']), recordsOut: count(r['recordsOut']) }] : [];
      })
    : undefined;
  return { jobId, epoch, atMs, progress: perVertex === undefined ? counters : { ...counters, vertices: perVertex } };
}
