import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import type { JobEventLog, JobRunRecord } from '@weft/engine';
import { type Command, ExitCode } from '../command.js';
import { parseCommandArgs, usageError } from '../parse-command-args.js';
import { settingProblem } from './run-settings.js';
import { defaultMetaUrl, defaultStoreUrl } from './default-stores.js';
import { BlobCheckpointStorage } from './blob-checkpoint-storage.js';
import { type CheckpointsCollected, collectCheckpoints } from './gc-checkpoints.js';
import { type RemovedRun, removeDeadRun } from './gc-dead-runs.js';
import { type DeadRunLeases, isGcOwner, leaseDeadRuns } from './gc-leases.js';

const USAGE = `Usage: weft gc [--meta URL] [--store URL] [--older-than DURATION] [--dry-run] [--json]

Collects the garbage of dead runs: for every run in the job event log (unfinished or finished) that has
logged no event and renewed no lease for --older-than (a lease an earlier gc took does not count) and
whose job master is not alive, it takes the run's lease (only while no newer run has opened the job id
since gc read it) and, under it, unregisters the job in the shuffle store (deleting its partitions;
BLOCKING_PERSISTENT ones are kept), removes its text sinks' per-attempt temporary directories that the log
names (local ones; also those of attempts that never finished) and the spill directories its tasks left
(killed with their processes) under the spill directory it logged, then deletes the run from the log. One
line per run removed (id, partitions, bytes), then a total. A newer run of the job id that opens it while
gc works fences gc: its checkpoints, partitions, directories and log stay (gc says so on stderr).

Checkpoints (\`checkpoints/<job>/chk-<id>/\` in the --store, records in the --meta store), before the runs:
a dead run (as above) that ended — succeeded, failed, cancelled — and whose logged --checkpoint-retention
removes them at that end loses every completed checkpoint (record first, then data); any other dead run
loses the snapshots of checkpoints that never completed (aborted, or in progress when its job master
crashed) and keeps its completed ones for --from-checkpoint. A live run, or a job id the log no longer
knows, loses only snapshots of never-completed checkpoints older than its newest completed one. One line
per job id whose checkpoints were removed (checkpoints, objects).

Two-phase-commit sinks (sinkTo: fileCommitSink on a local dir, redisStreamSink): what the run left staged
(in-progress part files, staging lists; only the run's own) is removed when the run succeeded (its final
commit committed every completed checkpoint's transactions) or when it has no completed checkpoint left
in --meta; otherwise it is kept (reported as kept), and so is the run's log, which names it for a later
gc: a run with --from-checkpoint may still restore that checkpoint, and commit what it recorded. The
checkpoints themselves go as above.

Liveness: the log records the lease owner as host:pid. A run whose owner is a live process on this host is
kept whatever its age; for an owner on another host (or none) age alone decides.

Options:
  --meta URL                the job event log and the shuffle metadata: sqlite:///abs/file.db,
                            redis://host:port/db or redis+sentinel://host:port[,…]/name/db (default: $WEFT_META, else ./.weft/shuffle-meta.db)
  --store URL               where the partitions are: file:///abs/dir or s3://bucket/prefix (default:
                            $WEFT_STORE, else ./.weft/shuffle — the same as \`weft run\`)
  --older-than DURATION     only runs idle longer (last event and last lease renewal): 30s, 30m, 1h, 7d
                            (default 24h)
  --dry-run                 print what would be removed, remove nothing
  --json                    print {"removed": [{"jobId", "status", "lastEventAt", "partitions", "bytes",
                            "sinkDirs", "spillDirs", "twoPhaseStaged", "twoPhaseKept"}], "partitions",
                            "bytes", "checkpoints": [{"jobId", "status", "retention"?, "reason":
                            "ended"|"orphaned", "checkpoints", "objects"}], "checkpointObjects", "dryRun"}
                            (twoPhaseStaged: the staged files and keys removed; twoPhaseKept: those kept
                            for a checkpoint)
  -h, --help                show this help

Exit codes: 0 done (also when nothing was removed); 1 a store failed; 2 bad usage, a bad --meta or --store,
or a bad --older-than.
`;

