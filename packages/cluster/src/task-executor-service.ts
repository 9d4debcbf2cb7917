import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { EngineError, isToWorkerCheckpointMessage, type PrestartedWorkers, defaultWorkerExecArgv, prestartWorkers, serializeTaskError } from '@weft/engine';
import { type Logger, noopLogger } from '@weft/shuffle-api';
import { checkSecret } from '@weft/shuffle-remote/redis';
import { BundleCache, bundleResolutionImport } from './bundle-cache.js';
import { CONTROL_UPGRADE, type ExecutorInitMessage, type FromExecutorMessage, type ToExecutorMessage } from './control-protocol.js';
import { ControlSocket } from './control-socket.js';
import { verifyDeployment } from './deployment-signature.js';
import type { ExecutorRecord } from './executor-record.js';
import { type HostConnection, JobHost } from './job-host.js';
import { RedisExecutorRegistry } from './redis-executor-registry.js';
import { RegistryHeartbeat } from './registry-heartbeat.js';
import { resolveTaskExecutorServiceOptions, type ResolvedTaskExecutorServiceOptions, type TaskExecutorServiceOptions } from './task-executor-service-options.js';
import { WEFT_VERSION } from './weft-version.js';

/**
 * A task executor of the cluster (`weft task-executor`, Flink's TaskExecutor): it registers in Redis
 * (ExecutorRecord, renewed every `heartbeatIntervalMs` under a `heartbeatTtlMs` TTL, from a thread of its own: RegistryHeartbeat), serves `GET /healthz` (200 while it takes work, 503 while it drains: readiness),
 * `GET /livez` (200 while the process serves) and control connections (HTTP upgrade to `weft-control/1`) on one port, and takes deployments for any
 * job: a signed `init` (the job's code by bundle hash, its shuffles by reference) makes a JobHost that
 * holds slots and runs the regions the job master deploys in worker processes of its own, one per slot
 * (user code never runs in this process); it keeps one worker process per slot forked ahead of the next job.
 *
 * Refused, logged, nothing run: an unsigned or forged deployment, one from another weft version, one whose
 * bundle is missing or does not match its hash, one when no slot is free or while draining.
 * A job whose job master's connection drops keeps its slots and running tasks for `orphanTimeoutMs`,
 * waiting for a new master of that job (it attaches to the JobHost); then it is closed.
 * `drain()` (SIGTERM): no new job, `draining` told to every job master (they place nothing more here),
 * running tasks finish or are cancelled after `drainTimeoutMs`, connections close, the record goes.
 */
export class TaskExecutorService {
  readonly id: string;
  readonly #options: ResolvedTaskExecutorServiceOptions;
  readonly #logger: Logger;
  readonly #secret: Buffer;
  readonly #registry: RedisExecutorRegistry;
  readonly #cache: BundleCache;
  readonly #hosts = new Set<JobHost>();
  readonly #orphanTimers = new Map<JobHost, ReturnType<typeof setTimeout>>();
  /** How worker processes start: this process's Node options, and the bundles' module resolution. */
  readonly #workerExecArgv: readonly string[];
  /** Worker processes forked ahead of jobs, one per slot (Node and the engine loaded), taken by the next job. */
  readonly #spareWorkers: PrestartedWorkers[] = [];
  readonly #connections = new Set<HostConnection>();
  readonly #incarnation = randomBytes(6).toString('hex');
  readonly #startedAtMs = Date.now();
  #server: Server | undefined;
  #url = '';
  #heartbeat: RegistryHeartbeat | undefined;
  #state: 'created' | 'running' | 'draining' | 'closed' = 'created';
  #closed: Promise<void> | undefined;

  constructor(options: TaskExecutorServiceOptions) {
    this.#options = resolveTaskExecutorServiceOptions(options);
    this.#secret = checkSecret(options.secret, 'secret');
    this.id = this.#options.id ?? `te-${hostname().replace(/[^A-Za-z0-9.-]/g, '-')}-${randomBytes(3).toString('hex')}`;
    this.#logger = (options.logger ?? noopLogger).child({ taskExecutorId: this.id });
    this.#registry = new RedisExecutorRegistry({ url: this.#options.cluster, keyPrefix: this.#options.keyPrefix, setting: 'cluster' }, this.#logger);
    this.#cache = new BundleCache(this.#options.dir);
    this.#workerExecArgv = [...defaultWorkerExecArgv(), '--import', bundleResolutionImport(this.#options.dir)];
  }

  /** The URL job masters are given (`--advertise-url`, else `http://<host>:<port>`). */
  get url(): string {
    return this.#url;
  }

