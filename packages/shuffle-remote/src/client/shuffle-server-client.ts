import { readFileSync } from 'node:fs';
import { Agent, type Dispatcher } from 'undici';
import { type Logger, ShuffleError, type ShuffleDescriptor, type ShuffleErrorContext, closedError, invalidConfig, isShuffleError, noopLogger } from '@weft/shuffle-api';
import type { IndexLocation } from '../format/partition-index.js';
import { type CommittedPartition, validateCommittedPartition } from '../protocol/committed-partition.js';
import { FetchHeader } from '../protocol/fetch-layout.js';
import { COMMIT_HEADER, MAX_COMMIT_HEADER_CHARS, attemptPath, commitPath, fetchPath, jobPartitionsPath, jobPath, leasePath, partitionPath, pushPath } from '../protocol/routes.js';
import { WireError, fromWireResponse } from '../protocol/wire-errors.js';
import type { ResolvedShuffleServerClientOptions } from './client-options.js';

/** Names one partition attempt on one server, with the job token that opens it. */
export interface AttemptTarget {
  readonly url: string;
  readonly token: string;
  readonly jobId: string;
  readonly partitionId: string;
  readonly attempt: number;
  /** The server's id where known: errors carry it (`context.serverId`) next to its URL. */
  readonly serverId?: string;
}

export interface PushRequest extends AttemptTarget {
  /** The data object: whole chunks (replayable: retried on retryable errors) or a stream (sent once). */
  readonly body: readonly Uint8Array[] | AsyncIterable<Uint8Array>;
  /** Total bytes, for a replayable body. */
  readonly length?: number;
  readonly signal?: AbortSignal;
}

export interface FetchRequest {
  readonly url: string;
  readonly token: string;
  readonly jobId: string;
  readonly partitionId: string;
  readonly start: number;
  readonly end: number;
  readonly signal?: AbortSignal;
  /** The server's id where known: errors carry it (`context.serverId`). */
  readonly serverId?: string;
}

/** A server's answer to `GET /healthz`. */
export interface ServerHealth {
  readonly serverId: string;
  readonly activeStreams: number;
  readonly partitions: number;
}

/** An open fetch: the committed attempt, where its index lies, and the body stream (protocol/fetch-layout.ts). */
export interface FetchResponse {
  readonly attempt: number;
  readonly location: IndexLocation;
  readonly contentLength: number;
  readonly body: Dispatcher.ResponseData['body'];
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);
const TIMEOUTS: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connectTimeoutMs',
  UND_ERR_HEADERS_TIMEOUT: 'headersTimeoutMs',
  UND_ERR_BODY_TIMEOUT: 'bodyTimeoutMs',
};
const BROKEN = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'ETIMEDOUT', 'UND_ERR_INFO']);
const MAX_ERROR_BODY = 64 * 1024;
/** How long a server found unreachable (after every retry) is tried only once per request. */
const UNREACHABLE_MEMORY_MS = 5_000;

/** The first `code` in an error's cause chain. */
function codeOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** What the client's retry backoff waits with (tests inject their own). */
export interface RetryTimers {
  /** A number in [0, 1): the jitter. */
  random(): number;
  sleep(ms: number): Promise<void>;
}

