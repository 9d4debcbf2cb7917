import type { IncomingMessage, ServerResponse } from 'node:http';
import { invalidArgument, isShuffleError, partitionNotFound } from '@weft/shuffle-api';
import type { CommitRequestBody } from '../protocol/committed-partition.js';
import { COMMIT_HEADER, MAX_COMMIT_HEADER_CHARS } from '../protocol/routes.js';
import { checkCommitRequest, commitLocked } from './control-handlers.js';
import { WireError, wireError } from '../protocol/wire-errors.js';
import { ObjectValidator } from './object-validator.js';
import type { Upload } from './partition-store.js';
import { receiveBody } from './receive-body.js';
import { sendJson } from './http-io.js';
import { MIN_STREAM_BUFFER_BYTES, type ServerContext } from './server-context.js';

export interface PushRoute {
  readonly jobId: string;
  readonly partitionId: string;
  readonly attempt: number;
}

/** What a successful push answers (201). */
export interface PushResponseBody {
  readonly objectBytes: number;
  readonly numberOfSubpartitions: number;
  readonly numberOfRegions: number;
}

/**
 * `PUT /v1/jobs/<job>/partitions/<p>/attempts/<a>/data`: streams the body to disk while the validator
 * checks it, with backpressure; with a write-through tier, each whole part on disk goes on to S3 (a
 * multipart upload completed only at commit: server/tier-upload.ts). With an `x-weft-commit` header (the
 * commit request, base64url JSON) the attempt is committed as soon as it is stored, in the same request:
 * one round trip for a small partition. A body that is malformed, too large,
 * or cut off (the client vanished, or stalled past the idle timeout) is deleted — disk file and S3
 * upload — and answered 4xx where the connection still lets it. A push for an already committed
 * partition is refused before anything is written.
 */
export async function handlePush(ctx: ServerContext, req: IncomingMessage, res: ServerResponse, route: PushRoute): Promise<void> {
  const { store, options, tier } = ctx;
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > options.maxBodyBytes) {
    throw wireError(WireError.BODY_TOO_LARGE, `the body of ${declared} bytes is larger than the server's maximum of ${options.maxBodyBytes}`, {
      setting: 'maxBodyBytes',
    });
  }
  const commit = commitHeader(req, route);
  const committed = await store.committed(route.jobId, route.partitionId);
  if (committed !== undefined) {
    throw wireError(WireError.ALREADY_COMMITTED, `partition ${route.partitionId} is already committed (attempt ${committed.attempt})`, {
      partitionId: route.partitionId,
    });
  }
  const upload = await store.createUpload(route.jobId, route.partitionId, route.attempt);
  if (tier !== undefined) upload.tier = tier.begin(upload.key, () => store.openObject(upload.key));
  let started = false;
  try {
    const validator = new ObjectValidator(options.verifyPushChecksums);
    await receiveBody(req, {
      maxBytes: options.maxBodyBytes,
      bufferBytes: () => Math.max(MIN_STREAM_BUFFER_BYTES, Math.min(options.streamBufferBytes, Math.floor(ctx.streamShareBytes() / 2))),
      onChunk: (chunk) => validator.update(chunk),
      write: async (batch, bytes) => {
        ctx.metrics.bytesIn.inc(bytes);
        if (!started) {
          started = true; // the push is under way: its first bytes arrived, the rest is still to come
          await ctx.faultPoint?.('push', route.jobId, route.partitionId);
        }
        await store.append(upload, batch, bytes);
        upload.tier?.advance(upload.bytes);
      },
    });
    const location = validator.finish();
    upload.location = location;
    upload.tier?.seal(upload.bytes);
    if (!(await store.completeUpload(upload, ctx.clock.now()))) throw released(route);
    const winner = await store.committed(route.jobId, route.partitionId);
    if (winner !== undefined) {
      throw wireError(WireError.ALREADY_COMMITTED, `partition ${route.partitionId} was committed (attempt ${winner.attempt}) while this push ran`, {
        partitionId: route.partitionId,
      });
    }
    if (commit !== undefined) {
      const record = await store.withLock(route.jobId, route.partitionId, () => commitLocked(ctx, route, commit.descriptor, commit.subpartitionBytes, commit.replica === true));
      sendJson(res, 200, record);
      return;
    }
    const body: PushResponseBody = {
      objectBytes: upload.bytes,
      numberOfSubpartitions: location.numberOfSubpartitions,
      numberOfRegions: location.numberOfRegions,
    };
    sendJson(res, 201, body);
  } catch (error) {
    const gone = upload.state === 'gone';
    await discard(ctx, upload, reasonOf(error, req));
    if (gone && !(isShuffleError(error) && error.context['wire'] !== undefined)) throw released(route);
    throw error;
  }
}

/** The commit request a push may carry (`x-weft-commit`: base64url JSON), checked before any byte is stored. */
function commitHeader(req: IncomingMessage, route: PushRoute): CommitRequestBody | undefined {
  const header = req.headers[COMMIT_HEADER];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || header.length > MAX_COMMIT_HEADER_CHARS) throw invalidArgument(COMMIT_HEADER, 'expected one base64url JSON commit request');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
  } catch (cause) {
    throw invalidArgument(COMMIT_HEADER, `not base64url JSON: ${(cause as Error).message}`);
  }
  return checkCommitRequest(value, route);
}

function released(route: PushRoute): Error {
  return partitionNotFound(route.partitionId, 'it was released while this push ran');
}

function reasonOf(error: unknown, req: IncomingMessage): string {
  if (!req.complete && req.destroyed) return 'client-gone';
  if (isShuffleError(error)) {
    if (error.context['wire'] === WireError.MALFORMED_BODY.wire) return 'malformed';
    if (error.context['wire'] === WireError.BODY_TOO_LARGE.wire) return 'too-large';
  }
  return 'failed';
}

async function discard(ctx: ServerContext, upload: Upload, reason: string): Promise<void> {
  ctx.metrics.uploadsDiscarded.inc({ reason });
  ctx.logger.debug({ jobId: upload.jobId, partitionId: upload.partitionId, attempt: upload.attempt, reason, bytes: upload.bytes }, 'uploading -> discarded');
  await ctx.store.dropUpload(upload).catch(() => undefined);
}