const JOB_STORE_MODULE = '@weft/job-store';
const BLOCKING_MODULE = '@weft/shuffle-remote';
const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30s`, `30m`, `1h`, `7d` (also `ms`) in milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (match === null) return undefined;
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}

/** Whether `owner` (`host:pid`) names a live process on this host. */
function ownerAlive(owner: string | undefined): boolean {
  if (owner === undefined) return false;
  const at = owner.lastIndexOf(':');
  if (at < 0 || owner.slice(0, at) !== hostname()) return false;
  const pid = Number(owner.slice(at + 1));
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export const gcCommand: Command = {
  name: 'gc',
  summary: 'remove the partitions, sink temp files, checkpoints and log of dead runs older than an age, and orphaned checkpoint data',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseCommandArgs('gc', args, {
      meta: { type: 'string' },
      store: { type: 'string' },
      'older-than': { type: 'string' },
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
    });
    if (positionals.length > 0) throw usageError('gc', `unexpected argument ${JSON.stringify(positionals[0])}`);
    const olderThanText = values['older-than'] ?? '24h';
    const olderThanMs = parseDuration(olderThanText);
    if (olderThanMs === undefined) throw usageError('gc', `--older-than: expected a duration such as 30s, 30m, 1h, 7d, got ${JSON.stringify(olderThanText)}`);
    const metaFlag = values.meta !== undefined ? '--meta' : io.env['WEFT_META'] !== undefined ? 'WEFT_META' : '--meta (default)';
    const meta = values.meta ?? io.env['WEFT_META'] ?? defaultMetaUrl(io.cwd);
    const storeFlag = values.store !== undefined ? '--store' : io.env['WEFT_STORE'] !== undefined ? 'WEFT_STORE' : '--store (default)';
    const store = values.store ?? io.env['WEFT_STORE'] ?? defaultStoreUrl(io.cwd);
    const dryRun = values['dry-run'] === true;
    const { createJobEventLog, parseJobEventLogUrl } = (await import(JOB_STORE_MODULE)) as typeof import('@weft/job-store');
    let location: ReturnType<typeof parseJobEventLogUrl>;
    try {
      location = parseJobEventLogUrl(meta, metaFlag);
    } catch (error) {
      throw usageError('gc', settingProblem(metaFlag, error), error);
    }
    const { createBlobStore, createRemoteShuffleServiceFactory, parseStoreUrl } = (await import(BLOCKING_MODULE)) as typeof import('@weft/shuffle-remote');
    try {
      parseStoreUrl(store);
    } catch (error) {
      throw usageError('gc', settingProblem(storeFlag, error), error);
    }
    const removed: RemovedRun[] = [];
    const checkpoints: CheckpointsCollected[] = [];
    if (location.type === 'redis' || existsSync(location.path)) {
      let log: JobEventLog;
      try {
        log = await createJobEventLog(meta, { setting: metaFlag, retryTimeoutMs: 5_000 });
      } catch (error) {
        throw usageError('gc', settingProblem(metaFlag, error), error);
      }
      let leases: DeadRunLeases | undefined;
      try {
        const now = Date.now();
        const runs = await log.listRuns();
        // idle: no event and no lease renewal (a streaming job logs few events but renews its lease) for
        // --older-than; a lease an earlier gc took (and left: it crashed, or kept the run) is no activity
        const idle = (r: JobRunRecord): boolean => now - (isGcOwner(r.owner) ? r.lastAtMs : Math.max(r.lastAtMs, r.leaseRenewedAtMs ?? 0)) >= olderThanMs;
        const idleDead = runs.filter((r) => idle(r) && !ownerAlive(r.owner));
        // a real gc acts on a dead run only under its lease, taken while the epoch it read still holds
        leases = dryRun ? undefined : await leaseDeadRuns(log, idleDead, (jobId, error) => io.stderr.write(`weft gc: skipped ${jobId}: ${error.message}\n`));
        const dead = leases === undefined ? idleDead : idleDead.filter((r) => leases?.byJobId.has(r.jobId) === true);
        const deadIds = new Set(dead.map((r) => r.jobId));
        const isDead = (r: JobRunRecord): boolean => deadIds.has(r.jobId);
        // checkpoints first: they read the dead runs' logs, deleted below
        const blobStore = createBlobStore(parseStoreUrl(store, storeFlag));
        try {
          await blobStore.start();
          const request = { log, storage: new BlobCheckpointStorage(blobStore), runs, isDead, leases: leases?.byJobId ?? new Map(), dryRun };
          checkpoints.push(...(await collectCheckpoints(request, (jobId, error) => io.stderr.write(`weft gc: skipped the checkpoints of ${jobId}: ${error.message}\n`))));
        } finally {
          await blobStore.close();
        }
        if (dead.length > 0) {
          let factory: ReturnType<typeof createRemoteShuffleServiceFactory>;
          try {
            // a dry run looks only: no sweep of abandoned attempts either
            factory = createRemoteShuffleServiceFactory({ store, meta, ...(dryRun ? { sweepOnStart: false, sweepIntervalMs: 0 } : {}) });
          } catch (error) {
            throw usageError('gc', settingProblem(`${storeFlag} / ${metaFlag}`, error), error);
          }
          const master = factory.createShuffleMaster({});
          await master.start();
          try {
            for (const run of dead) {
              try {
                const done = await removeDeadRun({ log, master, run, lease: leases?.byJobId.get(run.jobId), stderr: io.stderr });
                if (done !== undefined) removed.push(done);
              } catch (error) {
                // a newer run of the job id fenced gc (SHF_ERR_FENCED), or a store failed: the next run goes on
                io.stderr.write(`weft gc: skipped ${run.jobId}: ${(error as Error).message}\n`);
              }
            }
          } finally {
            await master.close();
          }
        }
      } finally {
        await leases?.close();
        await log.close();
      }
    }
    const partitions = removed.reduce((s, r) => s + r.partitions, 0);
    const bytes = removed.reduce((s, r) => s + r.bytes, 0);
    const checkpointObjects = checkpoints.reduce((s, c) => s + c.objects, 0);
    if (values.json === true) {
      io.stdout.write(`${JSON.stringify({ removed, partitions, bytes, checkpoints, checkpointObjects, dryRun })}\n`);
    } else {
      const verb = dryRun ? 'would remove' : 'removed';
      for (const c of checkpoints) {
        const why = c.reason === 'ended' ? `${c.status}, retention ${c.retention ?? '?'}` : `${c.status}: never completed`;
        io.stdout.write(`${verb} checkpoints of ${c.jobId} (${why}): ${c.checkpoints} checkpoints, ${c.objects} objects\n`);
      }
      for (const r of removed) {
        io.stdout.write(`${verb} ${r.jobId} (${r.status}, last event ${r.lastEventAt}): ${r.partitions} partitions, ${r.bytes} bytes${r.sinkDirs.length > 0 ? `, ${r.sinkDirs.length} sink temp dirs` : ''}${r.spillDirs.length > 0 ? `, ${r.spillDirs.length} spill dirs` : ''}${r.twoPhaseStaged.length > 0 ? `, ${r.twoPhaseStaged.length} staged two-phase-commit transactions` : ''}${r.twoPhaseKept.length > 0 ? ` (kept ${r.twoPhaseKept.length} staged two-phase-commit transactions, and the run's log: a completed checkpoint may still commit them)` : ''}\n`);
      }
      io.stdout.write(`${dryRun ? 'would remove' : 'removed'} ${removed.length} runs in total: ${partitions} partitions, ${bytes} bytes (older than ${olderThanText})${checkpoints.length > 0 ? `; ${checkpointObjects} checkpoint objects of ${checkpoints.length} job ids` : ''}\n`);
    }
    return ExitCode.OK;
  },
};
