import { existsSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isEngineError, type JobEventLog, type JobLog, type JobRunRecord, jobSpillPrefix, type LoggedJobEvent } from '@weft/engine';
import type { JobId, ShuffleMaster } from '@weft/shuffle-api';
import { findTwoPhaseStaging } from './two-phase-staging.js';

/**
 * The text sinks' attempt directories (`.<name>.weft-<jobId>`) the run's logged events name: those its
 * `job-submitted` lists (attempts that never finished wrote there too) and those of finished sink attempts.
 */
function sinkDirsOf(events: readonly LoggedJobEvent[], jobId: string): string[] {
  const dirs = new Set<string>();
  const ours = (dir: string): boolean => basename(dir).endsWith(`.weft-${jobId}`);
  for (const e of events) {
    const submitted = e.type === 'job-submitted' ? (e.data as { sinkTempDirs?: unknown } | null)?.sinkTempDirs : undefined;
    if (Array.isArray(submitted)) for (const d of submitted) if (typeof d === 'string' && ours(d)) dirs.add(d);
    const sinks = (e.data as { sinks?: unknown } | null)?.sinks;
    if (!Array.isArray(sinks)) continue;
    for (const s of sinks as { kind?: unknown; file?: unknown }[]) {
      if (s?.kind !== 'text-file' || typeof s.file !== 'string') continue;
      const dir = dirname(s.file);
      if (ours(dir)) dirs.add(dir);
    }
  }
  return [...dirs].filter((d) => existsSync(d));
}

/**
 * The spill directories (`weft-spill-<job>-*`) its tasks left under the spill root its `job-submitted`
 * logged (local executors only): what tasks killed with their processes could not remove.
 */
async function spillDirsOf(events: readonly LoggedJobEvent[], jobId: string): Promise<string[]> {
  const roots = new Set<string>();
  for (const e of events) {
    const root = e.type === 'job-submitted' ? (e.data as { options?: { spillRoot?: unknown } | null } | null)?.options?.spillRoot : undefined;
    if (typeof root === 'string' && root !== '') roots.add(root);
  }
  const prefix = jobSpillPrefix(jobId);
  const dirs: string[] = [];
  for (const root of roots) for (const name of await readdir(root).catch(() => [] as string[])) if (name.startsWith(prefix)) dirs.push(join(root, name));
  return dirs;
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const s = await stat(join(dir, name)).catch(() => undefined);
    if (s?.isFile() === true) total += s.size;
  }
  return total;
}

/** One dead run `weft gc` removed (or would). */
export interface RemovedRun {
  readonly jobId: string;
  readonly status: string;
  readonly lastEventAt: string;
  readonly partitions: number;
  readonly bytes: number;
  readonly sinkDirs: readonly string[];
  readonly spillDirs: readonly string[];
  /** Two-phase-commit staging removed (files, `redis://…#key`). */
  readonly twoPhaseStaged: readonly string[];
  /** Two-phase-commit staging kept: a completed checkpoint of the run is still there to restore. */
  readonly twoPhaseKept: readonly string[];
}

/**
 * Whether a completed checkpoint of the run is left in the store, which `weft run --from-checkpoint`
 * may restore (its two-phase-commit sinks then commit what it recorded pre-committed).
 */
async function hasCompletedCheckpoint(log: JobEventLog, jobId: string): Promise<boolean> {
  const store = log.checkpointStore?.(jobId, 0);
  if (store === undefined) return false;
  return (await store.completed()).length > 0;
}

/** Whether `jobId`'s newest epoch is still `epoch` (the lease gc holds): no run opened it since. */
async function stillLeased(log: JobEventLog, jobId: string, epoch: number): Promise<boolean> {
  const record = log.readRunRecord !== undefined ? await log.readRunRecord(jobId) : (await log.listRuns()).find((r) => r.jobId === jobId);
  return record?.epoch === epoch;
}