  /** Slots no job holds. */
  get freeSlots(): number {
    let held = 0;
    for (const host of this.#hosts) held += host.slots;
    return Math.max(0, this.#options.slots - held);
  }

  /** Connects to Redis, listens, and registers (its first heartbeat written before it resolves). */
  async start(): Promise<void> {
    await this.#registry.start();
    const server = createServer((request, response) => {
      if (request.method === 'GET' && request.url === '/livez') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: this.id, state: this.#state }));
        return;
      }
      if (request.method === 'GET' && request.url === '/healthz') {
        const ok = this.#state === 'running';
        response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ id: this.id, state: this.#state, slots: this.#options.slots, freeSlots: this.freeSlots, version: WEFT_VERSION }));
        return;
      }
      response.writeHead(404).end();
    });
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => this.#upgrade(request, socket as Socket, head));
    this.#server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#options.port, this.#options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : this.#options.port;
    const host = this.#options.host.includes(':') ? `[${this.#options.host}]` : this.#options.host;
    this.#url = this.#options.advertiseUrl ?? `http://${host}:${port}`;
    this.#state = 'running';
    this.#refillSpareWorkers();
    this.#heartbeat = await RegistryHeartbeat.start(
      { url: this.#options.cluster, keyPrefix: this.#options.keyPrefix, intervalMs: this.#options.heartbeatIntervalMs, ttlMs: this.#options.heartbeatTtlMs, logger: this.#logger },
      this.#record(),
    );
    this.#logger.info({ url: this.#url, slots: this.#options.slots }, 'created -> running');
  }

  /**
   * Stops gracefully (SIGTERM): takes no new job, tells job masters it drains, lets running tasks finish
   * (cancelling what still runs after `drainTimeoutMs`), closes the jobs and their connections,
   * deregisters and stops listening. Idempotent.
   */
  drain(): Promise<void> {
    this.#closed ??= this.#drain();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.drain();
  }

  async #drain(): Promise<void> {
    this.#state = 'draining';
    this.#logger.info({ running: [...this.#hosts].reduce((n, h) => n + h.running, 0) }, 'running -> draining');
    this.#beat();
    for (const connection of this.#connections) connection.send({ type: 'draining' });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#options.drainTimeoutMs)));
    await Promise.race([Promise.all([...this.#hosts].map((h) => h.idle())), timeout]);
    clearTimeout(timer);
    const steps: (() => Promise<void>)[] = [
      async () => {
        for (const t of this.#orphanTimers.values()) clearTimeout(t);
        await Promise.all([...this.#hosts].map((h) => h.close()));
        this.#hosts.clear();
        await Promise.all(this.#spareWorkers.splice(0).map((w) => w.close()));
      },
      async () => {
        for (const connection of this.#connections) connection.end();
      },
      async () => {
        await this.#heartbeat?.stop(true);
      },
      () => new Promise<void>((resolve) => (this.#server === undefined ? resolve() : this.#server.close(() => resolve()))),
      () => this.#registry.close(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (error) {
        this.#logger.warn({ error: (error as Error).message }, 'a step of stopping the task executor failed');
      }
    }
    for (const connection of this.#connections) connection.destroy();
    this.#server?.closeAllConnections();
    this.#state = 'closed';
    this.#logger.info({}, 'draining -> closed');
  }

  #record(): ExecutorRecord {
    return {
      id: this.id,
      advertisedUrl: this.#url,
      host: hostname(),
      slots: this.#options.slots,
      freeSlots: this.#state === 'running' ? this.freeSlots : 0,
      version: WEFT_VERSION,
      pid: process.pid,
      incarnation: this.#incarnation,
      startedAtMs: this.#startedAtMs,
      draining: this.#state !== 'running',
      orphanedJobs: [...this.#orphanTimers.keys()].map((host) => host.jobId),
    };
  }

  /** The record changed (slots, state): the heartbeat thread writes it now and from then on. */
  #beat(): void {
    this.#heartbeat?.update(this.#record());
  }

  #upgrade(request: IncomingMessage, socket: Socket, head: Buffer): void {
    if (request.url !== '/control' || String(request.headers.upgrade ?? '').toLowerCase() !== CONTROL_UPGRADE) {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      return;
    }
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${CONTROL_UPGRADE}\r\nConnection: Upgrade\r\n\r\n`);
    const connection: HostConnection = new ControlSocket<ToExecutorMessage, FromExecutorMessage>(socket, head);
    this.#connections.add(connection);
    let host: JobHost | undefined;
    let initializing = false;
    let shutdown = false;
    connection.onMessage = (message) => {
      if (message.type === 'init') {
        if (initializing || host !== undefined) return;
        initializing = true;
        this.#init(message, connection).then(
          (started) => {
            host = started;
            const location = started.shuffleLocation;
            connection.send({ type: 'ready', slots: started.slots, ...(location === undefined ? {} : { shuffleLocation: location }) });
          },
          (error: unknown) => {
            connection.send({ type: 'init-failed', error: serializeTaskError(error) });
            connection.end();
          },
        );
        return;
      }
      if (host === undefined) return;
      switch (message.type) {
        case 'deploy':
          host.deploy(message, this.#state === 'running' ? undefined : `task executor ${this.id} is draining: it takes no new work`);
          return;
        case 'cancel':
          host.cancel(message.attemptIds, message.reason);
          return;
        case 'update-partition-info':
          host.updatePartitionInfo(message.descriptors);
          return;
        default:
          if (isToWorkerCheckpointMessage(message)) host.checkpointMessage(message);
          return;
        case 'shutdown':
          shutdown = true;
          void this.#release(host).finally(() => connection.end());
          return;
      }
    };
    connection.onClose = (error) => {
      this.#connections.delete(connection);
      if (host === undefined || shutdown || !this.#hosts.has(host)) return;
      host.attach(undefined);
      this.#orphan(host, error);
    };
  }

  /** Checks and starts a job: signature, version, bundle, slots (or a new master of an orphaned job). */
  async #init(init: ExecutorInitMessage, connection: HostConnection): Promise<JobHost> {
    const refuse = (reason: string): EngineError => {
      this.#logger.warn({ jobId: String(init.jobId), from: connection.remoteAddress, reason }, 'deployment refused');
      return new EngineError('WEFT_ERR_DEPLOYMENT_REFUSED', `task executor ${this.id} refused the deployment of job ${String(init.jobId)}: ${reason}`, { context: { taskExecutorId: this.id, reason } });
    };
    if (!verifyDeployment(this.#secret, init)) throw refuse('it is not signed with the shared secret (unsigned or forged; WEFT_SHUFFLE_SECRET / --secret-file must match)');
    if (init.weftVersion !== WEFT_VERSION) throw refuse(`it comes from weft ${init.weftVersion}, this executor runs weft ${WEFT_VERSION}`);
    if (this.#state !== 'running') throw refuse('it is draining');
    for (const orphan of this.#orphanTimers.keys()) {
      if (orphan.jobId === init.jobId && orphan.bundleSha256 === init.bundleSha256 && orphan.fingerprint === init.fingerprint) {
        clearTimeout(this.#orphanTimers.get(orphan));
        this.#orphanTimers.delete(orphan);
        this.#logger.info({ jobId: init.jobId, running: orphan.running }, 'orphaned -> attached: a new job master took the job over; the dead one\'s running tasks are cancelled');
        // the new master resumes from the job's event log: it knows only logged, finished tasks, and the dead
        // master's running attempts could not commit under its epoch anyway, so they stop and free their workers
        orphan.cancelRunning('a new job master took the job over');
        orphan.attach(connection);
        this.#beat();
        return orphan;
      }
    }
    const slots = Math.min(this.freeSlots, Math.max(1, init.slots));
    if (slots === 0) throw refuse(`no free slot (all ${this.#options.slots} held)`);
    const file = await this.#cache.path(init.bundleSha256, (sha) => this.#registry.getBundle(sha));
    if (file === undefined) throw refuse(`its code bundle ${init.bundleSha256} is not in the cluster's Redis, or does not match its hash`);
    const logger = this.#logger.child({ jobId: init.jobId });
    const placeholder = { slots } as JobHost; // holds the slots while the job loads
    this.#hosts.add(placeholder);
    let host: JobHost;
    try {
      const prestarted = this.#spareWorkers.splice(0, slots).flatMap((w) => w.take());
      this.#refillSpareWorkers();
      host = await JobHost.start({ init, bundleFile: file, slots, cwd: existsSync(init.cwd) ? init.cwd : this.#options.dir, logger, prestarted, execArgv: this.#workerExecArgv, peerAddress: this.#peerAddress() });
    } finally {
      this.#hosts.delete(placeholder);
    }
    if (connection.closed || this.#state !== 'running') {
      await host.close();
      throw refuse('it was abandoned while it loaded');
    }
    this.#hosts.add(host);
    host.attach(connection);
    this.#logger.info({ jobId: init.jobId, slots }, 'job started');
    this.#beat();
    return host;
  }

  /** Where other hosts reach this one: `--host` to listen on, the advertised URL's host to name. */
  #peerAddress(): { listenHost: string; advertisedHost: string } {
    const advertised = new URL(this.#url === '' ? `http://${this.#options.host}` : this.#url).hostname.replace(/^\[(.*)\]$/, '$1');
    return { listenHost: this.#options.host, advertisedHost: advertised === '0.0.0.0' || advertised === '::' ? hostname() : advertised };
  }

  /** Forks worker processes until one per slot waits for the next job. */
  #refillSpareWorkers(): void {
    mkdirSync(this.#options.dir, { recursive: true });
    while (this.#state === 'running' && this.#spareWorkers.length < this.#options.slots) {
      this.#spareWorkers.push(prestartWorkers({ workers: 1, cwd: this.#options.dir, execArgv: this.#workerExecArgv, preload: this.#options.preloadModules }));
    }
  }

  #orphan(host: JobHost, error: Error | undefined): void {
    if (this.#state !== 'running') {
      void this.#release(host);
      return;
    }
    this.#logger.warn({ jobId: host.jobId, running: host.running, error: error?.message }, `attached -> orphaned: the job master went away; keeping the job ${this.#options.orphanTimeoutMs} ms for a new one`);
    const timer = setTimeout(() => {
      this.#orphanTimers.delete(host);
      this.#logger.warn({ jobId: host.jobId }, 'orphaned -> released: no new job master came');
      void this.#release(host);
    }, this.#options.orphanTimeoutMs);
    timer.unref();
    this.#orphanTimers.set(host, timer);
    this.#beat();
  }

  async #release(host: JobHost): Promise<void> {
    await host.close();
    this.#hosts.delete(host);
    this.#beat();
  }
}