const SYSTEM_TIMERS: RetryTimers = {
  random: Math.random,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * The HTTP client of the shuffle server (undici): pooled keep-alive connections per server, connect /
 * headers / body timeouts, and retries with exponential backoff and jitter for retryable errors only
 * (unreachable server, broken connection, timeouts, 503/502/504/408/429 — never a server's internal error,
 * 500) and only for replayable requests — a
 * streamed push is sent once. Try n waits a random time in [0, d) ("full jitter"), d starting at
 * retryInitialDelayMs and doubling up to retryMaxDelayMs. Every failure is a ShuffleError (protocol/wire-errors.ts maps responses);
 * `context.unreachable` marks a server that could not be connected to at all.
 */
export class ShuffleServerClient {
  private readonly agent: Agent;
  /** Server URL → until when (Date.now) a request to it is tried once: it was just found unreachable. */
  private readonly unreachableUntil = new Map<string, number>();
  private closed = false;
  #closing: Promise<void> | undefined;

  constructor(
    private readonly options: ResolvedShuffleServerClientOptions,
    private readonly logger: Logger = noopLogger,
    private readonly timers: RetryTimers = SYSTEM_TIMERS,
  ) {
    let ca: Buffer | undefined;
    if (options.caFile !== undefined) {
      try {
        ca = readFileSync(options.caFile);
      } catch (cause) {
        throw invalidConfig('caFile', `cannot read ${options.caFile}: ${(cause as Error).message}`, cause);
      }
    }
    this.agent = new Agent({
      connections: options.connectionsPerServer,
      keepAliveTimeout: options.keepAliveTimeoutMs,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
      connect: { timeout: options.connectTimeoutMs, ...(ca === undefined ? {} : { ca }) },
    });
  }

  /** Pushes an attempt's data object; resolves with the server's answer once it is stored (not committed). */
  async push(request: PushRequest): Promise<{ objectBytes: number }> {
    const replayable = Array.isArray(request.body);
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (replayable && request.length !== undefined) headers['content-length'] = String(request.length);
    return this.send(
      {
        method: 'PUT',
        url: request.url,
        path: pushPath(request.jobId, request.partitionId, request.attempt),
        token: request.token,
        headers,
        body: () => (replayable ? (request.body as readonly Uint8Array[])[Symbol.iterator]() : (request.body as AsyncIterable<Uint8Array>)),
        replayable,
        signal: request.signal,
        context: targetContext(request),
      },
      async (res) => (await res.body.json()) as { objectBytes: number },
    );
  }

  /**
   * Pushes a whole (replayable) object and commits it in the same request (`x-weft-commit`): one round trip
   * for a small partition. Resolves undefined, having sent nothing, when the commit request is too large for
   * a header (push and commit separately then). A retry that finds the partition already committed asks
   * again with a plain commit, which is idempotent for the winner.
   */
  async pushAndCommit(
    request: PushRequest & { readonly body: readonly Uint8Array[] },
    descriptor: ShuffleDescriptor,
    subpartitionBytes: readonly number[],
    replica = false,
  ): Promise<CommittedPartition | undefined> {
    const header = Buffer.from(JSON.stringify({ descriptor, subpartitionBytes, ...(replica ? { replica } : {}) })).toString('base64url');
    if (header.length > MAX_COMMIT_HEADER_CHARS) return undefined;
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream', [COMMIT_HEADER]: header };
    if (request.length !== undefined) headers['content-length'] = String(request.length);
    try {
      return await this.send(
        {
          method: 'PUT',
          url: request.url,
          path: pushPath(request.jobId, request.partitionId, request.attempt),
          token: request.token,
          headers,
          body: () => request.body[Symbol.iterator](),
          replayable: true,
          signal: request.signal,
          context: targetContext(request),
        },
        async (res) => validateCommittedPartition(await res.body.json(), 'response'),
      );
    } catch (error) {
      if (isShuffleError(error) && error.context['wire'] === WireError.ALREADY_COMMITTED.wire) return this.commit(request, descriptor, subpartitionBytes, replica);
      throw error;
    }
  }

  /**
   * Commits an attempt (idempotent for the winner). SHF_ERR_COMMIT_CONFLICT when another attempt won.
   * `replica`: the attempt is pushed to several servers, so its commit on another server is a copy.
   */
  async commit(target: AttemptTarget, descriptor: ShuffleDescriptor, subpartitionBytes: readonly number[], replica = false): Promise<CommittedPartition> {
    const text = JSON.stringify({ descriptor, subpartitionBytes, ...(replica ? { replica } : {}) });
    return this.send(
      {
        method: 'POST',
        url: target.url,
        path: commitPath(target.jobId, target.partitionId, target.attempt),
        token: target.token,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) },
        body: () => text,
        replayable: true,
        context: targetContext(target),
      },
      async (res) => validateCommittedPartition(await res.body.json(), 'response'),
    );
  }

  /** Takes or renews the producer's lease on an attempt for `ttlMs`. */
  async lease(target: AttemptTarget, ttlMs: number): Promise<void> {
    await this.send(
      { method: 'POST', url: target.url, path: leasePath(target.jobId, target.partitionId, target.attempt, ttlMs), token: target.token, replayable: true, context: targetContext(target) },
      async (res) => void (await res.body.dump()),
    );
  }

  /** Deletes an attempt's uncommitted data (and its lease). */
  async abort(target: AttemptTarget): Promise<void> {
    await this.send(
      { method: 'DELETE', url: target.url, path: attemptPath(target.jobId, target.partitionId, target.attempt), token: target.token, replayable: true, context: targetContext(target) },
      async (res) => void (await res.body.dump()),
    );
  }

  /** Opens a fetch of subpartitions [start, end]; the caller reads (or destroys) the body. */
  async fetch(request: FetchRequest): Promise<FetchResponse> {
    return this.send(
      {
        method: 'GET',
        url: request.url,
        path: fetchPath(request.jobId, request.partitionId, request.start, request.end),
        token: request.token,
        replayable: true,
        signal: request.signal,
        context: targetContext(request),
      },
      async (res) => {
        const header = (name: string): number => {
          const value = Number(res.headers[name]);
          if (!Number.isSafeInteger(value) || value < 0) {
            res.body.destroy();
            throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `the fetch of ${request.partitionId} from ${request.url} lacks a valid ${name} header`, {
              context: { partitionId: request.partitionId },
            });
          }
          return value;
        };
        return {
          attempt: header(FetchHeader.ATTEMPT),
          location: {
            numberOfSubpartitions: header(FetchHeader.SUBPARTITIONS),
            numberOfRegions: header(FetchHeader.REGIONS),
            indexOffset: header(FetchHeader.INDEX_OFFSET),
            indexLength: header(FetchHeader.INDEX_LENGTH),
          },
          contentLength: header('content-length'),
          body: res.body,
        };
      },
    );
  }

  /**
   * Asks a server whether it is up (`GET /healthz`, no token), once — no retries: the caller (the
   * master's probe of an excluded server) has its own backoff. Resolves with its answer when it says
   * `ok`; a ShuffleError as for any request otherwise (503 while it shuts down; SHF_ERR_CLOSED once `signal`
   * aborted it).
   */
  async health(url: string, signal?: AbortSignal): Promise<ServerHealth> {
    return this.send({ method: 'GET', url, path: '/healthz', token: '', replayable: false, context: { server: url }, ...(signal === undefined ? {} : { signal }) }, async (res) => {
      const body = (await res.body.json()) as Partial<Record<keyof ServerHealth | 'status', unknown>>;
      if (body.status !== 'ok' || typeof body.serverId !== 'string') {
        throw new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `${url}/healthz did not answer {"status":"ok","serverId":…}`, { retryable: false, context: { server: url } });
      }
      return { serverId: body.serverId, activeStreams: Number(body.activeStreams) || 0, partitions: Number(body.partitions) || 0 };
    });
  }

  /** Releases a partition on one server; with `epoch` (the master's), the server refuses it (SHF_ERR_FENCED) once a newer epoch registered the job. */
  async release(url: string, token: string, jobId: string, partitionId: string, epoch?: number): Promise<void> {
    await this.send(
      { method: 'DELETE', url, path: partitionPath(jobId, partitionId, epoch), token, replayable: true, context: { partitionId, server: url } },
      async (res) => void (await res.body.dump()),
    );
  }

  /** Releases a job's partitions on one server; resolves with how many it released. Fenced as `release` is. */
  async releaseJob(url: string, token: string, jobId: string, keepPersistent: boolean, epoch?: number): Promise<number> {
    return this.send({ method: 'DELETE', url, path: jobPath(jobId, keepPersistent, epoch), token, replayable: true, context: { jobId, server: url } }, async (res) => {
      const body = (await res.body.json()) as { released?: unknown };
      return typeof body.released === 'number' ? body.released : 0;
    });
  }

  async list(url: string, token: string, jobId: string): Promise<CommittedPartition[]> {
    return this.send({ method: 'GET', url, path: jobPartitionsPath(jobId), token, replayable: true, context: { jobId, server: url } }, async (res) => {
      const body = (await res.body.json()) as { partitions?: unknown };
      if (!Array.isArray(body.partitions)) throw new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `${url} answered a list without partitions`, { retryable: false });
      return body.partitions.map((p, i) => validateCommittedPartition(p, `partitions[${i}]`));
    });
  }

  close(): Promise<void> {
    this.closed = true;
    this.#closing ??= this.agent.close().catch(() => this.agent.destroy());
    return this.#closing;
  }

  private async send<T>(spec: RequestSpec, handle: (res: Dispatcher.ResponseData) => Promise<T>): Promise<T> {
    const delay = this.options.retryInitialDelayMs;
    // a server this client just found unreachable is tried once, not retried (every reader and writer of
    // its partitions would otherwise pay the whole backoff before moving on to a copy)
    const refused = (this.unreachableUntil.get(spec.url) ?? 0) > Date.now();
    const attempts = refused ? 1 : this.options.retryAttempts;
    try {
      const result = await this.sendTries(spec, handle, attempts, delay);
      if (refused) this.unreachableUntil.delete(spec.url);
      return result;
    } catch (error) {
      if (isShuffleError(error) && error.context['unreachable'] === true) this.unreachableUntil.set(spec.url, Date.now() + UNREACHABLE_MEMORY_MS);
      throw error;
    }
  }

  private async sendTries<T>(spec: RequestSpec, handle: (res: Dispatcher.ResponseData) => Promise<T>, attempts: number, initialDelayMs: number): Promise<T> {
    let delay = initialDelayMs;
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw closedError('shuffle server client');
      try {
        const res = await this.agent.request({
          origin: spec.url,
          path: spec.path,
          method: spec.method,
          headers: { authorization: `Bearer ${spec.token}`, ...spec.headers },
          body: (spec.body?.() ?? null) as Dispatcher.DispatchOptions['body'],
          signal: spec.signal ?? null,
          idempotent: spec.replayable,
        });
        if (res.statusCode >= 400) throw authHint(fromWireResponse(res.statusCode, await readErrorBody(res.body), spec.context), spec.url);
        return await handle(res);
      } catch (raw) {
        const error = this.normalize(raw, spec);
        if (!error.retryable || !spec.replayable || attempt >= attempts || this.closed || spec.signal?.aborted === true) throw error;
        const wait = this.timers.random() * delay;
        this.logger.debug({ server: spec.url, path: spec.path, attempt, waitMs: Math.round(wait), error: error.message }, 'retrying a shuffle server request');
        await this.timers.sleep(wait);
        delay = Math.min(delay * 2, this.options.retryMaxDelayMs);
      }
    }
  }

  /** Any failure as a ShuffleError: retryable for transport trouble and timeouts, CLOSED when aborted. */
  private normalize(error: unknown, spec: RequestSpec): ShuffleError {
    if (isShuffleError(error)) return error;
    const code = codeOf(error);
    const message = `${spec.method} ${spec.url}${spec.path} failed: ${(error as Error)?.message ?? String(error)}`;
    const context: ShuffleErrorContext = { ...spec.context, ...(code === undefined ? {} : { errno: code }) };
    if (code === 'UND_ERR_ABORTED' || (error as Error)?.name === 'AbortError' || code === 'UND_ERR_DESTROYED' || (code === 'UND_ERR_CLOSED' && this.closed)) {
      return new ShuffleError('SHF_ERR_CLOSED', message, { cause: error, context });
    }
    if (code !== undefined && TIMEOUTS[code] !== undefined) {
      return new ShuffleError('SHF_ERR_TIMEOUT', message, { cause: error, context: { ...context, setting: TIMEOUTS[code], unreachable: UNREACHABLE.has(code) } });
    }
    if (code !== undefined && UNREACHABLE.has(code)) {
      return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', message, { cause: error, context: { ...context, unreachable: true } });
    }
    if (code !== undefined && (BROKEN.has(code) || code === 'UND_ERR_CLOSED')) {
      return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', message, { cause: error, context });
    }
    return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', message, { cause: error, context, retryable: false });
  }
}