export interface RemoveDeadRunRequest {
  readonly log: JobEventLog;
  /** The shuffle's master (started): the run's partitions are unregistered through it. */
  readonly master: ShuffleMaster;
  readonly run: JobRunRecord;
  /** The lease gc holds on the run (`leaseDeadRuns`); undefined: a dry run, which removes nothing. */
  readonly lease: JobLog | undefined;
  /** Where gc says that a run of the job id opened it while gc removed it. */
  readonly stderr: { write(text: string): unknown };
}

/**
 * Removes one dead run — its partitions, its sinks' attempt directories, its spill directories, its
 * two-phase-commit staging (unless a completed checkpoint may still commit it: then the staging and the
 * log stay) and its log — under gc's lease, and reports what it removed (a dry run: what it would).
 *
 * Fenced at each step by the lease's epoch, so a run of the job id that opens it while gc works keeps what
 * it uses: gc registers the job in the shuffle at its epoch first (a newer run that registered already
 * fails it with SHF_ERR_FENCED, nothing removed; one that registers later fences gc's unregister); before
 * the directories and staging go it checks the lease is still the newest (not: undefined, a line on
 * `stderr`, the log kept); the log goes only at that epoch (`deleteRun({ ifEpoch })`). What is left between
 * that check and the deletes is a run opening the job id in the same few milliseconds.
 */
export async function removeDeadRun(request: RemoveDeadRunRequest): Promise<RemovedRun | undefined> {
  const { log, master, run, lease, stderr } = request;
  const jobId = run.jobId as JobId;
  if (lease !== undefined) await master.registerJob({ jobId, epoch: lease.epoch });
  const partitions = await master.listPartitions(jobId);
  const events = await log.readRun(run.jobId).catch(() => []);
  const sinkDirs = sinkDirsOf(events, run.jobId);
  const spillDirs = await spillDirsOf(events, run.jobId);
  const staged = await findTwoPhaseStaging(log, run.jobId);
  // never what a completed checkpoint may still commit: a succeeded run committed them all
  const keepStaged = staged.items.length > 0 && run.status !== 'succeeded' && (await hasCompletedCheckpoint(log, run.jobId));
  let bytes = partitions.reduce((sum, p) => sum + p.totalBytes, 0) + (keepStaged ? 0 : staged.bytes);
  for (const d of [...sinkDirs, ...spillDirs]) bytes += await dirBytes(d);
  if (lease !== undefined) {
    await master.unregisterJob(jobId);
    if (!(await stillLeased(log, run.jobId, lease.epoch))) {
      stderr.write(`weft gc: kept ${run.jobId}: a newer run opened the job id while gc removed it (its sink and spill directories, staging and log stay)\n`);
      return undefined;
    }
    await Promise.all([...sinkDirs, ...spillDirs].map((d) => rm(d, { recursive: true, force: true })));
    if (!keepStaged) await staged.remove();
    // the log names the staging kept: a later gc removes it once no completed checkpoint is left
    if (!keepStaged && !(await deleteDeadRun(log, run.jobId, lease.epoch, stderr))) return undefined;
  }
  return { jobId: run.jobId, status: run.status, lastEventAt: new Date(run.lastAtMs).toISOString(), partitions: partitions.length, bytes, sinkDirs, spillDirs, twoPhaseStaged: keepStaged ? [] : staged.items, twoPhaseKept: keepStaged ? staged.items : [] };
}

/**
 * Deletes a dead run from the log under gc's lease (`ifEpoch`); false — the log kept, a line on `stderr` —
 * when a run opened the job id since.
 */
async function deleteDeadRun(log: JobEventLog, jobId: string, epoch: number, stderr: { write(text: string): unknown }): Promise<boolean> {
  try {
    await log.deleteRun(jobId, { ifEpoch: epoch });
    return true;
  } catch (error) {
    if (!isEngineError(error, 'WEFT_ERR_FENCED')) throw error;
    stderr.write(`weft gc: kept the log of ${jobId}: ${error.message}\n`);
    return false;
  }
}
