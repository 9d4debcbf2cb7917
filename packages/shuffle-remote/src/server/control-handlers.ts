import type { IncomingMessage, ServerResponse } from 'node:http';
import { ShuffleError, type ShuffleDescriptor, fencedError, invalidArgument, isShuffleError, partitionNotFound } from '@weft/shuffle-api';
import { FOOTER_BYTES, type IndexLocation, decodeFooter } from '../format/partition-index.js';
import { type CommitRequestBody, type CommittedPartition, validateCommitRequestBody } from '../protocol/committed-partition.js';
import { WireError, wireError } from '../protocol/wire-errors.js';
import type { PendingClaim } from '../coordinator/redis-commit-index.js';
import { readJsonBody, sendJson } from './http-io.js';
import { countedByIndex } from './index-reconciliation.js';
import type { ServerContext } from './server-context.js';

interface AttemptRoute {
  readonly jobId: string;
  readonly partitionId: string;
  readonly attempt: number;
}

/** The descriptor as stored: `details.token` removed (tokens are never kept). */
function withoutToken(descriptor: ShuffleDescriptor): ShuffleDescriptor {
  const details = descriptor.details;
  if (typeof details !== 'object' || details === null || Array.isArray(details) || !('token' in details)) return descriptor;
  const { token: _token, ...rest } = details as Record<string, unknown>;
  return { ...descriptor, details: rest as ShuffleDescriptor['details'] };
}

/**
 * `POST …/attempts/<a>/commit`, body `{descriptor, subpartitionBytes}`: makes the attempt's complete push
 * the partition's data. First committer wins — on this server (an exclusive commit record) and, with
 * Redis, across the cluster (the commit index). A later attempt is answered 409 and its data deleted
 * (its S3 copy too). With a tier, the S3 copy is complete before the commit is. Idempotent for the
 * winning attempt.
 */
export async function handleCommit(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: AttemptRoute): Promise<void> {
  const body = checkCommitRequest(await readJsonBody(req, ctx.options.maxJsonBodyBytes), route);
  const record = await ctx.store.withLock(route.jobId, route.partitionId, () => commitLocked(ctx, route, body.descriptor, body.subpartitionBytes, body.replica === true));
  sendJson(res, 200, record);
}

/** Checks a commit request (JSON body, or the push's `x-weft-commit` header) against the attempt in the path. */
export function checkCommitRequest(value: unknown, route: AttemptRoute): CommitRequestBody {
  const body = validateCommitRequestBody(value);
  const d = body.descriptor;
  if (d.jobId !== route.jobId) throw invalidArgument('descriptor.jobId', 'does not match the job in the path');
  if (d.partition.partitionId !== route.partitionId) throw invalidArgument('descriptor.partition.partitionId', 'does not match the partition in the path');
  if (d.producer.attempt !== route.attempt) throw invalidArgument('descriptor.producer.attempt', 'does not match the attempt in the path');
  if (body.subpartitionBytes.length !== d.partition.numberOfSubpartitions) {
    throw invalidArgument('subpartitionBytes', `expected ${d.partition.numberOfSubpartitions} sizes, got ${body.subpartitionBytes.length}`);
  }
  return body;
}

/**
 * Commits the attempt's latest complete push; the caller holds the partition's lock. With a tier, the
 * S3 copy is completed first (it becomes an S3 object only now); a commit that then fails or loses drops
 * it again, so only committed partitions have S3 objects. Offloading (`tier.keepLocal: false`), the disk
 * copy is deleted once the commit is recorded.
 */
