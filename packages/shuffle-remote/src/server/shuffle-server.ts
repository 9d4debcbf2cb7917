import { readFile } from 'node:fs/promises';
import { type IncomingMessage, STATUS_CODES, type Server, type ServerResponse, createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, Server as NetServer } from 'node:net';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { type Clock, invalidConfig, isShuffleError, systemClock } from '@weft/shuffle-api';
import type { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import type { RedisConnection } from '../coordinator/redis-connection.js';
import type { RedisServerRegistry } from '../coordinator/redis-server-registry.js';
import { ServerFaultPoints } from '../coordinator/server-fault-points.js';
import type { ServerRecord } from '../coordinator/server-record.js';
import { bearerToken, verifyJobToken } from '../protocol/job-token.js';
import { type Route, parseRoute, routeJobId } from '../protocol/routes.js';
import { WireError, wireError } from '../protocol/wire-errors.js';
import { handleAbort, handleCommit, handleLease, handleList, handleRelease, handleReleaseJob } from './control-handlers.js';
import { DirectoryLock } from './directory-lock.js';
import { handleFetch } from './fetch-handler.js';
import { sendError, sendJson } from './http-io.js';
import { PartitionStore } from './partition-store.js';
import { handlePush } from './push-handler.js';
import type { ServerContext } from './server-context.js';
import { ServerMetrics } from './server-metrics.js';
import type { ServerTier } from './server-tier.js';
import { type ResolvedShuffleServerOptions, type ShuffleServerOptions, resolveShuffleServerOptions } from './shuffle-server-options.js';

/**
 * The standalone shuffle server (`weft shuffle-server`): an HTTP(S) data plane over `node:http` that
 * stores partitions on local disk in the blocking layout, optionally copies them to an S3 tier, and
 * registers itself in Redis with a heartbeat. See docs/http-api.md for the API.
 *
 * Lifecycle: `startShuffleServer(options)` resolves once it accepts requests (and is registered). `close()`
 * is graceful and memoised: stop accepting, answer new requests on open connections 503, finish the
 * requests in flight (up to shutdownTimeoutMs, then cut them), deregister, close Redis, S3 and files.
 * The server owns its directory alone from before it reads it until the end of `close()` (DirectoryLock:
 * `<dir>/.lock`); a second server on the same directory is refused with SHF_ERR_DIR_LOCKED.
 */
export class ShuffleServer implements AsyncDisposable {
  /** The URL clients use (also published in the registry). */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly metrics: ServerMetrics;
  private readonly ctx: ServerContext;
  private activeStreamCount = 0;
  private inFlight = 0;
  private draining = false;
  private drained: (() => void) | undefined;
  private closing: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly startedAtMs: number;

  private constructor(
    private readonly options: ResolvedShuffleServerOptions,
    private readonly http: Server,
    private readonly lock: DirectoryLock,
    store: PartitionStore,
    tier: ServerTier | undefined,
    private readonly redis: { connection: RedisConnection; registry: RedisServerRegistry; commitIndex: RedisCommitIndex } | undefined,
    clock: Clock,
  ) {
    const address = http.address() as AddressInfo;
    this.port = address.port;
    this.host = options.host;
    this.url = options.advertiseUrl ?? `${options.tls === undefined ? 'http' : 'https'}://${urlHost(options.host)}:${this.port}`;
    this.startedAtMs = clock.now();
    const server = this;
    this.metrics = new ServerMetrics({
      get activeStreams() {
        return server.activeStreamCount;
      },
      get partitions() {
        return store.partitions;
      },
      get diskUsedBytes() {
        return store.diskUsedBytes;
      },
      get tierTransfersActive() {
        return tier?.slots.active ?? 0;
      },
      get tierTransfersWaiting() {
        return tier?.slots.waiting ?? 0;
      },
    });
    this.ctx = {
      options,
      store,
      metrics: this.metrics,
      logger: options.logger,
      clock,
      tier,
      commitIndex: redis?.commitIndex,
      claimant: { pid: process.pid, startedAtMs: this.startedAtMs },
      faultPoint: redis !== undefined && options.faultHooks ? faultPointOf(new ServerFaultPoints(redis.connection), store, options.logger) : undefined,
      streamShareBytes: () => Math.floor(options.streamMemoryBytes / Math.max(1, this.activeStreamCount)),
    };
  }

  /**
   * Starts a server; every configuration problem is SHF_ERR_INVALID_CONFIG naming the option, and a
   * directory another server holds is SHF_ERR_DIR_LOCKED (see DirectoryLock).
   */
  static async start(input: ShuffleServerOptions, clock: Clock = systemClock): Promise<ShuffleServer> {
    const options = resolveShuffleServerOptions(input);
    // the directory is this server's alone, before anything reads its server id or deletes garbage there
    const lock = await DirectoryLock.acquire(options.dir);
    const store = new PartitionStore(options.dir, options.logger, options.syncOnPush);
    let tier: ServerTier | undefined;
    let redis: { connection: RedisConnection; registry: RedisServerRegistry; commitIndex: RedisCommitIndex } | undefined;
    let http: Server | undefined;
    try {
      await store.open();
      // the S3 SDK and ioredis are loaded only when a tier / a registry is configured
      if (options.tier !== undefined) {
        const { ServerTier } = await import('./server-tier.js');
        tier = new ServerTier({ ...options.tier, maxObjectBytes: options.maxBodyBytes });
        await tier.start();
        await deleteTierGarbage(tier, store, options.logger);
      }
      if (options.redis !== undefined) {
        const [{ RedisConnection }, { RedisServerRegistry }, { RedisCommitIndex }] = await Promise.all([
          import('../coordinator/redis-connection.js'),
          import('../coordinator/redis-server-registry.js'),
          import('../coordinator/redis-commit-index.js'),
        ]);
        const connection = new RedisConnection({ url: options.redis, keyPrefix: options.redisKeyPrefix, setting: 'redis' }, options.logger);
        await connection.open();
        const registry = new RedisServerRegistry(connection);
        redis = { connection, registry, commitIndex: new RedisCommitIndex(connection, options.logger, { directory: registry }) };
        const { dropPartitionsTheIndexForgot } = await import('./index-reconciliation.js');
        await dropPartitionsTheIndexForgot({ store, index: redis.commitIndex, tier, logger: options.logger });
      }
      http = await listen(options);
      const server = new ShuffleServer(options, http, lock, store, tier, redis, clock);
      http.on('request', (req: IncomingMessage, res: ServerResponse) => server.onRequest(req, res));
      if (redis !== undefined) {
        await redis.registry.heartbeat(await server.record(), options.heartbeatTtlMs);
        // clients' reports that they could not connect (RedisServerRegistry.reportSuspect) were about an
        // earlier process of this server id (it keeps its id across restarts): this one listens, so masters
        // must not exclude it for them — they would until a probe, up to 30 s of reports later
        await redis.registry.clearSuspect(store.serverId);
        server.heartbeat = setInterval(() => void server.beat(), options.heartbeatIntervalMs);
        server.heartbeat.unref();
      }
      server.sweeper = setInterval(() => void server.sweep(), Math.min(options.uncommittedTtlMs, 60_000));
      server.sweeper.unref();
      options.logger.info({ url: server.url, serverId: store.serverId, dir: options.dir, tier: tier?.description, redis: redis?.connection.description }, 'shuffle server started');
      return server;
    } catch (error) {
      if (http !== undefined) await new Promise((resolve) => http!.close(resolve));
      await Promise.allSettled([store.close(), tier?.close(), redis?.connection.close()]);
      await lock.release().catch(() => undefined);
      throw error;
    }
  }

  get serverId(): string {
    return this.ctx.store.serverId;
  }

  /** Pushes and fetches in progress. */
  get activeStreams(): number {
    return this.activeStreamCount;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async shutdown(): Promise<void> {
    const logger = this.options.logger;
    logger.info({ url: this.url, inFlight: this.inFlight }, 'serving -> draining');
    this.draining = true;
    clearInterval(this.heartbeat);
    clearInterval(this.sweeper);
    // stop listening, but keep the open keep-alive connections (http.Server#close would drop the idle
    // ones): a request sent on one during the drain is answered 503 wire 11 with Connection: close
    const closed = new Promise<void>((resolve) => netServerClose.call(this.http, () => resolve()));
    const redis = this.redis;
    if (redis !== undefined) {
      // stays registered until the requests in flight finish, but marked draining: nothing new is placed on it
      await redis.registry.heartbeat({ ...(await this.record()), draining: true }, this.options.heartbeatTtlMs).catch(() => undefined);
    }
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.shutdownTimeoutMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.http.closeAllConnections();
    this.http.close(); // http.Server's own part: its connection-checking timer
    await closed;
    const steps: Promise<unknown>[] = [];
    if (redis !== undefined) steps.push(redis.registry.deregister(this.serverId).finally(() => redis.connection.close()));
    // the store first: closing it aborts the S3 uploads of uploads nobody committed, which needs the tier's client
    const tier = this.ctx.tier;
    steps.push(this.ctx.store.close().finally(() => tier?.close()));
    const results = await Promise.allSettled(steps);
    // last: a server started on the directory from now on finds it as this one leaves it, and deregistered
    results.push(...(await Promise.allSettled([this.lock.release()])));
    for (const r of results) if (r.status === 'rejected') logger.warn({ error: (r.reason as Error).message }, 'a shutdown step failed');
    logger.info({ url: this.url }, 'draining -> closed');
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    let routeName = 'unknown';
    this.inFlight++;
    res.once('close', () => {
      this.inFlight--;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.metrics.requestDuration.observe({ route: routeName, status: String(res.statusCode) }, seconds);
      if (this.draining && this.inFlight === 0) this.drained?.();
    });
    const dispatch = async (): Promise<void> => {
      if (this.draining) throw wireError(WireError.SHUTTING_DOWN, 'the server is shutting down');
      const route = parseRoute(req.method ?? 'GET', req.url ?? '/');
      routeName = route.kind;
      const jobId = routeJobId(route);
      if (jobId !== undefined) this.authenticate(req, jobId);
      await this.serve(route, req, res);
    };
    dispatch().catch((error: unknown) => {
      const wire = sendError(req, res, error, this.draining);
      if (wire !== undefined) this.metrics.errors.inc({ wire: String(wire) });
      if (!isShuffleError(error) || wire === WireError.INTERNAL.wire) {
        this.options.logger.warn({ route: routeName, error: (error as Error)?.stack ?? String(error) }, 'request failed');
      }
    });
  }

  private async serve(route: Route, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ctx = this.ctx;
    switch (route.kind) {
      case 'healthz':
        return sendJson(res, 200, { status: 'ok', serverId: this.serverId, activeStreams: this.activeStreamCount, partitions: ctx.store.partitions });
      case 'metrics': {
        const text = await this.metrics.text();
        res.writeHead(200, { 'content-type': this.metrics.contentType, 'content-length': Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      case 'push':
        return this.stream(() => handlePush(ctx, req, res, route));
      case 'fetch':
        return this.stream(() => handleFetch(ctx, req, res, route));
      case 'commit':
        return handleCommit(ctx, req, res, route);
      case 'abort':
        return handleAbort(ctx, res, route);
      case 'lease':
        return handleLease(ctx, res, route);
      case 'release':
        return handleRelease(ctx, res, route);
      case 'release-job':
        return handleReleaseJob(ctx, res, route);
      case 'list':
        return handleList(ctx, res, route);
    }
  }

  /** Runs a push or fetch in one of the maxConcurrentStreams slots, or refuses it (503, Retry-After). */
  private async stream(body: () => Promise<void>): Promise<void> {
    if (this.activeStreamCount >= this.options.maxConcurrentStreams) {
      throw wireError(WireError.TOO_MANY_STREAMS, `the server already serves ${this.options.maxConcurrentStreams} streams; retry shortly`, {
        setting: 'maxConcurrentStreams',
      });
    }
    this.activeStreamCount++;
    try {
      await body();
    } finally {
      this.activeStreamCount--;
    }
  }

  private authenticate(req: IncomingMessage, jobId: string): void {
    const verdict = verifyJobToken(this.options.secret, bearerToken(req.headers.authorization), jobId);
    if (verdict === 'unauthorized') throw wireError(WireError.UNAUTHORIZED, 'a valid job token is required (Authorization: Bearer <token>)');
    if (verdict === 'forbidden') throw wireError(WireError.FORBIDDEN, 'the job token does not grant access to this job');
  }

  private async record(): Promise<ServerRecord> {
    const store = this.ctx.store;
    return {
      serverId: store.serverId,
      url: this.url,
      capacityBytes: await store.freeBytes().catch(() => 0),
      diskUsedBytes: Math.max(0, store.diskUsedBytes),
      activeStreams: this.activeStreamCount,
      maxConcurrentStreams: this.options.maxConcurrentStreams,
      partitions: store.partitions,
      tiered: this.ctx.tier !== undefined,
      startedAtMs: this.startedAtMs,
      heartbeatAtMs: this.ctx.clock.now(),
      pid: process.pid,
      hostname: hostname(),
      dir: resolve(this.options.dir),
    };
  }

  private async beat(): Promise<void> {
    if (this.draining || this.redis === undefined) return;
    try {
      await this.redis.registry.heartbeat(await this.record(), this.options.heartbeatTtlMs);
    } catch (error) {
      this.options.logger.warn({ error: (error as Error).message }, 'heartbeat failed');
    }
  }

  private async sweep(): Promise<void> {
    try {
      const dropped = await this.ctx.store.sweep(this.ctx.clock.now(), this.options.uncommittedTtlMs);
      if (dropped > 0) this.options.logger.info({ dropped }, 'deleted pushes nobody committed');
    } catch (error) {
      this.options.logger.warn({ error: (error as Error).message }, 'sweep failed');
    }
  }
}

/**
 * Start-up: the S3 copies of the objects the store found without a commit record (a crash after a copy
 * completed but before its commit was recorded, or during a release) are deleted too.
 */
async function deleteTierGarbage(tier: ServerTier, store: PartitionStore, logger: ResolvedShuffleServerOptions['logger']): Promise<void> {
  let deleted = 0;
  for (const key of store.garbageKeys) {
    try {
      await tier.delete(key);
      deleted++;
    } catch (error) {
      logger.warn({ key, error: (error as Error).message }, 'could not delete the S3 copy of an uncommitted object');
    }
  }
  if (deleted > 0) logger.info({ deleted }, 'deleted the S3 copies of objects nobody committed');
}

const netServerClose = NetServer.prototype.close;

/** The fault hook of a server started with `faultHooks` (see ServerContext.faultPoint). */
function faultPointOf(points: ServerFaultPoints, store: PartitionStore, logger: ResolvedShuffleServerOptions['logger']): NonNullable<ServerContext['faultPoint']> {
  return async (point, jobId, partitionId) => {
    const action = await points.take(store.serverId, point, jobId, partitionId).catch(() => undefined);
    if (action === undefined) return;
    logger.warn({ point, jobId, partitionId, action }, 'armed fault point reached');
    process.kill(process.pid, action === 'kill' ? 'SIGKILL' : 'SIGSTOP');
    if (action === 'kill') await new Promise<never>(() => undefined); // the signal is on its way
  };
}

/** Starts a shuffle server (see ShuffleServer). */
export function startShuffleServer(options: ShuffleServerOptions, clock?: Clock): Promise<ShuffleServer> {
  return ShuffleServer.start(options, clock);
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return hostname();
  return host.includes(':') ? `[${host}]` : host;
}

async function listen(options: ResolvedShuffleServerOptions): Promise<Server> {
  const serverOptions = {
    requestTimeout: options.requestTimeoutMs,
    headersTimeout: options.headersTimeoutMs,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(options.headersTimeoutMs / 2))),
  };
  let server: Server;
  if (options.tls !== undefined) {
    let cert: Buffer;
    let key: Buffer;
    try {
      cert = await readFile(options.tls.certFile);
    } catch (cause) {
      throw invalidConfig('tls.certFile', `cannot read ${options.tls.certFile}: ${(cause as Error).message}`, cause);
    }
    try {
      key = await readFile(options.tls.keyFile);
    } catch (cause) {
      throw invalidConfig('tls.keyFile', `cannot read ${options.tls.keyFile}: ${(cause as Error).message}`, cause);
    }
    try {
      server = createHttpsServer({ ...serverOptions, cert, key }) as unknown as Server;
    } catch (cause) {
      throw invalidConfig('tls', `the certificate or key is not usable: ${(cause as Error).message}`, cause);
    }
  } else {
    server = createHttpServer(serverOptions);
  }
  server.timeout = options.idleTimeoutMs;
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => {
      reject(invalidConfig('port', `cannot listen on ${options.host}:${options.port}: ${error.message}`, error));
    };
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('clientError', (error: Error & { code?: string }, socket) => {
    if (!socket.writable) return socket.destroy();
    // bytes after a complete request that is still being answered: let that answer go out, then hang up;
    // a request cut off inside its body (the client closed or lied about its length) is aborted at once
    const pending = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
    if (pending !== undefined && pending !== null && !pending.writableFinished) {
      if (!pending.req.complete) return socket.destroy();
      pending.shouldKeepAlive = false;
      pending.once('close', () => socket.destroy());
      return;
    }
    // the HTTP parser refused the request (malformed, headers too large, too slow): answer and hang up
    const kind = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? WireError.REQUEST_TIMEOUT : WireError.BAD_REQUEST;
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : kind.httpStatus;
    const body = JSON.stringify({ code: kind.code, wire: kind.wire, message: status === 431 ? 'request headers too large' : 'malformed or incomplete HTTP request' });
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
  return server;
}

