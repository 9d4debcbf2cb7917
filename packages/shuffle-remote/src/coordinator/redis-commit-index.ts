import { type Logger, noopLogger } from '@weft/shuffle-api';
import { type CommittedPartition, validateCommittedPartition } from '../protocol/committed-partition.js';
import { encodeKeySegment } from '../storage/object-key.js';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.js';
import type { ServerDirectory } from './redis-server-registry.js';

export type PublishOutcome = { readonly status: 'committed' } | { readonly status: 'conflict'; readonly winner: CommittedPartition };

/** Which process of a server claims a commit: its registry record's `pid` and `startedAtMs`. */
export interface CommitClaimant {
  readonly pid: number;
  readonly startedAtMs: number;
}

/** A claim published as pending: hand it to `confirm` once the local commit record is written, or `abandon`. */
export interface PendingClaim {
  readonly jobId: string;
  readonly partitionId: string;
  /** The entry exactly as written (compare-and-set on it). */
  readonly entry: string;
}

export type ClaimOutcome =
  | { readonly status: 'claimed'; readonly claim: PendingClaim }
  | { readonly status: 'conflict'; readonly winner: CommittedPartition }
  /** The partition was registered again for another attempt (or epoch): `current` names it (`<attempt>|<epoch>`). */
  | { readonly status: 'superseded'; readonly current: string }
  /** The partition was registered under `epoch`, and `newestEpoch` registered in its job since. */
  | { readonly status: 'epoch-fenced'; readonly epoch: number; readonly newestEpoch: number };

/** A partition registration, as the master records it: which attempt of it may commit, under which epoch. */
export interface PartitionRegistrationEntry {
  readonly jobId: string;
  readonly partitionId: string;
  readonly attempt: number;
  /** The job master run's epoch, if it gave one. */
  readonly epoch: number | undefined;
}

export type RegistrationOutcome =
  /** Recorded. `replaced`: the commit of another attempt that this registration took out of the index (its data is garbage). */
  | { readonly status: 'registered'; readonly replaced: CommittedPartition | undefined }
  | { readonly status: 'fenced'; readonly newestEpoch: number };

/** `<attempt>|<epoch>` ('' for no epoch): what a registration and a commit must agree on. */
export function registrationIdentity(attempt: number, epoch: number | undefined): string {
  return `${attempt}|${epoch === undefined ? '' : String(epoch)}`;
}

// KEYS: registrations, epoch, commits. ARGV: partitionId, identity, epoch ('' for none).
const REGISTER_SCRIPT = `if ARGV[3] ~= '' then
  local newest = redis.call('GET', KEYS[2])
  if newest and tonumber(newest) > tonumber(ARGV[3]) then return {'fenced', newest} end
  redis.call('SET', KEYS[2], ARGV[3])
end
local current = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if current and current ~= ARGV[2] then
  local entry = redis.call('HGET', KEYS[3], ARGV[1])
  if entry then
    redis.call('HDEL', KEYS[3], ARGV[1])
    return {'replaced', entry}
  end
end
return {'registered'}`;

// KEYS: commits, registrations, epoch. ARGV: partitionId, entry, identity, epoch ('' for none), expected
// entry ('' to write only where there is none). A claim is refused when the partition's registration names
// another attempt or epoch, or a newer epoch registered in the job; partitions never registered here
// (a master without a commit index) are not checked.
const CLAIM_SCRIPT = `local registered = redis.call('HGET', KEYS[2], ARGV[1])
if registered and registered ~= ARGV[3] then return {'superseded', registered} end
if ARGV[4] ~= '' then
  local newest = redis.call('GET', KEYS[3])
  if newest and tonumber(newest) > tonumber(ARGV[4]) then return {'epoch-fenced', newest} end
end
if ARGV[5] == '' then
  if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then return {'claimed'} end
  return {'taken'}
end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[5] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return {'claimed'}
end
return {'taken'}`;

/** Marks an entry as not yet a commit: written by `claim`, removed by `confirm`. */
interface PendingMark {
  /** Redis time (ms) after which the claim no longer counts if unconfirmed. */
  readonly untilMs: number;
  readonly pid: number;
  readonly startedAtMs: number;
}