export async function commitLocked(ctx: ServerContext, route: AttemptRoute, descriptor: ShuffleDescriptor, sizes: readonly number[], replica = false): Promise<CommittedPartition> {
  const { store, tier, commitIndex } = ctx;
  const existing = await store.committed(route.jobId, route.partitionId);
  if (existing !== undefined) {
    if (existing.attempt === route.attempt) {
      await (replica ? commitIndex?.addCopy(existing) : commitIndex?.publish(existing));
      return existing;
    }
    if (commitIndex !== undefined && !(await countedByIndex(commitIndex, store.serverId, existing))) {
      // a stale commit (released or replaced while this server was down): it goes, and this attempt commits
      if (existing.tiered) await tier?.delete(existing.objectKey);
      await store.release(route.jobId, route.partitionId);
    } else {
      for (const upload of store.uploadsOf(route.jobId, route.partitionId)) if (upload.attempt === route.attempt) await store.dropUpload(upload);
      throw conflict(route, `attempt ${existing.attempt}`);
    }
  }
  const upload = store.completeUploadOf(route.jobId, route.partitionId, route.attempt);
  if (upload === undefined) throw partitionNotFound(route.partitionId, `attempt ${route.attempt} has no complete push on this server to commit`);
  const location = upload.location ?? (await readFooter(ctx, upload.key, upload.bytes));
  if (location === undefined) throw wireError(WireError.MALFORMED_BODY, `the pushed object of ${route.partitionId} has no valid footer`);
  if (location.numberOfSubpartitions !== descriptor.partition.numberOfSubpartitions) {
    throw invalidArgument('descriptor.partition.numberOfSubpartitions', `the pushed object has ${location.numberOfSubpartitions} subpartitions`);
  }
  await upload.tier?.complete();
  const record: CommittedPartition = {
      jobId: route.jobId,
      partitionId: route.partitionId,
      attempt: route.attempt,
      serverId: store.serverId,
      descriptor: withoutToken(descriptor),
      persistent: descriptor.partition.partitionType === 'BLOCKING_PERSISTENT',
      numberOfSubpartitions: location.numberOfSubpartitions,
      numberOfRegions: location.numberOfRegions,
      indexOffset: location.indexOffset,
      indexLength: location.indexLength,
      objectBytes: upload.bytes,
      subpartitionBytes: sizes,
      totalBytes: sizes.reduce((a, b) => a + b, 0),
      committedAtMs: ctx.clock.now(),
    objectKey: upload.key,
    tiered: upload.tier !== undefined,
  };
  // two steps in the index: claimed pending, then confirmed once the local record is written (a server
  // dying in between leaves a pending claim that a later attempt replaces, see RedisCommitIndex)
  let claim: PendingClaim | undefined;
  if (commitIndex !== undefined) {
    // a replica's commit: the same attempt committed (or being committed) on another server is a copy, not a rival
    // (either checks the partition's registration: another attempt or a newer epoch registered refuses it)
    const outcome = replica ? await commitIndex.addCopy(record) : await commitIndex.claim(record, ctx.claimant);
    if (outcome.status === 'conflict') {
      await store.dropUpload(upload); // its S3 copy too
      throw conflict(route, `attempt ${outcome.winner.attempt} on server ${outcome.winner.serverId}`);
    }
    if (outcome.status === 'superseded') {
      await store.dropUpload(upload);
      throw wireError(WireError.COMMIT_CONFLICT, `attempt ${route.attempt} of partition ${route.partitionId} may no longer commit: the partition was registered again (attempt|epoch ${outcome.current}); its data is deleted`, {
        partitionId: route.partitionId,
      });
    }
    if (outcome.status === 'epoch-fenced') {
      await store.dropUpload(upload);
      const fenced = fencedError(`commit of partition ${route.partitionId}`, { jobId: route.jobId, epoch: outcome.epoch, newestEpoch: outcome.newestEpoch, partitionId: route.partitionId });
      throw wireError(WireError.FENCED, `${fenced.message}; its data is deleted`, fenced.context);
    }
    if (outcome.status === 'claimed') claim = outcome.claim;
  }
  await ctx.faultPoint?.('commit', route.jobId, route.partitionId);
  try {
    await store.writeCommit(record, upload);
  } catch (error) {
    if (claim !== undefined) await commitIndex?.abandon(claim).catch(() => undefined);
    else if (replica) await commitIndex?.removeCopy(route.jobId, route.partitionId, store.serverId).catch(() => undefined);
    // a lost race drops the attempt (S3 copy included); a failed disk keeps it for a retry of the commit (or the sweep)
    if (isShuffleError(error, 'SHF_ERR_COMMIT_CONFLICT')) await store.dropUpload(upload);
    throw error;
  }
  if (claim !== undefined && commitIndex !== undefined && !(await commitIndex.confirm(claim, record))) {
    // replaced while unconfirmed (this server was frozen past the claim's deadline): the other attempt won
    if (record.tiered) await tier?.delete(record.objectKey).catch(() => undefined);
    await store.release(route.jobId, route.partitionId);
    const winner = await commitIndex.lookup(route.jobId, route.partitionId).catch(() => undefined);
    throw conflict(route, winner === undefined ? 'another attempt' : `attempt ${winner.attempt} on server ${winner.serverId}`);
  }
  if (tier !== undefined && !tier.keepLocal) {
    // offload: fetches read the S3 copy from now on; a disk copy left behind is only disk, still served
    await store.deleteObject(upload.key, upload.bytes).catch((error: unknown) => {
      ctx.logger.warn({ key: upload.key, error: (error as Error).message }, 'could not delete the disk copy of an offloaded partition');
    });
  }
  ctx.logger.debug({ jobId: route.jobId, partitionId: route.partitionId, attempt: route.attempt, bytes: record.objectBytes }, 'complete -> committed');
  return record;
}

async function readFooter(ctx: ServerContext, key: string, objectBytes: number): Promise<IndexLocation | undefined> {
  const reader = await ctx.store.openObject(key);
  try {
    return decodeFooter(await reader.read(objectBytes - FOOTER_BYTES, FOOTER_BYTES));
  } finally {
    await reader.close();
  }
}

