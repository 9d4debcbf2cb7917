/**
 * The Lua scripts behind RedisMetadataStore: each decision (begin, heartbeat, commit, release, expiry,
 * forget) is one script, so it is atomic on the server. Times come from the server's clock (TIME).
 */
const NOW = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

export interface RedisScript {
  readonly name: string;
  readonly keys: number;
  readonly lua: string;
}

// Releases every attempt of a partition (KEYS[rp_attempts] its attempts set, leases, garbage; prefix the
// attempt key prefix) into table \`out\`: attempts already collected are dropped, the others become \`released\`.
const RELEASE_ATTEMPTS = `
local function releaseAttempts(attemptsKey, leasesKey, garbageKey, prefix, out)
  for _, id in ipairs(redis.call('SMEMBERS', attemptsKey)) do
    local key = prefix .. id
    local state = redis.call('HGET', key, 'state')
    if state then
      if redis.call('HGET', key, 'collected') == '1' then
        redis.call('DEL', key)
        redis.call('SREM', garbageKey, id)
      else
        redis.call('HSET', key, 'state', 'released')
        redis.call('ZREM', leasesKey, id)
        redis.call('SADD', garbageKey, id)
        table.insert(out, id)
      end
    end
  end
end`;

// The registration a partition hash holds: its producer and epoch ('' for none), from its descriptor.
const REGISTRATION_OF = `
local function registrationOf(partitionKey)
  local json = redis.call('HGET', partitionKey, 'descriptor')
  if not json then return nil, nil end
  local d = cjson.decode(json)
  local epoch = ''
  if type(d.details) == 'table' and type(d.details.epoch) == 'number' then epoch = string.format('%d', d.details.epoch) end
  return d.producer.producerId, epoch
end`;

/**
 * KEYS: jobs, jobPartitions, partition, partitionAttempts, jobEpoch, leases, garbage.
 * ARGV: jobId, partitionId, descriptor JSON, persistent ('1'/'0'), producerId, epoch ('' for none), attempt key prefix.
 * Returns {'fenced', newest} or {'registered', ...write ids a replaced registration left released}.
 */
export const REGISTER_PARTITION: RedisScript = {
  name: 'weftRegisterPartition',
  keys: 7,
  lua: `
${RELEASE_ATTEMPTS}
${REGISTRATION_OF}
if ARGV[6] ~= '' then
  local newest = redis.call('GET', KEYS[5])
  if newest and tonumber(newest) > tonumber(ARGV[6]) then return {'fenced', newest} end
  redis.call('SET', KEYS[5], ARGV[6])
end
local out = {'registered'}
local producer, epoch = registrationOf(KEYS[3])
if producer and (producer ~= ARGV[5] or epoch ~= ARGV[6]) then
  releaseAttempts(KEYS[4], KEYS[6], KEYS[7], ARGV[7], out)
  redis.call('DEL', KEYS[3], KEYS[4])
end
${NOW}
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], 'descriptor', ARGV[3], 'persistent', ARGV[4])
redis.call('HSETNX', KEYS[3], 'registeredAt', now)
return out`,
};

/** KEYS: partition, partitionAttempts, attempt, leases. ARGV: writeId, jobId, partitionId, producerId, objectKey. */
export const BEGIN_ATTEMPT: RedisScript = {
  name: 'weftBeginAttempt',
  keys: 4,
  lua: `
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not-registered' end
if redis.call('EXISTS', KEYS[3]) == 1 then return 'ok' end
${NOW}
redis.call('HSET', KEYS[3], 'writeId', ARGV[1], 'jobId', ARGV[2], 'partitionId', ARGV[3], 'producerId', ARGV[4],
  'objectKey', ARGV[5], 'state', 'writing', 'startedAt', now, 'heartbeatAt', now, 'closed', 0, 'collected', 0,
  'partitionAttemptsKey', KEYS[2])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[4], now, ARGV[1])
return 'ok'`,
};

/** KEYS: attempt, leases. ARGV: writeId, uploadId ('' for none). */
export const HEARTBEAT: RedisScript = {
  name: 'weftHeartbeat',
  keys: 2,
  lua: `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'missing' end
if state ~= 'committed' then
  ${NOW}
  redis.call('HSET', KEYS[1], 'heartbeatAt', now)
  if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'uploadId', ARGV[2]) end
  if state == 'writing' then redis.call('ZADD', KEYS[2], now, ARGV[1]) end
end
return state`,
};

/** KEYS: attempt, leases, garbage. ARGV: writeId, failure JSON. */
export const FAIL_ATTEMPT: RedisScript = {
  name: 'weftFailAttempt',
  keys: 3,
  lua: `
if redis.call('HGET', KEYS[1], 'state') == 'writing' then
  redis.call('HSET', KEYS[1], 'state', 'failed', 'failure', ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[1])
end
return 1`,
};

