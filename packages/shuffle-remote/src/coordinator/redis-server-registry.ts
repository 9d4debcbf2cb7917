import { type Logger, noopLogger } from '@weft/shuffle-api';
import { encodeKeySegment } from '../storage/object-key.js';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.js';
import { type ServerRecord, validateServerRecord } from './server-record.js';

/** A server record as read from the registry, with the time its heartbeat had left then. */
export interface LiveServer extends ServerRecord {
  /** Milliseconds until the record expires, as the registry said when it was read (its TTL, not a clock). */
  readonly expiresInMs: number;
}

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
 * Readers drop ids whose record expired from the set as they meet them.
 */
export class RedisServerRegistry implements ServerDirectory {
  readonly connection: RedisConnection;
  private readonly owned: boolean;

  constructor(options: RedisConnectionOptions | RedisConnection, logger: Logger = noopLogger) {
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
      for (const id of ids) tx.get(this.serverKey(id)).pttl(this.serverKey(id));
      const replies = (await tx.exec()) ?? [];
      const live: LiveServer[] = [];
      const expired: string[] = [];
      ids.forEach((id, i) => {
        const record = parse(replies[2 * i]?.[1] as string | null | undefined);
        const ttl = Number(replies[2 * i + 1]?.[1]);
        if (record === undefined || ttl === -2) expired.push(id);
        else live.push({ ...record, expiresInMs: ttl >= 0 ? ttl : Number.MAX_SAFE_INTEGER });
      });
      if (expired.length > 0) await r.srem(this.connection.key('servers'), ...expired);
      return live;
    });
  }

  async get(serverId: string): Promise<ServerRecord | undefined> {
    return this.connection.call('get', async (r) => parse(await r.get(this.serverKey(serverId))));
  }

  async close(): Promise<void> {
    if (this.owned) await this.connection.close();
  }

  private serverKey(serverId: string): string {
    return this.connection.key('server', encodeKeySegment('serverId', serverId));
  }
}

function parse(value: string | null | undefined): ServerRecord | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    return validateServerRecord(JSON.parse(value));
  } catch {
    return undefined;
  }
}