/** What an error of a request naming one partition attempt carries. */
function targetContext(target: { readonly url: string; readonly partitionId: string; readonly serverId?: string | undefined }): ShuffleErrorContext {
  return { partitionId: target.partitionId, server: target.url, ...(target.serverId === undefined ? {} : { serverId: target.serverId }) };
}

interface RequestSpec {
  readonly method: Dispatcher.HttpMethod;
  readonly url: string;
  readonly path: string;
  readonly token: string;
  readonly headers?: Record<string, string>;
  /** Makes the body afresh for each try. */
  readonly body?: () => unknown;
  readonly replayable: boolean;
  readonly signal?: AbortSignal | undefined;
  readonly context: ShuffleErrorContext;
}

async function readErrorBody(body: Dispatcher.ResponseData['body']): Promise<unknown> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      total += (chunk as Buffer).length;
      if (total > MAX_ERROR_BODY) {
        body.destroy();
        break;
      }
      chunks.push(chunk as Buffer);
    }
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * A token the server refused (401, 403) names the server, and the secret both sides sign and check tokens
 * with: a job master and a shuffle server started with different `WEFT_SHUFFLE_SECRET`s is the usual cause.
 */
function authHint(error: ShuffleError, server: string): ShuffleError {
  if (error.code !== 'SHF_ERR_UNAUTHORIZED' && error.code !== 'SHF_ERR_FORBIDDEN') return error;
  return new ShuffleError(error.code, `${error.message} (from ${server}: is WEFT_SHUFFLE_SECRET, or --secret-file, the same for this process and the shuffle server?)`, { retryable: false, context: { ...error.context, server } });
}
