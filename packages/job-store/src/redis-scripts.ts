import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script run by EVALSHA, falling back to EVAL when the server has not cached it (e.g. after a restart). */
export class RedisScript {
  readonly #sha: string;
  constructor(
    readonly name: string,
    readonly lua: string,
  ) {
    this.#sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}

/** KEYS: epoch, lease. ARGV: epoch, atMs. Records the lease's renewal while ARGV epoch is the newest: 1, else 0. */
export const RENEW_SCRIPT = new RedisScript(
  'renewLease',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], 'renewedAt', ARGV[2])
return 1`,
);

/** How long a script remembers the token of a call it carried out (LAST_OP_*): longer than any retry of it lasts. */
export const LAST_OP_TTL_MS = 10 * 60 * 1000;

/**
 * KEYS: epoch, lease, runs, last-op. ARGV: jobId, owner, nowMs, ifEpoch ('' for none), token. Takes the
 * next epoch and returns it; with ifEpoch, only while the newest epoch is still that one, else
 * {'moved', newest}. A try whose token is the last open's (an earlier try of the same call went through
 * and its reply was lost) returns the epoch that try took and changes nothing: a call takes one epoch,
 * and is not "moved" by itself.
 */
export const OPEN_SCRIPT = new RedisScript(
  'open',
  `local done = redis.call('GET', KEYS[4])
local mine = 'open:' .. ARGV[5] .. ':'
if done and string.sub(done, 1, #mine) == mine then return tonumber(string.sub(done, #mine + 1)) end
if ARGV[4] ~= '' then
  local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
  if newest ~= tonumber(ARGV[4]) then return {'moved', newest} end
end
local epoch = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], 'owner', ARGV[2], 'takenAt', ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', ARGV[3], ARGV[1])
redis.call('SET', KEYS[4], mine .. epoch, 'PX', ${LAST_OP_TTL_MS})
return epoch`,
);

/**
 * KEYS: epoch, events. ARGV: epoch, seq, atMs, type, data, v. Appends one entry if ARGV epoch is still the
 * newest: {'ok'}, {'duplicate'} (the last entry is this seq by this epoch: an earlier try went through),
 * {'fenced', newest}, or {'conflict', lastSeq}.
 */
export const APPEND_SCRIPT = new RedisScript(
  'append',
  `local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
if newest ~= tonumber(ARGV[1]) then return {'fenced', newest} end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then
  local fields = last[1][2]
  local lastSeq, lastEpoch
  for i = 1, #fields, 2 do
    if fields[i] == 'seq' then lastSeq = tonumber(fields[i + 1]) elseif fields[i] == 'epoch' then lastEpoch = tonumber(fields[i + 1]) end
  end
  if lastSeq ~= nil and lastSeq >= tonumber(ARGV[2]) then
    if lastSeq == tonumber(ARGV[2]) and lastEpoch == tonumber(ARGV[1]) then return {'duplicate', lastSeq} end
    return {'conflict', lastSeq}
  end
end
redis.call('XADD', KEYS[2], '*', 'v', ARGV[6], 'seq', ARGV[2], 'epoch', ARGV[1], 'at', ARGV[3], 'type', ARGV[4], 'data', ARGV[5])
return {'ok', 0}`,
);

/** KEYS: epoch, events. ARGV: epoch, id. Deletes the torn last entry `id` if ARGV epoch is still the newest. */
export const DROP_TAIL_SCRIPT = new RedisScript(
  'dropTail',
  `if tonumber(redis.call('GET', KEYS[1]) or '0') ~= tonumber(ARGV[1]) then return 0 end
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last == 0 or last[1][1] ~= ARGV[2] then return 0 end
return redis.call('XDEL', KEYS[2], ARGV[2])`,
);

/** KEYS: epoch, progress. ARGV: epoch, snapshot JSON, ttlMs. Overwrites the progress while ARGV epoch is the newest: 1, else 0. */
export const PROGRESS_SCRIPT = new RedisScript(
  'publishProgress',
  `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1`,
);

/**
 * KEYS: epoch, events, lease, progress, runs, last-op. ARGV: jobId, ifEpoch ('' for none), token. Deletes
 * the run (the epoch counter stays, one up) and returns 'ok'; with ifEpoch, only while the newest epoch
 * is still that one, else {'moved', newest}. A try whose token is the last delete's (an earlier try went
 * through) returns 'ok' and changes nothing.
 */
export const DELETE_RUN_SCRIPT = new RedisScript(
  'deleteRun',
  `if redis.call('GET', KEYS[6]) == 'delete:' .. ARGV[3] then return 'ok' end
if ARGV[2] ~= '' then
  local newest = tonumber(redis.call('GET', KEYS[1]) or '0')
  if newest ~= tonumber(ARGV[2]) then return {'moved', newest} end
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])
redis.call('INCR', KEYS[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('SET', KEYS[6], 'delete:' .. ARGV[3], 'PX', ${LAST_OP_TTL_MS})
return 'ok'`,
);