function conflict(route: AttemptRoute, winner: string): ShuffleError {
  return wireError(WireError.COMMIT_CONFLICT, `partition ${route.partitionId} was committed first by ${winner}; attempt ${route.attempt} is refused and its data deleted`, {
    partitionId: route.partitionId,
  });
}

/**
 * `POST …/attempts/<a>/lease?ttlMs=`: a producer is writing the attempt; until the lease runs out (or the
 * attempt is committed or aborted) a fetch of the uncommitted partition answers PARTITION_PENDING, so
 * readers wait instead of giving up. 204. Leases live in memory only.
 */
export function handleLease(ctx: ServerContext, res: ServerResponse, route: AttemptRoute & { readonly ttlMs: number }): void {
  ctx.store.renewLease(route.jobId, route.partitionId, route.attempt, ctx.clock.now() + route.ttlMs);
  res.writeHead(204).end();
}

/** `DELETE …/attempts/<a>`: deletes an attempt's uncommitted data and lease (a failed writer). 204; idempotent. */
export async function handleAbort(ctx: ServerContext, res: ServerResponse, route: AttemptRoute): Promise<void> {
  ctx.store.dropLease(route.jobId, route.partitionId, route.attempt);
  await ctx.store.withLock(route.jobId, route.partitionId, async () => {
    for (const upload of [...ctx.store.uploadsOf(route.jobId, route.partitionId)]) {
      if (upload.attempt === route.attempt) await ctx.store.dropUpload(upload);
    }
  });
  res.writeHead(204).end();
}

/**
 * Releases one partition here: tier copy, record, object, uploads (their S3 uploads too), commit index
 * entry. The S3 copy goes first: if S3 fails the release fails (retryable) and nothing is forgotten yet.
 */
async function releaseOne(ctx: ServerContext, jobId: string, partitionId: string): Promise<void> {
  await ctx.store.withLock(jobId, partitionId, async () => {
    const committed = await ctx.store.committed(jobId, partitionId);
    if (committed?.tiered === true) await ctx.tier?.delete(committed.objectKey);
    const record = await ctx.store.release(jobId, partitionId);
    // only this server's copy: replicas on other servers stay listed until they are released too
    if (record !== undefined) await ctx.commitIndex?.removeCopy(jobId, partitionId, ctx.store.serverId);
  });
}

/**
 * A release carrying `epoch` (the releasing master's, `?epoch=`) is refused with SHF_ERR_FENCED (wire 18)
 * once the commit index — the Redis key masters raise at `registerJob` — holds a newer epoch of the job:
 * an old job master that woke up deletes nothing here. Without a commit index there is no epoch to check.
 */
async function refuseFencedRelease(ctx: ServerContext, jobId: string, epoch: number | undefined, what: string, partitionId?: string): Promise<void> {
  if (epoch === undefined || ctx.commitIndex === undefined) return;
  const newest = await ctx.commitIndex.newestEpoch(jobId);
  if (newest === undefined || newest <= epoch) return;
  const fenced = fencedError(what, { jobId, epoch, newestEpoch: newest, ...(partitionId === undefined ? {} : { partitionId }) });
  throw wireError(WireError.FENCED, `${fenced.message}; nothing was released`, fenced.context);
}

/** `DELETE /v1/jobs/<job>/partitions/<p>[?epoch=]`: 204; idempotent. */
export async function handleRelease(ctx: ServerContext, res: ServerResponse, route: { readonly jobId: string; readonly partitionId: string; readonly epoch?: number | undefined }): Promise<void> {
  await refuseFencedRelease(ctx, route.jobId, route.epoch, `release of partition ${route.partitionId}`, route.partitionId);
  await releaseOne(ctx, route.jobId, route.partitionId);
  res.writeHead(204).end();
}

/** `DELETE /v1/jobs/<job>?keepPersistent=[&epoch=]`: releases the job's partitions here. 200 `{released}`. */
export async function handleReleaseJob(ctx: ServerContext, res: ServerResponse, route: { readonly jobId: string; readonly keepPersistent: boolean; readonly epoch?: number | undefined }): Promise<void> {
  await refuseFencedRelease(ctx, route.jobId, route.epoch, 'release of the job');
  const ids = new Set(ctx.store.uploadedPartitionsOf(route.jobId));
  let released = 0;
  for (const record of await ctx.store.listJob(route.jobId)) {
    if (route.keepPersistent && record.persistent) {
      ids.delete(record.partitionId);
      continue;
    }
    ids.add(record.partitionId);
  }
  for (const partitionId of ids) {
    await releaseOne(ctx, route.jobId, partitionId);
    released++;
  }
  await ctx.store.pruneJob(route.jobId);
  sendJson(res, 200, { released });
}

/** `GET /v1/jobs/<job>/partitions`: 200 `{partitions: CommittedPartition[]}`. */
export async function handleList(ctx: ServerContext, res: ServerResponse, route: { readonly jobId: string }): Promise<void> {
  sendJson(res, 200, { partitions: await ctx.store.listJob(route.jobId) });
}
