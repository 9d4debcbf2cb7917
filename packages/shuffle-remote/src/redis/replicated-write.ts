import type { Redis } from 'ioredis';
import { ShuffleError } from '@weft/shuffle-api';
import { connectionGeneration } from './connect-redis.js';
import type { ReplicaAckPolicy } from './redis-url.js';

export interface ReplicatedWriteRequest<T> {
  readonly redis: Redis;
  readonly ack: ReplicaAckPolicy;
  /** For messages: the store (its redacted URL) and the operation. */
  readonly description: string;
  readonly operation: string;
  /** The write(s), on `redis`; their replies are returned once replicas hold them. */
  readonly write: (redis: Redis) => Promise<T>;
}

/** The connection changed between a write and its WAIT: the write may be lost with the old primary. */
export class ConnectionChangedError extends Error {
  override readonly name = 'ConnectionChangedError';
}

/**
 * Runs `write`, then — when `ack.minReplicas` > 0 — `WAIT minReplicas replicaTimeoutMs` on the same
 * connection until that many replicas hold every write it sent, up to `replicaTries` times; only then does
 * the write count. Short every time: SHF_ERR_NOT_REPLICATED (not retryable). The connection reconnected
 * in between (a failover, a blip): ConnectionChangedError, a transport failure callers retry — every write
 * we guard is idempotent, so running it again on the new primary is safe.
 */
export async function replicatedWrite<T>(request: ReplicatedWriteRequest<T>): Promise<T> {
  const { redis, ack } = request;
  if (ack.minReplicas === 0) return request.write(redis);
  const generation = connectionGeneration(redis);
  const result = await request.write(redis);
  let replicas = 0;
  const sameConnection = (): void => {
    if (connectionGeneration(redis) === generation) return;
    throw new ConnectionChangedError(`the connection to ${request.description} changed before replicas acknowledged ${request.operation}; retrying it on the current primary`);
  };
  for (let tries = 1; tries <= ack.replicaTries; tries++) {
    sameConnection();
    replicas = Number(await redis.wait(ack.minReplicas, ack.replicaTimeoutMs));
    sameConnection(); // a WAIT answered by another connection says nothing about this write
    if (replicas >= ack.minReplicas) return result;
  }
  throw new ShuffleError(
    'SHF_ERR_NOT_REPLICATED',
    `${request.operation} on ${request.description}: ${replicas} of the ${ack.minReplicas} replicas it needs acknowledged the write within ` +
      `${ack.replicaTries} waits of ${ack.replicaTimeoutMs} ms, so it does not count; check the replicas (INFO replication on the primary) ` +
      'or lower minReplicas in the URL',
    { retryable: false, context: { store: request.description, operation: request.operation, replicas, minReplicas: ack.minReplicas } },
  );
}
