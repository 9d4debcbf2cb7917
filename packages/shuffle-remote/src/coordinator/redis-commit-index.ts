import { type Logger, noopLogger } from '@weft/shuffle-api';
import { type CommittedPartition, validateCommittedPartition } from '../protocol/committed-partition.js';
import { encodeKeySegment } from '../storage/object-key.js';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.js';
import type { ServerDirectory } from './redis-server-registry.js';

/** A further server's copy of the committed attempt (a replica, or a push a writer moved to a spare). */
export interface PartitionCopy {
  readonly serverId: string;
  readonly objectKey: string;
  readonly tiered: boolean;
}

/** Compare-and-set of a partition's two fields (record, copies): '' means absent. 1 when set. */
const SET_IF_UNCHANGED = `
local p = redis.call('HGET', KEYS[1], ARGV[1]) or ''
local c = redis.call('HGET', KEYS[2], ARGV[1]) or ''
if p ~= ARGV[2] or c ~= ARGV[3] then return 0 end
if ARGV[4] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[4]) end
if ARGV[5] == '' then redis.call('HDEL', KEYS[2], ARGV[1]) else redis.call('HSET', KEYS[2], ARGV[1], ARGV[5]) end
return 1`;

export type PublishOutcome = { readonly status: 'committed' } | { readonly status: 'conflict'; readonly winner: CommittedPartition };

/** A copy's outcome: as a publish, or refused as a claim is (another attempt or a newer epoch registered). */
export type CopyOutcome =
  | PublishOutcome
  | { readonly status: 'superseded'; readonly current: string }
  | { readonly status: 'epoch-fenced'; readonly epoch: number; readonly newestEpoch: number };

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
  /** Recorded. `replaced`: the commit of another attempt that this registration took out of the index, once per server holding a copy (its data is garbage). */
  | { readonly status: 'registered'; readonly replaced: readonly CommittedPartition[] }
  | { readonly status: 'fenced'; readonly newestEpoch: number };

/** `<attempt>|<epoch>` ('' for no epoch): what a registration and a commit must agree on. */
export function registrationIdentity(attempt: number, epoch: number | undefined): string {
  return `${attempt}|${epoch === undefined ? '' : String(epoch)}`;
}

// KEYS: registrations, epoch, commits, copies. ARGV: partitionId, identity, epoch ('' for none).
const REGISTER_SCRIPT = `if ARGV[3] ~= '' then
  local newest = redis.call('GET', KEYS[2])
  if newest and tonumber(newest) > tonumber(ARGV[3]) then return {'fenced', newest} end
  redis.call('SET', KEYS[2], ARGV[3])
end
local current = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if current and current ~= ARGV[2] then
  local entry = redis.call('HGET', KEYS[3], ARGV[1])
  local copies = redis.call('HGET', KEYS[4], ARGV[1]) or ''
  redis.call('HDEL', KEYS[4], ARGV[1])
  if entry then
    redis.call('HDEL', KEYS[3], ARGV[1])
    return {'replaced', entry, copies}
  end
end
return {'registered'}`;

// KEYS: epoch. ARGV: epoch. Refused ({'fenced', newest}) when the job saw a newer epoch; else raises it.
const REGISTER_JOB_SCRIPT = `local newest = redis.call('GET', KEYS[1])
if newest and tonumber(newest) > tonumber(ARGV[1]) then return {'fenced', newest} end
redis.call('SET', KEYS[1], ARGV[1])
return {'registered'}`;

