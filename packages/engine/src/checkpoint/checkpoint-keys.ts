/**
 * Where a job's checkpoint snapshots lie in its CheckpointStorage:
 * `checkpoints/<job>/chk-<id>/<task>/<operator>.<keyed|operator>`, each segment escaped by `keySegment`.
 * One place, so the writer (JobCheckpointing), the end-of-job discard and `weft gc` agree.
 */

/** One storage key segment: characters outside `[A-Za-z0-9_.-]` as `%XX` of their UTF-8 bytes (object stores refuse `#`). */
export function keySegment(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/gu, (ch) => [...Buffer.from(ch, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
}

/** `checkpoints/<job>/`: the prefix of every snapshot of the job id. */
export function jobCheckpointsPrefix(jobId: string): string {
  return `checkpoints/${keySegment(jobId)}/`;
}

/** `checkpoints/<job>/chk-<id>/`: the prefix of every snapshot of one checkpoint. */
export function checkpointPrefix(jobId: string, checkpointId: number): string {
  return `${jobCheckpointsPrefix(jobId)}chk-${checkpointId}/`;
}

/** `checkpoints/<job>/probe-<id>`: the object a run writes and removes at its start (probeCheckpointStorage). */
export function probeKey(jobId: string, id: string): string {
  return `${jobCheckpointsPrefix(jobId)}probe-${id}`;
}

/** The checkpoint id a key under `checkpoints/<job>/` belongs to; undefined for a key of another shape. */
export function checkpointIdOfKey(jobId: string, key: string): number | undefined {
  const prefix = jobCheckpointsPrefix(jobId);
  if (!key.startsWith(prefix)) return undefined;
  const match = /^chk-([1-9]\d*)\//.exec(key.slice(prefix.length));
  if (match === null) return undefined;
  const id = Number(match[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}

/**
 * The keys (of a listing under `checkpoints/<job>/`) of checkpoints that never completed and lie below
 * `below`: each names a checkpoint id under `below` that `completed` does not hold — and every probe a run's
 * start left (it removes its own at once: one found was left by a run killed then, or by a store that
 * refused the removal). Keys of another shape are never named.
 */
export function orphanedCheckpointKeys(jobId: string, keys: readonly string[], below: number, completed: ReadonlySet<number>): string[] {
  const probes = probeKey(jobId, '');
  return keys.filter((key) => {
    if (key.startsWith(probes) && !key.slice(probes.length).includes('/')) return true;
    const id = checkpointIdOfKey(jobId, key);
    return id !== undefined && id < below && !completed.has(id);
  });
}

/** The job ids (decoded) that have keys under `checkpoints/`, from a listing of that prefix. */
export function checkpointJobIdsOf(keys: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const key of keys) {
    const match = /^checkpoints\/([^/]+)\/(chk-|probe-)/.exec(key);
    if (match === null) continue;
    try {
      ids.add(decodeURIComponent(match[1] as string));
    } catch {
      // not a segment keySegment wrote: not ours
    }
  }
  return [...ids].sort();
}
