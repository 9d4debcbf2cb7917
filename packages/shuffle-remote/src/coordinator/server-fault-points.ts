import { encodeKeySegment } from '../storage/object-key.js';
import type { RedisConnection } from './redis-connection.js';

/**
 * Where a shuffle server can be made to fail on purpose, for fault tests (`weft run --inject-faults
 * kill-shuffle-server` / `pause-shuffle-server`): `push` — a push of the partition has started (its
 * request arrived, its body is on the way); `commit` — its commit is published (pending) in the Redis
 * commit index and the local commit record is not yet written; `fetch` — a fetch of it has sent its first
 * piece of data (of a multi-subpartition range: the later subpartitions are still to come).
 */
export const SERVER_FAULT_POINTS = ['push', 'commit', 'fetch'] as const;
export type ServerFaultPoint = (typeof SERVER_FAULT_POINTS)[number];

/** `kill`: the server SIGKILLs itself; `stop`: it SIGSTOPs itself (whoever armed it sends SIGCONT). */
export type ServerFaultAction = 'kill' | 'stop';

export interface ArmServerFaultRequest {
  readonly serverId: string;
  readonly point: ServerFaultPoint;
  readonly jobId: string;
  readonly partitionId: string;
  readonly action: ServerFaultAction;
  /** How long the arming holds if the point is never reached. @defaultValue 600000 */
  readonly ttlMs?: number;
}

/**
 * Fault points armed in Redis, one key per (server, point, job, partition), taken (read and deleted) by
 * the server when it reaches the point — so each fires once. A server looks only when it was started
 * with fault hooks on (`weft shuffle-server` with `WEFT_SERVER_FAULT_HOOKS=1`, option `faultHooks`):
 * otherwise nothing here is ever read, and arming does nothing.
 */
export class ServerFaultPoints {
  constructor(private readonly connection: RedisConnection) {}

  async arm(request: ArmServerFaultRequest): Promise<void> {
    const key = this.key(request.serverId, request.point, request.jobId, request.partitionId);
    await this.connection.call('armFaultPoint', (r) => r.set(key, request.action, 'PX', request.ttlMs ?? 600_000));
  }

  /** The action armed at this point, removed so it fires once; undefined when none is. */
  async take(serverId: string, point: ServerFaultPoint, jobId: string, partitionId: string): Promise<ServerFaultAction | undefined> {
    const key = this.key(serverId, point, jobId, partitionId);
    const replies = await this.connection.call('takeFaultPoint', (r) => r.multi().get(key).del(key).exec());
    const action = replies?.[0]?.[1];
    return action === 'kill' || action === 'stop' ? action : undefined;
  }

  private key(serverId: string, point: ServerFaultPoint, jobId: string, partitionId: string): string {
    return this.connection.key('fault', encodeKeySegment('serverId', serverId), point, encodeKeySegment('jobId', jobId), encodeKeySegment('partitionId', partitionId));
  }
}
