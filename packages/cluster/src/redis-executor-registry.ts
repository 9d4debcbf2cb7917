import { type Logger, noopLogger } from '@weft/shuffle-api';
import { RedisConnection, type RedisConnectionOptions } from '@weft/shuffle-remote/redis';
import { type ExecutorRecord, parseExecutorRecord } from './executor-record.js';

/** @see ClusterOptions.keyPrefix */
export const DEFAULT_CLUSTER_KEY_PREFIX = 'weft:cluster:';

/**
 * The cluster's state in Redis: the task executor registry — each executor writes its record under
 * `executor:<id>` with a TTL at every heartbeat and adds its id to the `executors` set; one whose
 * heartbeats stop disappears when the TTL runs out; deregistering deletes both — and the job code
 * bundles, under `bundle:<sha256>`. Records that do not parse are skipped with a warning (once per value).
 */
export class RedisExecutorRegistry {
  readonly connection: RedisConnection;
  readonly #logger: Logger;
  readonly #reported = new Set<string>();

  constructor(options: RedisConnectionOptions, logger: Logger = noopLogger) {
    this.connection = new RedisConnection({ keyPrefix: DEFAULT_CLUSTER_KEY_PREFIX, ...options }, logger);
    this.#logger = logger;
  }

  /** The Redis URL, password redacted. */
  get description(): string {
    return this.connection.description;
  }

  /** Connects (SHF_ERR_INVALID_CONFIG naming the setting when Redis cannot be reached). */
  async start(): Promise<void> {
    await this.connection.open();
  }

  /** Writes (or refreshes) an executor's record, live for `ttlMs`. */
  async heartbeat(record: ExecutorRecord, ttlMs: number): Promise<void> {
    await this.connection.call('heartbeat', (r) => r.multi().set(this.#executorKey(record.id), JSON.stringify(record), 'PX', ttlMs).sadd(this.connection.key('executors'), record.id).exec());
  }

  async deregister(id: string): Promise<void> {
    await this.connection.call('deregister', (r) => r.multi().del(this.#executorKey(id)).srem(this.connection.key('executors'), id).exec());
  }

  /** Executors whose heartbeat has not expired, in no particular order; expired ids leave the set. */
  async listLive(): Promise<ExecutorRecord[]> {
    return this.connection.call('listLive', async (r) => {
      const ids = await r.smembers(this.connection.key('executors'));
      if (ids.length === 0) return [];
      const values = await r.mget(...ids.map((id) => this.#executorKey(id)));
      const live: ExecutorRecord[] = [];
      const expired: string[] = [];
      ids.forEach((id, i) => {
        const raw = values[i];
        if (raw === null || raw === undefined) {
          expired.push(id);
          return;
        }
        let record: ExecutorRecord | undefined;
        try {
          record = parseExecutorRecord(JSON.parse(raw));
        } catch {
          record = undefined;
        }
        if (record === undefined || record.id !== id) {
          if (!this.#reported.has(raw)) this.#logger.warn({ key: this.#executorKey(id) }, 'skipping a task executor record that is not valid');
          this.#reported.add(raw);
          return;
        }
        live.push(record);
      });
      if (expired.length > 0) await r.srem(this.connection.key('executors'), ...expired);
      return live;
    });
  }

  /** Stores a job code bundle by its sha256 (kept `ttlMs`; storing it again renews it). */
  async putBundle(sha256: string, code: string, ttlMs: number): Promise<void> {
    await this.connection.write('putBundle', (r) => r.set(this.connection.key('bundle', sha256), code, 'PX', ttlMs));
  }

  async getBundle(sha256: string): Promise<string | undefined> {
    const code = await this.connection.call('getBundle', (r) => r.get(this.connection.key('bundle', sha256)));
    return code ?? undefined;
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  #executorKey(id: string): string {
    return this.connection.key('executor', id);
  }
}