/** How long a pending claim holds, at most, unconfirmed: a local commit record is one small fsynced file. */
export const DEFAULT_PENDING_COMMIT_MS = 2_000;
/** How often a claim waiting on another server's pending claim looks again. */
const PENDING_POLL_MS = 50;

// compare-and-set of one hash field: replace (or delete, with no new value) only if it still holds `expected`
const CAS_SCRIPT = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
  return 1
end
return 0`;

/**
 * The cluster-wide view of committed partitions, in Redis: one hash per job (`job:<job>:commits`,
 * partition id → CommittedPartition JSON). Masters list a job from it (JobMaster failover) and readers
 * find a vanished server's S3-tiered copy in it; the first attempt to commit a partition wins across
 * servers, not only on one.
 *
 * A server commits in two steps (`claim`, then `confirm` once its local commit record is written): the
 * entry is first written *pending*, marked with the claiming process (pid, start time) and a deadline in
 * Redis time, and counts as the partition's commit only once confirmed. A server that dies between the
 * two steps (SIGKILL, power) leaves a pending entry nobody will confirm; a later claim replaces it once
 * the claimant is no longer the live incarnation of its server in the registry (its record is gone, or
 * names another pid or start time: it restarted) or its deadline has passed (it is dead but its record
 * has not expired yet, or it froze) — waiting for the deadline meanwhile, instead of failing. A claimant
 * that comes back after being replaced finds its `confirm` refused and drops its commit. Lookups and
 * lists never show pending entries.
 */
export class RedisCommitIndex {
  readonly connection: RedisConnection;
  private readonly owned: boolean;
  private readonly directory: ServerDirectory | undefined;
  private readonly pendingMs: number;

  constructor(options: RedisConnectionOptions | RedisConnection, logger: Logger = noopLogger, settings: CommitIndexSettings = {}) {
    this.owned = !(options instanceof RedisConnection);
    this.connection = options instanceof RedisConnection ? options : new RedisConnection(options, logger);
    this.directory = settings.directory;
    this.pendingMs = settings.pendingCommitMs ?? DEFAULT_PENDING_COMMIT_MS;
  }

  async start(): Promise<void> {
    await this.connection.open();
  }

  /**
   * Publishes the commit of a partition this server already holds committed (confirmed at once):
   * idempotent for the same server and attempt (a pending entry of it is confirmed; a tiered copy
   * replaces an untiered one), a conflict when another attempt or server holds the entry.
   */
  async publish(record: CommittedPartition): Promise<PublishOutcome> {
    const key = this.jobKey(record.jobId);
    const json = JSON.stringify(record);
    return this.connection.call('publishCommit', async (r) => {
      for (let tries = 0; tries < 5; tries++) {
        if ((await r.hsetnx(key, record.partitionId, json)) === 1) return { status: 'committed' } as const;
        const raw = await r.hget(key, record.partitionId);
        const current = parseEntry(raw);
        if (current === undefined) continue; // released in between: try again
        if (current.record.serverId === record.serverId && current.record.attempt === record.attempt) {
          if (current.pending !== undefined || (!current.record.tiered && record.tiered)) await r.eval(CAS_SCRIPT, 1, key, record.partitionId, raw as string, json);
          return { status: 'committed' } as const;
        }
        return { status: 'conflict', winner: current.record } as const;
      }
      throw new Error(`partition ${record.partitionId} kept changing while its commit was published`);
    });
  }

  /**
   * Records which attempt of a partition may commit (a master registering it), atomically: refused for an
   * epoch older than the job's newest; a registration of another attempt (or epoch) takes the partition's
   * commit out of the index (returned, so its data can be released) and makes later claims of older
   * attempts `superseded`. The job's newest epoch outlives the job (`removeJob` keeps it).
   */
  async register(registration: PartitionRegistrationEntry): Promise<RegistrationOutcome> {
    const { jobId, partitionId, attempt, epoch } = registration;
    return this.connection.call('registerPartition', async (r) => {
      const reply = (await r.eval(
        REGISTER_SCRIPT,
        3,
        this.registrationsKey(jobId),
        this.epochKey(jobId),
        this.jobKey(jobId),
        partitionId,
        registrationIdentity(attempt, epoch),
        epoch === undefined ? '' : String(epoch),
      )) as string[];
      if (reply[0] === 'fenced') return { status: 'fenced', newestEpoch: Number(reply[1]) } as const;
      return { status: 'registered', replaced: reply[0] === 'replaced' ? parseEntry(reply[1])?.record : undefined } as const;
    });
  }

  /**
   * Step one of a commit: writes the entry pending for `claimant`, unless another attempt holds it
   * (confirmed, or pending and still live: then this waits until it is confirmed — a conflict — or
   * abandoned or stale — replaced), or the partition's registration names another attempt or epoch
   * (`superseded`), or a newer epoch registered in the job (`epoch-fenced`).
   */
  async claim(record: CommittedPartition, claimant: CommitClaimant): Promise<ClaimOutcome> {
    const key = this.jobKey(record.jobId);
    const epoch = epochOf(record);
    const claimScript = async (r: RedisLike, entry: string, expected: string): Promise<ClaimOutcome | 'taken' | 'claimed'> => {
      const reply = (await r.eval(
        CLAIM_SCRIPT,
        3,
        key,
        this.registrationsKey(record.jobId),
        this.epochKey(record.jobId),
        record.partitionId,
        entry,
        registrationIdentity(record.attempt, epoch),
        epoch === undefined ? '' : String(epoch),
        expected,
      )) as string[];
      if (reply[0] === 'superseded') return { status: 'superseded', current: reply[1] ?? '' };
      if (reply[0] === 'epoch-fenced') return { status: 'epoch-fenced', epoch: epoch ?? 0, newestEpoch: Number(reply[1]) };
      return reply[0] === 'claimed' ? 'claimed' : 'taken';
    };
    return this.connection.call('claimCommit', async (r) => {
      for (let tries = 0; ; tries++) {
        const now = await redisNowMs(r);
        const mark: PendingMark = { untilMs: now + this.pendingMs, pid: claimant.pid, startedAtMs: claimant.startedAtMs };
        const entry = JSON.stringify({ ...record, pending: mark });
        const claim: PendingClaim = { jobId: record.jobId, partitionId: record.partitionId, entry };
        const first = await claimScript(r, entry, '');
        if (first === 'claimed') return { status: 'claimed', claim } as const;
        if (first !== 'taken') return first;
        const raw = await r.hget(key, record.partitionId);
        const current = parseEntry(raw);
        if (current === undefined) continue; // released in between (or garbage, replaced below)
        if (current.pending === undefined) return { status: 'conflict', winner: current.record } as const;
        const own = current.pending.pid === claimant.pid && current.pending.startedAtMs === claimant.startedAtMs && current.record.serverId === record.serverId;
        if (own || now > current.pending.untilMs || !(await this.claimantLive(current.record.serverId, current.pending))) {
          const replaced = await claimScript(r, entry, raw as string);
          if (replaced === 'claimed') return { status: 'claimed', claim } as const;
          if (replaced !== 'taken') return replaced;
          continue;
        }
        if (tries > 10_000) throw new Error(`partition ${record.partitionId}: a pending commit never resolved`);
        await sleep(Math.min(PENDING_POLL_MS, Math.max(1, current.pending.untilMs - now + 1)));
      }
    });
  }

  /** Step two: the claim becomes the commit. False when it was replaced meanwhile (the commit is lost). */
  async confirm(claim: PendingClaim, record: CommittedPartition): Promise<boolean> {
    const key = this.jobKey(claim.jobId);
    return this.connection.call('confirmCommit', async (r) => (await r.eval(CAS_SCRIPT, 1, key, claim.partitionId, claim.entry, JSON.stringify(record))) === 1);
  }

  /** Withdraws a claim that was not confirmed (the local commit failed). Idempotent. */
  async abandon(claim: PendingClaim): Promise<void> {
    const key = this.jobKey(claim.jobId);
    await this.connection.call('abandonCommit', (r) => r.eval(CAS_SCRIPT, 1, key, claim.partitionId, claim.entry, ''));
  }

  /** Whether the registry still shows `mark`'s process as the live incarnation of `serverId`. */
  private async claimantLive(serverId: string, mark: PendingMark): Promise<boolean> {
    if (this.directory === undefined) return true; // only the deadline can tell
    const server = await this.directory.get(serverId);
    return server !== undefined && server.pid === mark.pid && server.startedAtMs === mark.startedAtMs;
  }

  async lookup(jobId: string, partitionId: string): Promise<CommittedPartition | undefined> {
    return this.connection.call('lookupCommit', async (r) => parse(await r.hget(this.jobKey(jobId), partitionId)));
  }

  async list(jobId: string): Promise<CommittedPartition[]> {
    return this.connection.call('listCommits', async (r) => {
      const all = await r.hgetall(this.jobKey(jobId));
      return Object.values(all).flatMap((json) => parse(json) ?? []);
    });
  }

  /** Forgets a partition's commit (only `attempt`'s, when given). Idempotent. */
  async remove(jobId: string, partitionId: string): Promise<void> {
    await this.connection.call('removeCommit', (r) => r.hdel(this.jobKey(jobId), partitionId));
  }

  /** Forgets every commit of a job (but persistent ones when `keepPersistent`); returns what it removed. */
  async removeJob(jobId: string, keepPersistent: boolean): Promise<CommittedPartition[]> {
    const key = this.jobKey(jobId);
    return this.connection.call('removeJobCommits', async (r) => {
      const all = await r.hgetall(key);
      const removed: CommittedPartition[] = [];
      const fields: string[] = [];
      for (const [field, json] of Object.entries(all)) {
        const record = parseEntry(json)?.record; // pending ones too: their tier copies are garbage as well
        if (keepPersistent && record?.persistent === true) continue;
        fields.push(field);
        if (record !== undefined) removed.push(record);
      }
      if (fields.length > 0) await r.hdel(key, ...fields);
      // registrations go with the job, but persistent partitions' (their commits stay); its epoch stays
      const registrations = await r.hkeys(this.registrationsKey(jobId));
      const kept = new Set(Object.keys(all).filter((field) => !fields.includes(field)));
      const forgotten = registrations.filter((field) => !kept.has(field));
      if (forgotten.length > 0) await r.hdel(this.registrationsKey(jobId), ...forgotten);
      return removed;
    });
  }

  async close(): Promise<void> {
    if (this.owned) await this.connection.close();
  }

  private jobKey(jobId: string): string {
    return this.connection.key('job', encodeKeySegment('jobId', jobId), 'commits');
  }

  /** partition id → `<attempt>|<epoch>` of its current registration. */
  private registrationsKey(jobId: string): string {
    return this.connection.key('job', encodeKeySegment('jobId', jobId), 'registrations');
  }

  /** The newest job master epoch registered for the job. */
  private epochKey(jobId: string): string {
    return this.connection.key('job', encodeKeySegment('jobId', jobId), 'epoch');
  }
}

export interface CommitIndexSettings {
  /** Where a pending claimant's liveness is read; without it only the deadline replaces a stale claim. */
  readonly directory?: ServerDirectory;
  /** How long a pending claim holds unconfirmed, in Redis time. @defaultValue DEFAULT_PENDING_COMMIT_MS */
  readonly pendingCommitMs?: number;
}

/** An entry: the commit, and its pending mark when not yet confirmed. Garbage is undefined. */
function parseEntry(value: string | null | undefined): { record: CommittedPartition; pending: PendingMark | undefined } | undefined {
  if (value === null || value === undefined) return undefined;
  try {
    const parsed = JSON.parse(value) as Record<string, unknown>;
    const mark = parsed['pending'] as Partial<PendingMark> | undefined;
    const pending =
      mark === undefined ? undefined : { untilMs: Number(mark.untilMs), pid: Number(mark.pid), startedAtMs: Number(mark.startedAtMs) };
    if (pending !== undefined) delete parsed['pending'];
    return { record: validateCommittedPartition(parsed), pending };
  } catch {
    return undefined;
  }
}

/** A confirmed commit; pending entries and garbage are undefined. */
function parse(value: string | null | undefined): CommittedPartition | undefined {
  const entry = parseEntry(value);
  return entry === undefined || entry.pending !== undefined ? undefined : entry.record;
}

type RedisLike = { eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown> };

/** The epoch a committed partition's descriptor was registered under (`details.epoch`), if any. */
function epochOf(record: CommittedPartition): number | undefined {
  const details = record.descriptor.details as { epoch?: unknown } | null;
  return typeof details?.epoch === 'number' ? details.epoch : undefined;
}

async function redisNowMs(r: { time(): Promise<(string | number)[]> }): Promise<number> {
  const [seconds, micros] = await r.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
