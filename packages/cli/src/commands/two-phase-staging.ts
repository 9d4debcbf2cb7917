import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { abortMarkedTransaction, IN_PROGRESS_DIR, inProgressPrefix, type JobEventLog, normalizeExternalDir, type TwoPhaseCommitStaging } from '@weft/engine';
import { noopLogger } from '@weft/shuffle-api';

const JOB_STORE_MODULE = '@weft/job-store';
const REDIS_MODULE = '@weft/shuffle-remote/redis';
const REMOTE_MODULE = '@weft/shuffle-remote';

/** What one job left staged in its two-phase-commit sinks: part files in progress, staging lists in Redis. */
export interface TwoPhaseStaging {
  /** Files (fileCommitSink's `.in-progress/<tag>-…`, on S3 its markers' URLs) and `redis://…#key` names, for reports. */
  readonly items: readonly string[];
  readonly bytes: number;
  /** Removes them all (every step tried; the first failure rethrown). */
  remove(): Promise<void>;
}

/** The two-phase-commit sinks' staging the run's `job-submitted` events recorded (TwoPhaseCommitSinkFactory.staging). */
async function stagingOf(log: JobEventLog, jobId: string): Promise<{ sink: string; staging: TwoPhaseCommitStaging }[]> {
  const out = new Map<string, { sink: string; staging: TwoPhaseCommitStaging }>();
  for (const e of await log.readRun(jobId).catch(() => [])) {
    if (e.type !== 'job-submitted') continue;
    const recorded = (e.data as { twoPhaseStaging?: unknown } | null)?.twoPhaseStaging;
    if (!Array.isArray(recorded)) continue;
    for (const r of recorded as { sink?: unknown; staging?: unknown }[]) {
      const staging = r?.staging as TwoPhaseCommitStaging | undefined;
      if (typeof r?.sink !== 'string' || typeof staging !== 'object' || staging === null || typeof staging.kind !== 'string') continue;
      out.set(JSON.stringify([r.sink, staging]), { sink: r.sink, staging });
    }
  }
  return [...out.values()];
}

/**
 * Finds what the run `jobId` left staged in its two-phase-commit sinks, where its log says they stage:
 * `file-commit` — the in-progress files of the job's sink (inProgressPrefix) in `<dir>/.in-progress`; on an
 * `s3://` dir the markers there, each upload aborted and its marker removed (the S3 file system of the
 * environment, as `weft run` uses);
 * `redis-stream` — the staging lists `<keyPrefix>txn:<jobId>/…`. Other kinds are left alone. Only the
 * job's own staging: other jobs writing the same directory or stream keep theirs.
 */
export async function findTwoPhaseStaging(log: JobEventLog, jobId: string): Promise<TwoPhaseStaging> {
  const items: string[] = [];
  const removals: (() => Promise<void>)[] = [];
  let bytes = 0;
  for (const { sink, staging } of await stagingOf(log, jobId)) {
    if (staging.kind === 'file-commit' && typeof staging['dir'] === 'string' && /^s3:\/\//iu.test(staging['dir'])) {
      const dir = `${normalizeExternalDir(staging['dir'])}/${IN_PROGRESS_DIR}`;
      const prefix = `${dir}/${inProgressPrefix(jobId, sink)}`;
      const { createS3FileSystem } = (await import(REMOTE_MODULE)) as typeof import('@weft/shuffle-remote');
      const fs = createS3FileSystem();
      try {
        const markers = (await fs.listUnder(dir)).filter((url) => url.startsWith(prefix));
        items.push(...markers);
        if (markers.length > 0) {
          removals.push(async () => {
            const again = createS3FileSystem();
            try {
              for (const marker of markers) await abortMarkedTransaction(again, marker);
            } finally {
              await again.close();
            }
          });
        }
      } finally {
        await fs.close();
      }
    } else if (staging.kind === 'file-commit' && typeof staging['dir'] === 'string') {
      const dir = join(staging['dir'], IN_PROGRESS_DIR);
      const prefix = inProgressPrefix(jobId, sink);
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (!name.startsWith(prefix)) continue;
        const file = join(dir, name);
        bytes += (await stat(file).catch(() => undefined))?.size ?? 0;
        items.push(file);
        removals.push(() => rm(file, { force: true }));
      }
    } else if (staging.kind === 'redis-stream' && typeof staging['url'] === 'string' && typeof staging['keyPrefix'] === 'string') {
      const url = staging['url'];
      const keyPrefix = staging['keyPrefix'];
      const { connectRedis } = (await import(REDIS_MODULE)) as typeof import('@weft/shuffle-remote/redis');
      const { redisStreamStagingKeys, redisStreamTransactionPrefix } = (await import(JOB_STORE_MODULE)) as typeof import('@weft/job-store');
      const redis = await connectRedis({ url, connectTimeoutMs: 5_000, commandTimeoutMs: 5_000, setting: `the redisStreamSink url of sink ${JSON.stringify(sink)}`, logger: noopLogger });
      try {
        const keys = await redisStreamStagingKeys(redis, keyPrefix, redisStreamTransactionPrefix(jobId));
        items.push(...keys.map((k) => `${url}#${k}`));
        if (keys.length > 0) {
          removals.push(async () => {
            const again = await connectRedis({ url, connectTimeoutMs: 5_000, commandTimeoutMs: 5_000, setting: `the redisStreamSink url of sink ${JSON.stringify(sink)}`, logger: noopLogger });
            try {
              await again.del(...keys);
            } finally {
              await again.quit().catch(() => {});
            }
          });
        }
      } finally {
        await redis.quit().catch(() => {});
      }
    }
  }
  return {
    items,
    bytes,
    async remove() {
      let first: unknown;
      for (const removal of removals) await removal().catch((error: unknown) => (first ??= error));
      if (first !== undefined) throw first;
    },
  };
}
