import { EngineError, invalidEngineArgument, type TaskExecutor, type TaskExecutorProvider, type TaskExecutorProviderRequest } from '@weft/engine';
import { type Logger, noopLogger, taskExecutorId } from '@weft/shuffle-api';
import { checkSecret } from '@weft/shuffle-remote/redis';
import { signDeployment } from './deployment-signature.js';
import type { ExecutorRecord } from './executor-record.js';
import { bundleJobModule } from './job-bundle.js';
import { RedisExecutorRegistry } from './redis-executor-registry.js';
import { RemoteTaskExecutor } from './remote-task-executor.js';
import { WEFT_VERSION } from './weft-version.js';

/** How `weft run --cluster` finds and uses the cluster's task executors. */
export interface ClusterExecutorProviderOptions {
  /** The cluster's Redis: `redis://host:port/db`. */
  readonly cluster: string;
  /** The shared secret deployments are signed with (the executors' WEFT_SHUFFLE_SECRET). */
  readonly secret: string | Uint8Array;
  /** @defaultValue 'weft:cluster:' */
  readonly keyPrefix?: string;
  /** How long to wait for a first executor to take the job. @defaultValue 30000 */
  readonly startupTimeoutMs?: number;
  /** How often the registry is read (new executors join, expired ones are lost). @defaultValue 1000 */
  readonly pollIntervalMs?: number;
  /** How often executors send heartbeats on the control connection. @defaultValue 1000 */
  readonly heartbeatIntervalMs?: number;
  /** An executor silent this long on its connection is lost. @defaultValue 15000 */
  readonly heartbeatTimeoutMs?: number;
  /** How long one executor may take to connect and load the job. @defaultValue 60000 */
  readonly executorStartTimeoutMs?: number;
  /** How long the job's code bundle stays in Redis. @defaultValue 7 days */
  readonly bundleTtlMs?: number;
  /** @defaultValue WEFT_VERSION — executors of another version are refused */
  readonly version?: string;
  readonly logger?: Logger;
}

const DEFAULTS = { keyPrefix: 'weft:cluster:', startupTimeoutMs: 30_000, pollIntervalMs: 1000, heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 15_000, executorStartTimeoutMs: 60_000, bundleTtlMs: 7 * 24 * 3600 * 1000 } as const;
const KEYS = new Set(['cluster', 'secret', 'logger', 'version', ...Object.keys(DEFAULTS)]);

/** An executor the provider refused or gave up on, and why (also logged). */
export interface RefusedExecutor {
  readonly id: string;
  readonly advertisedUrl: string;
  readonly reason: string;
}

/**
 * The task executors of a cluster, for one job (an engine TaskExecutorProvider): `start` bundles the job
 * module (job-bundle.ts), stores the bundle in the cluster's Redis by its sha256, reads the registry, and
 * opens a RemoteTaskExecutor to every live executor of this weft version with a free slot, each sent the
 * deployment signed with the shared secret; it resolves once at least one took the job, and fails with
 * WEFT_ERR_NO_TASK_EXECUTOR naming the (redacted) Redis URL when none did within `startupTimeoutMs`.
 * Then, every `pollIntervalMs`, executors that registered since join (`onExecutorJoined`), and one whose
 * record expired or changed incarnation is lost (`destroy`). A lost executor gets no new work until it
 * registers again (its record gone from the registry, then back).
 */
export class ClusterExecutorProvider implements TaskExecutorProvider {
  readonly kind = 'cluster';
  /** Its executors relay the worker protocol's checkpoint messages between their workers and the job master. */
  readonly relaysCheckpoints = true;

  readonly #options: Required<Omit<ClusterExecutorProviderOptions, 'logger'>>;
  readonly #secret: Buffer;
  readonly #logger: Logger;
  readonly #registry: RedisExecutorRegistry;
  /** By record id: the executor connected to it now. */
  readonly #connected = new Map<string, RemoteTaskExecutor>();
  readonly #connecting = new Set<string>();
  /** By record id: the incarnation lost or refused (not connected again while it stays registered). */
  readonly #excluded = new Map<string, string>();
  readonly #all: RemoteTaskExecutor[] = [];
  readonly #refused: RefusedExecutor[] = [];
  #request: TaskExecutorProviderRequest | undefined;
  #bundleSha256 = '';
  #connections = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #polling = false;
  #closed: Promise<void> | undefined;