/** KEYS: partition, attempt, leases, garbage, jobEpoch. ARGV: writeId, commit JSON, producerId, epoch ('' for none) of the writer's descriptor. */
export const COMMIT: RedisScript = {
  name: 'weftCommit',
  keys: 5,
  lua: `
${REGISTRATION_OF}
local state = redis.call('HGET', KEYS[2], 'state')
local existing = redis.call('HGET', KEYS[1], 'commitWriteId')
local function discard(as)
  if state == 'writing' then
    redis.call('HSET', KEYS[2], 'state', as)
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('SADD', KEYS[4], ARGV[1])
  end
end
-- a newer job master first: what it did since (released this partition, swept this attempt, committed its
-- own attempt) is its doing — the old run learns it was fenced
if ARGV[4] ~= '' then
  local newest = redis.call('GET', KEYS[5])
  if newest and tonumber(newest) > tonumber(ARGV[4]) then
    discard('conflicted')
    return {'epoch-fenced', ARGV[4], newest}
  end
end
if existing then
  if existing == ARGV[1] then return {'committed'} end
  discard('conflicted')
  return {'conflict', existing}
end
if not state then return {'fenced', 'missing'} end
if redis.call('EXISTS', KEYS[1]) == 0 then
  discard('released')
  return {'not-registered'}
end
local producer, epoch = registrationOf(KEYS[1])
if producer ~= ARGV[3] or epoch ~= ARGV[4] then
  discard('conflicted')
  return {'superseded', producer or ''}
end
if state ~= 'writing' then return {'fenced', state} end
${NOW}
redis.call('HSET', KEYS[1], 'commitWriteId', ARGV[1], 'commit', ARGV[2], 'committedAt', now)
redis.call('HSET', KEYS[2], 'state', 'committed', 'heartbeatAt', now)
redis.call('ZREM', KEYS[3], ARGV[1])
return {'committed'}`,
};

// Returns {'fenced', newest} from the script when the job's newest epoch (KEYS[key]) is newer than ARGV[arg] ('' for none: never fenced).
function fenceCheck(key: number, arg: number): string {
  return `if ARGV[${arg}] ~= '' then
  local newest = redis.call('GET', KEYS[${key}])
  if newest and tonumber(newest) > tonumber(ARGV[${arg}]) then return {'fenced', newest} end
end`;
}

/**
 * KEYS: jobs, jobEpoch. ARGV: jobId, epoch ('' for none).
 * Returns {'fenced', newest}, or {'registered'} once the job's newest epoch is raised to `epoch`.
 */
export const REGISTER_JOB: RedisScript = {
  name: 'weftRegisterJob',
  keys: 2,
  lua: `
${fenceCheck(2, 2)}
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('SADD', KEYS[1], ARGV[1])
return {'registered'}`,
};

/**
 * KEYS: partition, partitionAttempts, jobPartitions, leases, garbage, jobEpoch. ARGV: partitionId, attempt
 * key prefix, the releasing master's epoch ('' for none).
 * Returns {'fenced', newest} (nothing released), or {'released', ...write ids now released} (attempts
 * already collected are dropped).
 */
export const RELEASE_PARTITION: RedisScript = {
  name: 'weftReleasePartition',
  keys: 6,
  lua: `
${RELEASE_ATTEMPTS}
${fenceCheck(6, 3)}
local out = {'released'}
releaseAttempts(KEYS[2], KEYS[4], KEYS[5], ARGV[2], out)
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[1])
return out`,
};

/** KEYS: attempt, leases, garbage. ARGV: writeId, cutoff (ms). Marks a `writing` attempt with an old lease `abandoned`. */
export const EXPIRE_ATTEMPT: RedisScript = {
  name: 'weftExpireAttempt',
  keys: 3,
  lua: `
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'writing' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 0
end
if tonumber(redis.call('HGET', KEYS[1], 'heartbeatAt')) < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'state', 'abandoned')
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[1])
  return 1
end
return 0`,
};

/** KEYS: attempt, garbage. ARGV: writeId. */
export const FORGET_ATTEMPT: RedisScript = {
  name: 'weftForgetAttempt',
  keys: 2,
  lua: `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  redis.call('SREM', KEYS[2], ARGV[1])
  return 1
end
if state == 'writing' or state == 'committed' then return 0 end
redis.call('SREM', KEYS[2], ARGV[1])
if state == 'failed' or state == 'abandoned' then
  redis.call('HSET', KEYS[1], 'collected', 1)
  return 1
end
local attempts = redis.call('HGET', KEYS[1], 'partitionAttemptsKey')
if attempts then redis.call('SREM', attempts, ARGV[1]) end
redis.call('DEL', KEYS[1])
return 1`,
};

export const ALL_SCRIPTS: readonly RedisScript[] = [REGISTER_JOB, REGISTER_PARTITION, BEGIN_ATTEMPT, HEARTBEAT, FAIL_ATTEMPT, COMMIT, RELEASE_PARTITION, EXPIRE_ATTEMPT, FORGET_ATTEMPT];
