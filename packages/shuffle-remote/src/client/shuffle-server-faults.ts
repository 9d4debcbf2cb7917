import { type Logger, noopLogger } from '@weft/shuffle-api';
import { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import { RedisConnection } from '../coordinator/redis-connection.js';
import { RedisServerRegistry } from '../coordinator/redis-server-registry.js';
import { type ArmServerFaultRequest, ServerFaultPoints } from '../coordinator/server-fault-points.js';
import type { ServerRecord } from '../coordinator/server-record.js';
import type { CommittedPartition } from '../protocol/committed-partition.js';

export interface ShuffleServerFaultsOptions {
  /** The pool's registry: `redis://host:port/db`. */
  readonly redis: string;
  /** @defaultValue 'weft:shuffle-server:' (the servers' default) */
  readonly redisKeyPrefix?: string;
  readonly logger?: Logger;
}

/**
 * What a fault-injection tool needs to know about a shuffle-server pool, and the one thing it may do
 * there: the registry record of a server (its pid, hostname and directory: same machine only), the
 * committed attempt of a partition from the commit index, and arming a fault point on a server (honoured
 * only by servers started with fault hooks: `WEFT_SERVER_FAULT_HOOKS=1`). For tests and operators'
 * drills (`weft run --inject-faults`); not part of the shuffle.
 */
export class ShuffleServerFaults implements AsyncDisposable {
  private constructor(
    private readonly connection: RedisConnection,
    private readonly registry: RedisServerRegistry,
    private readonly index: RedisCommitIndex,
    private readonly points: ServerFaultPoints,
  ) {}

  static async open(options: ShuffleServerFaultsOptions): Promise<ShuffleServerFaults> {
    const connection = new RedisConnection({ url: options.redis, keyPrefix: options.redisKeyPrefix, setting: 'redis' }, options.logger ?? noopLogger);
    await connection.open();
    return new ShuffleServerFaults(connection, new RedisServerRegistry(connection), new RedisCommitIndex(connection), new ServerFaultPoints(connection));
  }

  /** A live server's registry record (undefined once its heartbeat expired). */
  server(serverId: string): Promise<ServerRecord | undefined> {
    return this.registry.get(serverId);
  }

  /** Every live server. */
  servers(): Promise<ServerRecord[]> {
    return this.registry.listLive();
  }

  /** The confirmed commit of a partition, from the cluster's commit index. */
  committed(jobId: string, partitionId: string): Promise<CommittedPartition | undefined> {
    return this.index.lookup(jobId, partitionId);
  }

  arm(request: ArmServerFaultRequest): Promise<void> {
    return this.points.arm(request);
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