  constructor(options: ClusterExecutorProviderOptions) {
    for (const key of Object.keys(options)) if (!KEYS.has(key)) throw invalidEngineArgument(key, 'unknown option of the cluster executor provider');
    const given = Object.fromEntries(Object.entries(options).filter(([k, v]) => v !== undefined && k !== 'logger'));
    this.#options = { ...DEFAULTS, version: WEFT_VERSION, ...given } as Required<Omit<ClusterExecutorProviderOptions, 'logger'>>;
    for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
      if (key === 'keyPrefix') continue;
      const value = this.#options[key];
      if (!Number.isInteger(value) || (value as number) < 1) throw invalidEngineArgument(key, `expected an integer >= 1, got ${String(value)}`);
    }
    this.#secret = checkSecret(options.secret, 'secret');
    this.#logger = options.logger ?? noopLogger;
    this.#registry = new RedisExecutorRegistry({ url: options.cluster, keyPrefix: this.#options.keyPrefix, setting: 'cluster' }, this.#logger);
  }

  /** The cluster's Redis URL, password redacted. */
  get description(): string {
    return this.#registry.description;
  }

  /** Every executor lost, the job waits as long for one to register (or come back) as it waited for the first: `startupTimeoutMs`. */
  get rejoinTimeoutMs(): number {
    return this.#options.startupTimeoutMs;
  }

  /** Every executor the job ran on (joined ones included). */
  get executors(): readonly RemoteTaskExecutor[] {
    return this.#all;
  }

  /** Executors refused (another version) or that refused the job, in order. */
  get refused(): readonly RefusedExecutor[] {
    return this.#refused;
  }

  async start(request: TaskExecutorProviderRequest): Promise<readonly TaskExecutor[]> {
    this.#request = request;
    await this.#registry.start();
    const bundle = await bundleJobModule(request.jobModuleUrl);
    this.#bundleSha256 = bundle.sha256;
    await this.#registry.putBundle(bundle.sha256, bundle.code, this.#options.bundleTtlMs);
    const deadline = Date.now() + this.#options.startupTimeoutMs;
    for (;;) {
      await this.#poll();
      if (this.#connected.size > 0) break;
      if (Date.now() >= deadline) {
        const refused = this.#refused.length === 0 ? '' : `; refused: ${this.#refused.map((r) => `${r.id} (${r.reason})`).join('; ')}`;
        throw new EngineError(
          'WEFT_ERR_NO_TASK_EXECUTOR',
          `no task executor of weft ${this.#options.version} took the job in ${this.description} within ${this.#options.startupTimeoutMs} ms (--cluster-startup-timeout); start \`weft task-executor --cluster ${this.description}\`${refused}`,
          { context: { cluster: this.description } },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(this.#options.pollIntervalMs, Math.max(1, deadline - Date.now()))));
    }
    this.#timer = setInterval(() => void this.#poll(), this.#options.pollIntervalMs);
    return [...this.#connected.values()];
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      if (this.#timer !== undefined) clearInterval(this.#timer);
      await Promise.all(this.#all.map((e) => e.close().catch(() => {})));
      await this.#registry.close().catch(() => {});
    })();
    return this.#closed;
  }

  /** One read of the registry: lose executors whose record went, connect new ones. */
  async #poll(): Promise<void> {
    if (this.#polling || this.#closed !== undefined) return;
    this.#polling = true;
    try {
      let live: ExecutorRecord[];
      try {
        live = await this.#registry.listLive();
      } catch (error) {
        this.#logger.warn({ cluster: this.description, error: (error as Error).message }, 'reading the task executor registry failed');
        return;
      }
      const byId = new Map(live.map((r) => [r.id, r]));
      for (const [id, executor] of this.#connected) {
        const record = byId.get(id);
        if (record === undefined || record.incarnation !== executor.record.incarnation) {
          executor.destroy(new Error(record === undefined ? 'its registry record expired (missed heartbeats)' : 'it registered again as a new process'));
        }
      }
      for (const [id, incarnation] of this.#excluded) if (byId.get(id)?.incarnation !== incarnation) this.#excluded.delete(id);
      const jobId = String(this.#request?.jobId);
      // an executor keeping this job for a new master (its old one died) is taken even with no slot free
      const takes = (r: ExecutorRecord): boolean => r.freeSlots > 0 || (r.orphanedJobs ?? []).includes(jobId);
      const fresh = live.filter((r) => !this.#connected.has(r.id) && !this.#connecting.has(r.id) && !r.draining && takes(r) && this.#excluded.get(r.id) !== r.incarnation);
      await Promise.all(fresh.map((record) => this.#connect(record)));
    } finally {
      this.#polling = false;
    }
  }

  async #connect(record: ExecutorRecord): Promise<void> {
    const request = this.#request as TaskExecutorProviderRequest;
    if (record.version !== this.#options.version) {
      this.#refuse(record, `it runs weft ${record.version}, this job master weft ${this.#options.version}`);
      return;
    }
    this.#connecting.add(record.id);
    const n = ++this.#connections;
    const id = taskExecutorId(`${record.id}~${n}`);
    const init = signDeployment(this.#secret, {
      type: 'init',
      executorId: id,
      slots: record.slots,
      jobId: request.jobId,
      bundleSha256: this.#bundleSha256,
      weftVersion: this.#options.version,
      issuedAtMs: Date.now(),
      args: [...request.args],
      parallelism: request.parallelism,
      exchangeMode: request.exchangeMode,
      fingerprint: request.plan.fingerprint,
      // an adaptive plan (--parallelism auto): the executors' workers plan it with the same options and presets
      ...(request.plan.adaptive === undefined ? {} : { adaptive: request.plan.adaptive }),
      pipelined: request.pipelined,
      blocking: request.blocking,
      fileSystems: request.fileSystems,
      ...(request.streamConnectors === undefined || request.streamConnectors.length === 0 ? {} : { streamConnectors: request.streamConnectors }),
      cwd: request.cwd,
      serializer: request.serializer,
      heartbeatIntervalMs: this.#options.heartbeatIntervalMs,
      progressIntervalMs: 250,
      ...(request.checkpointing === undefined ? {} : { checkpointed: true }),
    });
    const wasStarting = this.#timer === undefined;
    try {
      const executor = await RemoteTaskExecutor.connect({
        id,
        record,
        init,
        listener: {
          onTaskEvent: (e, event) => request.listener.onTaskEvent(e, event),
          onExecutorRetiring: (e) => request.listener.onExecutorRetiring?.(e),
          onShuffleLocationChanged: (e) => request.listener.onShuffleLocationChanged?.(e),
          onExecutorLost: (e, error) => {
            if (this.#connected.get(record.id) === executor) this.#connected.delete(record.id);
            this.#excluded.set(record.id, record.incarnation);
            request.listener.onExecutorLost(e, error);
          },
        },
        logger: request.logger,
        startTimeoutMs: this.#options.executorStartTimeoutMs,
        heartbeatTimeoutMs: this.#options.heartbeatTimeoutMs,
        ...(request.checkpointing === undefined ? {} : { checkpointing: request.checkpointing }),
      });
      if (this.#closed !== undefined) {
        await executor.close();
        return;
      }
      this.#connected.set(record.id, executor);
      this.#all.push(executor);
      this.#logger.info({ taskExecutorId: id, url: record.advertisedUrl, slots: executor.slots }, 'task executor took the job');
      if (!wasStarting) request.listener.onExecutorJoined?.(executor);
    } catch (error) {
      this.#refuse(record, (error as Error).message);
    } finally {
      this.#connecting.delete(record.id);
    }
  }

  #refuse(record: ExecutorRecord, reason: string): void {
    this.#excluded.set(record.id, record.incarnation);
    this.#refused.push({ id: record.id, advertisedUrl: record.advertisedUrl, reason });
    this.#logger.warn({ taskExecutorId: record.id, url: record.advertisedUrl, reason }, 'task executor refused');
  }
}
