import type { Redis } from 'ioredis';
import type { CheckpointStore, CompletedCheckpoint } from '@weft/engine';
import { decodeCheckpoint } from './checkpoint-records.js';
import { fencedError } from './event-log-errors.js';
import { RedisScript } from './redis-scripts.js';
import type { StoreRetry } from './retry.js';

/** KEYS: epoch, checkpoint id counter. ARGV: epoch. The next id while ARGV epoch is the newest, else {'fenced', newest}. */
const NEXT_ID_SCRIPT = new RedisScript(
  'nextCheckpointId',
  `local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
if newest ~= tonumber(ARGV[1]) then return {'fenced', newest} end
return {'ok', redis.call('INCR', KEYS[2])}`,
);

/** KEYS: epoch, checkpoints hash. ARGV: epoch, checkpoint id, JSON ('' deletes). {'ok', 0} or {'fenced', newest}. */
const WRITE_SCRIPT = new RedisScript(
  'writeCheckpoint',
  `local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
if newest ~= tonumber(ARGV[1]) then return {'fenced', newest} end
if ARGV[3] == '' then redis.call('HDEL', KEYS[2], ARGV[2]) else redis.call('HSET', KEYS[2], ARGV[2], ARGV[3]) end
return {'ok', 0}`,
);

export interface RedisCheckpointKeys {
  readonly epoch: string;
  readonly ids: string;
  readonly checkpoints: string;
}

/**
 * A job's completed checkpoints in the Redis of its event log (a hash per job next to its Stream, same hash
 * tag), fenced by the job master's epoch in the same Lua script as the write, and acknowledged by a
 * replica (WAIT) before they count when the URL asks for one (`redis+sentinel://`).
 */
export class RedisCheckpointStore implements CheckpointStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisCheckpointKeys,
    private readonly jobId: string,
    private readonly epoch: number,
    private readonly retry: StoreRetry,
    private readonly replicated: <T>(operation: string, write: () => Promise<T>) => Promise<T>,
    private readonly description: string,
  ) {}

  async nextCheckpointId(): Promise<number> {
    const [status, value] = (await this.retry('nextCheckpointId', this.jobId, () => this.replicated('nextCheckpointId', () => NEXT_ID_SCRIPT.run(this.redis, [this.keys.epoch, this.keys.ids], [this.epoch])))) as [string, number];
    if (status === 'fenced') throw fencedError(this.jobId, this.epoch, Number(value));
    return Number(value);
  }

  async addCompleted(checkpoint: CompletedCheckpoint): Promise<void> {
    await this.#write('addCompleted', checkpoint.checkpointId, JSON.stringify(checkpoint));
  }

  async completed(): Promise<CompletedCheckpoint[]> {
    const all = await this.retry('completed', this.jobId, () => this.redis.hgetall(this.keys.checkpoints));
    return Object.values(all)
      .map((raw) => decodeCheckpoint(raw, this.jobId, this.description))
      .sort((a, b) => a.checkpointId - b.checkpointId);
  }

  async remove(checkpointId: number): Promise<void> {
    await this.#write('removeCheckpoint', checkpointId, '');
  }

  async #write(operation: string, checkpointId: number, body: string): Promise<void> {
    const [status, value] = (await this.retry(operation, this.jobId, () => this.replicated(operation, () => WRITE_SCRIPT.run(this.redis, [this.keys.epoch, this.keys.checkpoints], [this.epoch, checkpointId, body])))) as [string, number];
    if (status === 'fenced') throw fencedError(this.jobId, this.epoch, Number(value));
  }
}