// KEYS: commits, copies, epoch. ARGV: partitionId, the remover's epoch ('' for none). Forgets the commit
// and its copies unless the job saw a newer epoch ({'fenced', newest}, nothing removed).
const REMOVE_SCRIPT = `if ARGV[2] ~= '' then
  local newest = redis.call('GET', KEYS[3])
  if newest and tonumber(newest) > tonumber(ARGV[2]) then return {'fenced', newest} end
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return {'removed'}`;

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
 *
 * Copies: when a writer pushes one attempt to several servers (replicas, or a spare it moved to), the
 * first server to commit claims and confirms the record; the others add themselves to `job:<job>:copies`
 * (partition id → JSON list of PartitionCopy) with `addCopy` — the same attempt, never a rival one.
 * `locations` gives the record once per server holding it; a server releasing its copy removes only
 * that one (`removeCopy`: a copy takes the record's place when the record's server goes first).
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
    return this.connection.write('publishCommit', async (r) => {
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
    return this.connection.write('registerPartition', async (r) => {
      const reply = (await r.eval(
        REGISTER_SCRIPT,
        4,
        this.registrationsKey(jobId),
        this.epochKey(jobId),
        this.jobKey(jobId),
        this.copiesKey(jobId),
        partitionId,
        registrationIdentity(attempt, epoch),
        epoch === undefined ? '' : String(epoch),
      )) as string[];
      if (reply[0] === 'fenced') return { status: 'fenced', newestEpoch: Number(reply[1]) } as const;
      const record = reply[0] === 'replaced' ? parseEntry(reply[1])?.record : undefined;
      const replaced = record === undefined ? [] : [record, ...parseCopies(reply[2]).map((c) => ({ ...record, ...c }))];
      return { status: 'registered', replaced } as const;
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
    return this.connection.write('claimCommit', async (r) => {
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
          if (replaced === 'claimed') {
            // the copies of a replaced attempt are not copies of this one
            if (current.record.attempt !== record.attempt) await r.hdel(this.copiesKey(record.jobId), record.partitionId);
            return { status: 'claimed', claim } as const;
          }
          if (replaced !== 'taken') return replaced;
          continue;
        }
        if (tries > 10_000) throw new Error(`partition ${record.partitionId}: a pending commit never resolved`);
        await sleep(Math.min(PENDING_POLL_MS, Math.max(1, current.pending.untilMs - now + 1)));
      }
    });
  }

  /**
   * Step two: the claim becomes the commit. False when it was replaced meanwhile (the commit is lost).
   * Idempotent: a retry finding the entry already confirmed as `record` (a first try that went through
   * before its connection changed) is true.
   */
  async confirm(claim: PendingClaim, record: CommittedPartition): Promise<boolean> {
    const key = this.jobKey(claim.jobId);
    const json = JSON.stringify(record);
    return this.connection.write(
      'confirmCommit',
      async (r) => (await r.eval(CAS_SCRIPT, 1, key, claim.partitionId, claim.entry, json)) === 1 || (await r.hget(key, claim.partitionId)) === json,
    );
  }

  /** Withdraws a claim that was not confirmed (the local commit failed). Idempotent. */
  async abandon(claim: PendingClaim): Promise<void> {
    const key = this.jobKey(claim.jobId);
    await this.connection.write('abandonCommit', (r) => r.eval(CAS_SCRIPT, 1, key, claim.partitionId, claim.entry, ''));
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

  /**
   * Records `record` (committed on its server) as a copy of the partition's committed attempt: published
   * as the record when none is there yet, added to the copies when the record is the same attempt on
   * another server, a conflict when another attempt won. Idempotent.
   */
  async addCopy(record: CommittedPartition): Promise<CopyOutcome> {
    // a copy of an attempt that is no longer the registered one, or of an older epoch, is refused as a claim is
    const epoch = epochOf(record);
    const [registered, newest] = await this.connection.call('checkRegistration', (r) =>
      Promise.all([r.hget(this.registrationsKey(record.jobId), record.partitionId), r.get(this.epochKey(record.jobId))]),
    );
    if (registered !== null && registered !== registrationIdentity(record.attempt, epoch)) return { status: 'superseded', current: registered };
    if (epoch !== undefined && newest !== null && Number(newest) > epoch) return { status: 'epoch-fenced', epoch, newestEpoch: Number(newest) };
    const copy: PartitionCopy = { serverId: record.serverId, objectKey: record.objectKey, tiered: record.tiered };
    const outcome = await this.update<PublishOutcome>('addCopy', record.jobId, record.partitionId, (current, copies) => {
      if (current === undefined) return { record, copies: [], outcome: { status: 'committed' } };
      if (current.attempt !== record.attempt) return { outcome: { status: 'conflict', winner: current } };
      if (current.serverId === record.serverId) {
        return current.tiered || !record.tiered ? { outcome: { status: 'committed' } } : { record, copies, outcome: { status: 'committed' } };
      }
      const kept = copies.filter((c) => c.serverId !== copy.serverId);
      const same = copies.find((c) => c.serverId === copy.serverId);
      if (same !== undefined && same.objectKey === copy.objectKey && same.tiered === copy.tiered) return { outcome: { status: 'committed' } };
      return { copies: [...kept, copy], outcome: { status: 'committed' } };
    });
    return outcome ?? { status: 'committed' };
  }

  /** The committed attempt once per server holding it: the record first, then its copies. */
  async locations(jobId: string, partitionId: string): Promise<CommittedPartition[]> {
    return this.connection.call('lookupCopies', async (r) => {
      const [json, copiesJson] = await Promise.all([r.hget(this.jobKey(jobId), partitionId), r.hget(this.copiesKey(jobId), partitionId)]);
      const record = parse(json);
      return record === undefined ? [] : [record, ...parseCopies(copiesJson).map((c) => ({ ...record, ...c }))];
    });
  }

  /** Every committed partition of a job, once per server holding it (see `locations`). */
  async listLocations(jobId: string): Promise<CommittedPartition[][]> {
    return this.connection.call('listCopies', async (r) => {
      const [all, copies] = await Promise.all([r.hgetall(this.jobKey(jobId)), r.hgetall(this.copiesKey(jobId))]);
      return Object.entries(all).flatMap(([field, json]) => {
        const record = parse(json);
        return record === undefined ? [] : [[record, ...parseCopies(copies[field]).map((c) => ({ ...record, ...c }))]];
      });
    });
  }

  /** Forgets one server's copy of a partition (the record's server: a copy takes its place). Idempotent. */
  async removeCopy(jobId: string, partitionId: string, serverId: string): Promise<void> {
    await this.update('removeCopy', jobId, partitionId, (current, copies) => {
      if (current === undefined) return copies.length === 0 ? {} : { copies: [] };
      if (current.serverId !== serverId) {
        const kept = copies.filter((c) => c.serverId !== serverId);
        return kept.length === copies.length ? {} : { copies: kept };
      }
      const [next, ...others] = copies;
      return next === undefined ? { record: null, copies: [] } : { record: { ...current, ...next }, copies: others };
    });
  }

  /**
   * A job master run registers the job under `epoch`: the job's newest epoch is raised to it in one script,
   * or the registration is refused (`fenced`) when a newer one registered the job or a partition of it.
   */
  async registerJob(jobId: string, epoch: number): Promise<{ readonly status: 'registered' } | { readonly status: 'fenced'; readonly newestEpoch: number }> {
    const reply = (await this.connection.call('registerJob', (r) => r.eval(REGISTER_JOB_SCRIPT, 1, this.epochKey(jobId), String(epoch)))) as string[];
    return reply[0] === 'fenced' ? { status: 'fenced', newestEpoch: Number(reply[1]) } : { status: 'registered' };
  }

  /** The newest job master epoch registered for the job (it outlives the job); undefined when none did. */
  async newestEpoch(jobId: string): Promise<number | undefined> {
    const newest = await this.connection.call('newestEpoch', (r) => r.get(this.epochKey(jobId)));
    return newest === null ? undefined : Number(newest);
  }

  /**
   * Forgets a partition's commit and every copy of it. Idempotent. With `epoch` (the releasing master's):
   * refused (`fenced`, nothing removed) when the job saw a newer one — checked in the same script.
   */
  async remove(jobId: string, partitionId: string, epoch?: number): Promise<{ readonly status: 'removed' } | { readonly status: 'fenced'; readonly newestEpoch: number }> {
    const reply = (await this.connection.call('removeCommit', (r) =>
      r.eval(REMOVE_SCRIPT, 3, this.jobKey(jobId), this.copiesKey(jobId), this.epochKey(jobId), partitionId, epoch === undefined ? '' : String(epoch)),
    )) as string[];
    return reply[0] === 'fenced' ? { status: 'fenced', newestEpoch: Number(reply[1]) } : { status: 'removed' };
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
      const copies = await r.hgetall(this.copiesKey(jobId));
      for (const record of [...removed]) for (const c of parseCopies(copies[record.partitionId])) removed.push({ ...record, ...c });
      if (fields.length > 0) await r.multi().hdel(key, ...fields).hdel(this.copiesKey(jobId), ...fields).exec();
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

  /**
   * Read, decide, compare-and-set (in Redis, atomically against both fields) until nothing changed in
   * between. `decide` returns the new record (null: delete it; undefined: keep) and copies (undefined:
   * keep), and the outcome.
   */
  private async update<T>(
    operation: string,
    jobId: string,
    partitionId: string,
    decide: (record: CommittedPartition | undefined, copies: PartitionCopy[]) => { record?: CommittedPartition | null; copies?: PartitionCopy[]; outcome?: T },
  ): Promise<T | undefined> {
    const keys = [this.jobKey(jobId), this.copiesKey(jobId)];
    return this.connection.write(operation, async (r) => {
      for (let tries = 0; tries < 10; tries++) {
        const [json, copiesJson] = await Promise.all([r.hget(keys[0]!, partitionId), r.hget(keys[1]!, partitionId)]);
        const copies = parseCopies(copiesJson);
        // a pending entry counts: a copy of the attempt being confirmed is a copy of it (its mark is kept)
        const change = decide(parseEntry(json)?.record, copies);
        if (change.record === undefined && change.copies === undefined) return change.outcome;
        const record = change.record === undefined ? (json ?? '') : change.record === null ? '' : JSON.stringify(change.record);
        const nextCopies = change.copies === undefined ? (copiesJson ?? '') : change.copies.length === 0 ? '' : JSON.stringify(change.copies);
        const set = await r.eval(SET_IF_UNCHANGED, 2, keys[0]!, keys[1]!, partitionId, json ?? '', copiesJson ?? '', record, nextCopies);
        if (set === 1) return change.outcome;
      }
      throw new Error(`partition ${partitionId} kept changing while its copies were updated`);
    });
  }

  private copiesKey(jobId: string): string {
    return this.connection.key('job', encodeKeySegment('jobId', jobId), 'copies');
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

function parseCopies(value: string | null | undefined): PartitionCopy[] {
  if (value === null || value === undefined || value === '') return [];
  try {
    const list: unknown = JSON.parse(value);
    if (!Array.isArray(list)) return [];
    return list.filter(
      (c): c is PartitionCopy => typeof c === 'object' && c !== null && typeof c.serverId === 'string' && typeof c.objectKey === 'string' && typeof c.tiered === 'boolean',
    );
  } catch {
    return [];
  }
}
