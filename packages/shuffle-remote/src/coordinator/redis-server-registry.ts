import { type Logger, noopLogger } from '@weft/shuffle-api';
import { encodeKeySegment } from '../storage/object-key.js';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.js';
import { type ServerRecord, validateServerRecord } from './server-record.js';

/** A server record as read from the registry, with the time its heartbeat had left then. */
export interface LiveServer extends ServerRecord {
  /** Milliseconds until the record expires, as the registry said when it was read (its TTL, not a clock). */
  readonly expiresInMs: number;
  /** A client reported it unreachable within the last SUSPECT_TTL_MS (`reportSuspect`). */
  readonly suspect?: boolean;
}

/**
 * How long a client's report that a server is unreachable stands in the registry (`reportSuspect`): a
 * master reading it excludes the server and probes it, and clears the report once it takes it back.
 */
export const SUSPECT_TTL_MS = 30_000;

/** Where clients find live shuffle servers. */
export interface ServerDirectory {
  /** Servers whose heartbeat has not expired, in no particular order, each with the time it has left. */
  listLive(): Promise<LiveServer[]>;
  /** One server, if its heartbeat has not expired. */
  get(serverId: string): Promise<ServerRecord | undefined>;
}

/**
 * The registry of shuffle servers in Redis (Celeborn's master role, without a master process): each server
 * writes its record under `server:<id>` with a TTL at every heartbeat, and adds its id to the `servers`
 * set; a server whose heartbeat stopped disappears when the TTL runs out. Deregistering deletes both.
 * Readers drop ids whose record expired from the set as they meet them. A record that is not a valid
 * server record (garbage JSON, a wrong shape, another server's id) is skipped with a logged warning —
 * as if that server were not live — and left where it is (its server overwrites it at its next
 * heartbeat); it never fails a read of the others.
 */
export class RedisServerRegistry implements ServerDirectory {
  readonly connection: RedisConnection;
  private readonly owned: boolean;
  /** Keys whose garbage was already reported, with the value reported: warned once per value. */
  private readonly reported = new Map<string, string>();

  constructor(
    options: RedisConnectionOptions | RedisConnection,
    private readonly logger: Logger = noopLogger,
  ) {
    this.owned = !(options instanceof RedisConnection);
    this.connection = options instanceof RedisConnection ? options : new RedisConnection(options, logger);
  }

  get description(): string {
    return this.connection.description;
  }

  /** Connects (SHF_ERR_INVALID_CONFIG when Redis cannot be reached). */
  async start(): Promise<void> {
    await this.connection.open();
  }

  /** Writes (or refreshes) a server's record, live for `ttlMs`. */
  async heartbeat(record: ServerRecord, ttlMs: number): Promise<void> {
    const key = this.serverKey(record.serverId);
    await this.connection.call('heartbeat', (r) =>
      r.multi().set(key, JSON.stringify(record), 'PX', ttlMs).sadd(this.connection.key('servers'), record.serverId).exec(),
    );
  }

  async deregister(serverId: string): Promise<void> {
    await this.connection.call('deregister', (r) => r.multi().del(this.serverKey(serverId)).srem(this.connection.key('servers'), serverId).exec());
  }

  async listLive(): Promise<LiveServer[]> {
    return this.connection.call('listLive', async (r) => {
      const ids = await r.smembers(this.connection.key('servers'));
      if (ids.length === 0) return [];
      // each record with its remaining TTL, in one transaction: expiry from Redis, not from anyone's clock
      const tx = r.multi();
      for (const id of ids) tx.get(this.serverKey(id)).pttl(this.serverKey(id)).exists(this.suspectKey(id));
      const replies = (await tx.exec()) ?? [];
      const live: LiveServer[] = [];
      const expired: string[] = [];
      ids.forEach((id, i) => {
        const value = replies[3 * i]?.[1];
        const ttl = Number(replies[3 * i + 1]?.[1]);
        const suspect = Number(replies[3 * i + 2]?.[1]) === 1;
        if (value === null || value === undefined || ttl === -2) {
          expired.push(id);
          return;
        }
        const record = this.parse(id, value);
        if (record !== undefined) live.push({ ...record, expiresInMs: ttl >= 0 ? ttl : Number.MAX_SAFE_INTEGER, ...(suspect ? { suspect: true } : {}) });
      });
      if (expired.length > 0) await r.srem(this.connection.key('servers'), ...expired);
      return live;
    });
  }

  async get(serverId: string): Promise<ServerRecord | undefined> {
    return this.connection.call('get', async (r) => {
      const value = await r.get(this.serverKey(serverId));
      return value === null ? undefined : this.parse(serverId, value);
    });
  }

  /**
   * A client (a writer that moved to a spare, a reader that read a copy elsewhere: no task failed, so no
   * failure report reaches a master) could not connect to `serverId`: the report stands for `ttlMs`, and
   * masters reading the list exclude the server and probe it.
   */
  async reportSuspect(serverId: string, url: string, ttlMs = SUSPECT_TTL_MS): Promise<void> {
    await this.connection.call('reportSuspect', (r) => r.set(this.suspectKey(serverId), url, 'PX', ttlMs));
  }

  /** Withdraws the reports of `serverId` (a master found it healthy and registered again). */
  async clearSuspect(serverId: string): Promise<void> {
    await this.connection.call('clearSuspect', (r) => r.del(this.suspectKey(serverId)));
  }

  async close(): Promise<void> {
    if (this.owned) await this.connection.close();
  }

  private suspectKey(serverId: string): string {
    return this.connection.key('suspect', encodeKeySegment('serverId', serverId));
  }

  private serverKey(serverId: string): string {
    return this.connection.key('server', encodeKeySegment('serverId', serverId));
  }

  /** The record stored under `serverId`'s key, or undefined (warned once per value) when it is not one. */
  private parse(serverId: string, value: unknown): ServerRecord | undefined {
    let problem: string;
    try {
      if (typeof value !== 'string') throw new Error(`expected a string, got ${typeof value}`);
      const record = validateServerRecord(JSON.parse(value));
      if (record.serverId === serverId) {
        this.reported.delete(serverId);
        return record;
      }
      problem = `it names server ${JSON.stringify(record.serverId)}`;
    } catch (error) {
      problem = (error as Error)?.message ?? String(error);
    }
    const shown = String(value).slice(0, 200);
    if (this.reported.get(serverId) !== shown) {
      if (this.reported.size > 1000) this.reported.clear();
      this.reported.set(serverId, shown);
      this.logger.warn({ serverId, key: this.serverKey(serverId), problem, value: shown }, 'ignoring a shuffle server record that is not valid');
    }
    return undefined;
  }
}
