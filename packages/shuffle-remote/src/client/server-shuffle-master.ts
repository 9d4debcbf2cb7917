import {
  type JobId,
  type JsonValue,
  type JobShuffleContext,
  type Logger,
  type RegisterPartitionRequest,
  ShuffleError,
  type ShuffleFailureReport,
  type ShuffleDescriptor,
  type ShuffleMaster,
  type ShuffleMasterContext,
  type StoredPartition,
  closedError,
  fencedError,
  invalidArgument,
  isShuffleError,
  noopLogger,
  validateEpoch,
  validateId,
  validatePartitionDescriptor,
  validateProducerDescriptor,
} from '@weft/shuffle-api';
import { RedisCommitIndex } from '../coordinator/redis-commit-index.js';
import { RedisConnection } from '../coordinator/redis-connection.js';
import { RedisServerRegistry, type ServerDirectory } from '../coordinator/redis-server-registry.js';
import { LostPartitionNotices, type ServerVerdict } from '../coordinator/lost-partition-notices.js';
import { ServerExclusions } from '../coordinator/server-exclusions.js';
import { ServerPlacement, chooseServers } from '../coordinator/server-placement.js';
import type { CommittedPartition } from '../protocol/committed-partition.js';
import { createJobToken } from '../protocol/job-token.js';
import type { S3BlobStore } from '../storage/s3-blob-store.js';
import { type ResolvedShuffleServerClientOptions, readSecret } from './client-options.js';
import { createTierStore } from './partition-locator.js';
import { SHUFFLE_SERVER_SERVICE_ID, type ServerLocation, type ServerPartitionDetails, checkServerDescriptor } from './server-descriptor.js';
import { ShuffleServerClient } from './shuffle-server-client.js';

/** Spares a descriptor lists: where a writer whose server died moves its partition. */
const SPARES = 2;

/**
 * The longest the check of a server a task could not connect to takes (`reportFailure`, before it tells the
 * job of partitions lost with it): a killed server refuses the connection at once; one that does not answer
 * in this time is left to the registry.
 */
const DEAD_CHECK_TIMEOUT_MS = 300;

/** How many copies of each partition the master asked for and could place (`weft run` states it). */
export interface ReplicationReport {
  /** The `replicas` option. */
  readonly requested: number;
  /** The fewest copies any partition got (`requested` until a partition is registered). */
  readonly used: number;
  /** Servers that could take partitions when a partition got fewer copies than requested, else the latest count. */
  readonly liveServers: number | undefined;
  /** Some partition has two copies on one host: the pool had too few hosts. */
  readonly sameHost: boolean;
}

interface Cluster {
  readonly connection: RedisConnection;
  readonly registry: RedisServerRegistry;
  readonly index: RedisCommitIndex;
  readonly placement: ServerPlacement;
  readonly exclusions: ServerExclusions;
  readonly notices: LostPartitionNotices;
}

/** The servers an error's cause chain says could not be connected to (`context.unreachable`), by URL. */
function unreachableServersOf(error: unknown): Map<string, string | undefined> {
  const found = new Map<string, string | undefined>();
  let current: unknown = error;
  for (let depth = 0; depth < 32 && typeof current === 'object' && current !== null; depth++) {
    const context = (current as { context?: unknown }).context;
    if (typeof context === 'object' && context !== null) {
      const c = context as Record<string, unknown>;
      if (c['unreachable'] === true && typeof c['server'] === 'string') {
        const serverId = typeof c['serverId'] === 'string' ? c['serverId'] : undefined;
        if (!found.has(c['server']) || serverId !== undefined) found.set(c['server'], serverId);
      }
    }
    current = (current as { cause?: unknown }).cause;
  }
  return found;
}

/**
 * The ShuffleMaster of the shuffle-server shuffle. It places each new partition on a live server
 * (load-aware, through the Redis registry; or round-robin over a fixed list) and hands out descriptors
 * carrying the server and the job token (HMAC of the job id) — only the master holds the secret.
 * `listPartitions` reads the cluster's commit index (a new master on the same Redis sees everything
 * committed), keeping partitions whose server is live or whose copy is in the S3 tier; with a fixed
 * list it asks every server. Releases go to the partition's server, and for a vanished server's tiered
 * partitions straight to the tier and the index.
 *
 * With a registry, a server that a task (`reportFailure`) or the master itself (release, list) could not
 * connect to is excluded from placement at once — its record may live on for its TTL — and probed in the
 * background; it is taken back once it answers healthy and is registered (ServerExclusions). Its
 * partitions are not listed meanwhile unless the tier holds them.
 *
 * Fencing (JobShuffleContext.epoch), with a registry: `registerJob` raises the job's epoch in the commit
 * index before it resolves; this master's epoch for the job (the one it registered it with, else the
 * newest it registered a partition with) goes with its releases and `unregisterJob` — checked here
 * before any server is asked, by each server against the same Redis key before it deletes, and in the
 * script that forgets the commit — so once a newer epoch registered the job, they reject with
 * SHF_ERR_FENCED. With a fixed server list (no Redis) there is no shared epoch: releases are not fenced.
 */
export class ServerShuffleMaster implements ShuffleMaster {
  readonly shuffleServiceId = SHUFFLE_SERVER_SERVICE_ID;
  private readonly logger: Logger;
  private secret: Buffer | undefined;
  private client: ShuffleServerClient | undefined;
  private cluster: Cluster | undefined;
  private tier: S3BlobStore | undefined;
  private turn = 0;
  private report: ReplicationReport;
  private started: Promise<void> | undefined;
  private closed = false;
  #closing: Promise<void> | undefined;
  /** This master's job master epoch per job (JobShuffleContext.epoch, else its registrations'). */
  readonly #epochs = new Map<string, number>();

  constructor(
    private readonly options: ResolvedShuffleServerClientOptions,
    context: ShuffleMasterContext = {},
  ) {
    this.logger = (context.logger ?? noopLogger).child({ component: 'shuffle-server-master' });
    this.report = { requested: options.replicas, used: options.replicas, liveServers: undefined, sameHost: false };
  }

  /** Copies per partition: requested, and the fewest placed. */
  get replication(): ReplicationReport {
    return this.report;
  }

  /** Reads the secret and connects to the registry: SHF_ERR_INVALID_CONFIG naming the setting when either fails. */
  start(): Promise<void> {
    this.started ??= (async () => {
      this.secret = readSecret(this.options);
      this.client = new ShuffleServerClient(this.options, this.logger);
      if (this.options.redis !== undefined) {
        const connection = new RedisConnection({ url: this.options.redis, keyPrefix: this.options.redisKeyPrefix, setting: 'redis' }, this.logger);
        await connection.open();
        const registry = new RedisServerRegistry(connection, this.logger);
        const client = this.client;
        const exclusions = new ServerExclusions({
          directory: registry,
          probe: (url) => client.health(url),
          probeInitialDelayMs: this.options.probeInitialDelayMs,
          probeMaxDelayMs: this.options.probeMaxDelayMs,
          onTakenBack: (serverId) => {
            this.cluster?.notices.revive(serverId);
            registry.clearSuspect(serverId).catch((error: unknown) => this.logger.debug({ serverId, error: (error as Error).message }, 'could not clear the reports of a shuffle server'));
          },
          logger: this.logger,
        });
        // what clients reported without a task failing (a writer that moved to a spare, a reader that read
        // a copy): excluded as soon as the list is read, like a reported failure
        const directory: ServerDirectory = {
          listLive: async () => {
            const live = await registry.listLive();
            for (const server of live) if (server.suspect === true) exclusions.exclude(server, 'a client could not connect to it');
            return live;
          },
          get: (serverId) => registry.get(serverId),
        };
        this.cluster = {
          connection,
          registry,
          index: new RedisCommitIndex(connection),
          exclusions,
          placement: new ServerPlacement(directory, {
            refreshIntervalMs: this.options.placementRefreshMs,
            minFreeBytes: this.options.minFreeBytes,
            isExcluded: (serverId) => exclusions.isExcluded(serverId),
            probeExcluded: () => exclusions.probeNow(),
            registryName: connection.description,
          }),
          notices: new LostPartitionNotices({
            listLocations: (jobId) => this.cluster!.index.listLocations(jobId),
            liveServerIds: async () => {
              const placement = this.cluster!.placement;
              return new Set(placement.liveNow(await placement.live(true)).map((server) => server.serverId));
            },
            check: (server) => this.checkDead(server),
            logger: this.logger,
          }),
        };
      }
      if (this.options.tier !== undefined) this.tier = createTierStore(this.options.tier);
    })().catch(async (error: unknown) => {
      this.started = undefined;
      await this.client?.close();
      throw error;
    });
    return this.started;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.closed = true;
    await this.started?.catch(() => undefined);
    this.cluster?.exclusions.close();
    this.cluster?.notices.clear();
    await Promise.allSettled([this.client?.close(), this.cluster?.connection.close(), this.tier?.close()]);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * With a registry, a pool without a live server fails the job here, at once — not at its first
   * partition, which would fail and restart tasks until the restart strategy gives up: non-retryable
   * SHF_ERR_STORAGE_UNAVAILABLE naming the registry's URL.
   */
  async registerJob(context: JobShuffleContext): Promise<void> {
    this.ready();
    const jobId = validateId('jobId', context?.jobId);
    const epoch = validateEpoch('epoch', context.epoch);
    if (this.cluster === undefined) return;
    if (epoch !== undefined) {
      const outcome = await this.cluster.index.registerJob(jobId, epoch);
      if (outcome.status === 'fenced') throw fencedError('registration', { jobId, epoch, newestEpoch: outcome.newestEpoch });
      this.#epochs.set(jobId, epoch);
    }
    this.cluster.notices.register(context);
    const { placement, connection } = this.cluster;
    if (placement.liveNow(await placement.live(true)).length === 0) {
      throw new ShuffleError(
        'SHF_ERR_STORAGE_UNAVAILABLE',
        `no live shuffle server is registered in ${connection.description} (key prefix ${JSON.stringify(connection.prefix)}): start one with \`weft shuffle-server --redis ${connection.description}\`, or check the URL`,
        { retryable: false, context: { setting: 'redis', jobId: context.jobId } },
      );
    }
  }

  /**
   * Excludes from placement, at once, every server the failure's cause chain says could not be connected
   * to (`context.unreachable` with `context.server`, and `context.serverId` or the server found by its
   * URL among the live ones). Resolves for any error, ours or not; without a registry it does nothing.
   *
   * Then, for jobs registered with `partitionsLost`, checks each such server once (`checkDead`, at most
   * DEAD_CHECK_TIMEOUT_MS) and, when its process is gone, tells them — before it resolves — of their
   * committed partitions no readable copy of which is left (LostPartitionNotices): the engine's failover
   * for this failure then re-runs all their producers at once.
   */
  async reportFailure(report: ShuffleFailureReport): Promise<void> {
    if (this.cluster === undefined || this.closed) return;
    try {
      for (const [url, serverId] of unreachableServersOf(report?.error)) {
        const ids = await this.excludeServer(url, serverId, `a task of job ${String(report.jobId)} could not connect`);
        for (const id of ids) await this.cluster.notices.suspect({ serverId: id, url });
      }
    } catch (error) {
      this.logger.warn({ error: (error as Error)?.message ?? String(error) }, 'could not act on a failure report');
    }
  }

  async unregisterJob(jobId: JobId): Promise<void> {
    const { client } = this.ready();
    validateId('jobId', jobId);
    const token = this.tokenOf(jobId);
    const epoch = this.#epochs.get(jobId);
    await this.checkEpoch(jobId, epoch, 'unregisterJob');
    for (const url of await this.serverUrls()) {
      await client.releaseJob(url, token, jobId, true, epoch).catch(async (error: unknown) => {
        if (isShuffleError(error, 'SHF_ERR_FENCED')) throw error;
        this.logger.warn({ jobId, server: url, error: (error as Error).message }, 'could not release a job on a server');
        await this.excludeIfUnreachable(error, 'the master could not connect to release a job');
      });
    }
    await this.checkEpoch(jobId, epoch, 'unregisterJob');
    this.#epochs.delete(jobId);
    this.cluster?.notices.unregister(jobId);
    // what vanished servers left: tier copies and index entries
    const removed = (await this.cluster?.index.removeJob(jobId, true)) ?? [];
    for (const record of removed) if (record.tiered) await this.tier?.delete(record.objectKey).catch(() => undefined);
  }

  async registerPartitionWithProducer(request: RegisterPartitionRequest): Promise<ShuffleDescriptor> {
    this.ready();
    if (typeof request !== 'object' || request === null) throw invalidArgument('request', 'expected an object');
    const jobId = validateId('jobId', request.jobId) as JobId;
    const partition = validatePartitionDescriptor(request.partition);
    const producer = validateProducerDescriptor(request.producer);
    const epoch = validateEpoch('epoch', request.epoch);
    if (partition.partitionType !== 'BLOCKING' && partition.partitionType !== 'BLOCKING_PERSISTENT') {
      throw invalidArgument('partition.partitionType', `the shuffle server stores BLOCKING and BLOCKING_PERSISTENT partitions, not ${partition.partitionType}`);
    }
    if (this.cluster !== undefined) await this.recordRegistration(jobId, partition.partitionId, producer.attempt, epoch);
    if (epoch !== undefined && epoch > (this.#epochs.get(jobId) ?? -1)) this.#epochs.set(jobId, epoch);
    const { servers, spares } = await this.place();
    const [primary, ...replicas] = servers;
    const details: ServerPartitionDetails = {
      serverId: primary!.serverId,
      url: primary!.url,
      token: this.tokenOf(jobId),
      ...(epoch === undefined ? {} : { epoch }),
      ...(replicas.length === 0 ? {} : { replicas }),
      ...(spares.length === 0 ? {} : { spares }),
    };
    return { shuffleServiceId: SHUFFLE_SERVER_SERVICE_ID, jobId, partition, producer, details: details as unknown as JsonValue };
  }

  /**
   * With a commit index: records which attempt may commit the partition (and under which epoch), so a
   * server refuses the claim of an older attempt or epoch; SHF_ERR_FENCED for an epoch older than the
   * job's newest. A commit of another attempt that this registration replaced is released where it lives.
   */
  private async recordRegistration(jobId: JobId, partitionId: string, attempt: number, epoch: number | undefined): Promise<void> {
    const cluster = this.cluster!;
    const outcome = await cluster.index.register({ jobId, partitionId, attempt, epoch });
    if (outcome.status === 'fenced') {
      throw fencedError(`registration of partition ${partitionId}`, { jobId, epoch: epoch ?? 0, newestEpoch: outcome.newestEpoch, partitionId });
    }
    // the replaced attempt's commit and every copy of it
    for (const replaced of outcome.replaced) {
      this.logger.debug({ jobId, partitionId, attempt, replacedAttempt: replaced.attempt, serverId: replaced.serverId }, 'registration replaced an older attempt');
      const url = (await cluster.registry.get(replaced.serverId))?.url;
      if (url !== undefined) {
        await this.client!.release(url, this.tokenOf(jobId), jobId, partitionId).catch((error: unknown) => {
          this.logger.warn({ jobId, partitionId, server: url, error: (error as Error).message }, 'could not release a replaced attempt on its server');
        });
      }
      if (replaced.tiered) await this.tier?.delete(replaced.objectKey).catch(() => undefined);
    }
  }

  /**
   * Releases every copy: on the primary and the replicas the descriptor names and, with a registry, every
   * server the commit index lists (without one, the spares too); then what vanished servers left (tier
   * copies, index).
   */
  async releasePartitionExternally(descriptor: ShuffleDescriptor): Promise<void> {
    const { client } = this.ready();
    const d = checkServerDescriptor(descriptor);
    const { jobId } = d;
    const { partitionId } = d.partition;
    const token = this.tokenOf(jobId);
    const epoch = this.#epochs.get(jobId);
    await this.checkEpoch(jobId, epoch, `release of partition ${partitionId}`, partitionId);
    const locations = (await this.cluster?.index.locations(jobId, partitionId)) ?? [];
    const servers = new Map<string, string>([[d.details.serverId, d.details.url]]);
    // a copy moved to a spare is in the commit index; without one, only asking the spares finds it
    const spares = this.cluster === undefined ? (d.details.spares ?? []) : [];
    for (const s of [...(d.details.replicas ?? []), ...spares]) servers.set(s.serverId, s.url);
    for (const record of locations) if (!servers.has(record.serverId)) servers.set(record.serverId, '');
    for (const [serverId, listed] of servers) {
      const primary = serverId === d.details.serverId;
      // an excluded server is not asked (it refused connections): what it holds goes at unregisterJob, once back
      if (this.cluster?.exclusions.isExcluded(serverId) === true) continue;
      const url = this.cluster !== undefined ? (await this.cluster.registry.get(serverId))?.url : listed;
      if (url === undefined || url === '') continue;
      try {
        await client.release(url, token, jobId, partitionId, epoch);
      } catch (error) {
        if (isShuffleError(error, 'SHF_ERR_FENCED')) throw error;
        // an unreachable copy is forgotten below; without a registry only the primary's failure is the caller's
        const unreachable = isShuffleError(error) && error.context['unreachable'] === true;
        if (!unreachable || (primary && this.cluster === undefined)) throw error;
        await this.excludeIfUnreachable(error, 'the master could not connect to release a partition');
        this.logger.warn({ jobId, partitionId, server: url, error: (error as Error).message }, 'could not release a copy of a partition: its server is unreachable');
      }
    }
    if (this.cluster !== undefined) {
      await this.checkEpoch(jobId, epoch, `release of partition ${partitionId}`, partitionId);
      for (const record of locations) if (record.tiered) await this.tier?.delete(record.objectKey);
      const removed = await this.cluster.index.remove(jobId, partitionId, epoch);
      if (removed.status === 'fenced') throw fencedError(`release of partition ${partitionId}`, { jobId, epoch: epoch ?? 0, newestEpoch: removed.newestEpoch, partitionId });
    }
  }

  /** SHF_ERR_FENCED for `what` when the commit index saw an epoch of the job newer than `epoch` (none: never). */
  private async checkEpoch(jobId: string, epoch: number | undefined, what: string, partitionId?: string): Promise<void> {
    if (epoch === undefined || this.cluster === undefined) return;
    const newest = await this.cluster.index.newestEpoch(jobId);
    if (newest !== undefined && newest > epoch) throw fencedError(what, { jobId, epoch, newestEpoch: newest, ...(partitionId === undefined ? {} : { partitionId }) });
  }

  /**
   * The job's committed partitions, each once: with a registry from the commit index (a copy is kept
   * when its server is live or it is in the S3 tier; the first kept copy is the primary, the other live
   * ones its replicas); with a fixed list from every server, copies of one attempt merged.
   */
  async listPartitions(jobId: JobId): Promise<readonly StoredPartition[]> {
    const { client } = this.ready();
    validateId('jobId', jobId);
    const token = this.tokenOf(jobId);
    let groups: CommittedPartition[][];
    const urls = new Map<string, string>();
    if (this.cluster !== undefined) {
      const live = await this.cluster.placement.live(true);
      // an excluded server's partitions cannot be read now: listed only where the tier holds them
      for (const server of live) if (!this.cluster.exclusions.isExcluded(server.serverId)) urls.set(server.serverId, server.url);
      groups = (await this.cluster.index.listLocations(jobId)).map((copies) => copies.filter((r) => urls.has(r.serverId) || r.tiered)).filter((g) => g.length > 0);
    } else {
      const byAttempt = new Map<string, CommittedPartition[]>();
      for (const url of this.options.servers) {
        for (const record of await client.list(url, token, jobId)) {
          urls.set(record.serverId, url);
          const key = `${record.partitionId}\n${record.attempt}`;
          byAttempt.set(key, [...(byAttempt.get(key) ?? []), record]);
        }
      }
      groups = [...byAttempt.values()];
    }
    return groups.map((copies) => {
      const record = copies[0]!;
      const url = urls.get(record.serverId) ?? (record.descriptor.details as Partial<ServerPartitionDetails> | null)?.url ?? 'http://unknown';
      const replicas: ServerLocation[] = copies.slice(1).flatMap((c) => {
        const at = urls.get(c.serverId);
        return at === undefined ? [] : [{ serverId: c.serverId, url: at }];
      });
      const details: ServerPartitionDetails = { serverId: record.serverId, url, token, ...(replicas.length === 0 ? {} : { replicas }) };
      return {
        descriptor: { ...record.descriptor, shuffleServiceId: SHUFFLE_SERVER_SERVICE_ID, details: details as unknown as JsonValue },
        subpartitionBytes: record.subpartitionBytes,
        totalBytes: record.totalBytes,
      };
    });
  }

  private ready(): { client: ShuffleServerClient } {
    if (this.closed) throw closedError('shuffle master');
    if (this.client === undefined) throw new ShuffleError('SHF_ERR_CLOSED', 'the shuffle master is not started: call start() first');
    return { client: this.client };
  }

  private tokenOf(jobId: string): string {
    return createJobToken(this.secret!, jobId);
  }

  /** The servers for a new partition (primary first, then its replicas) and its spares; notes shortfalls. */
  private async place(): Promise<{ servers: ServerLocation[]; spares: ServerLocation[] }> {
    const count = this.options.replicas;
    const request = { count, distinctHosts: true, spares: SPARES };
    let several;
    if (this.cluster !== undefined) {
      several = await this.cluster.placement.placeSeveral(request);
    } else {
      const list = this.options.servers.map((url, i) => ({ serverId: `static-${i}`, url }));
      const start = this.turn++ % list.length;
      several = chooseServers([...list.slice(start), ...list.slice(0, start)], request);
    }
    const servers = several.servers.map((s) => ({ serverId: s.serverId, url: s.url }));
    const spares = several.spares.map((s) => ({ serverId: s.serverId, url: s.url }));
    if (servers.length < this.report.used) {
      this.logger.warn(
        { requested: count, used: servers.length, liveServers: several.eligible },
        `shuffle replicas: ${count} requested, ${servers.length} used: only ${several.eligible} live shuffle server${several.eligible === 1 ? '' : 's'} can take partitions`,
      );
      this.report = { ...this.report, used: servers.length, liveServers: several.eligible };
    } else if (servers.length === this.report.used && this.report.used === count) {
      this.report = { ...this.report, liveServers: several.eligible };
    }
    if (several.sameHost && !this.report.sameHost) {
      this.logger.warn({ requested: count }, 'shuffle replicas: the pool has fewer hosts than replicas; some copies share a host (different servers)');
      this.report = { ...this.report, sameHost: true };
    }
    return { servers, spares };
  }

  /** Excludes the server(s) an error of the master's own request could not connect to. */
  private async excludeIfUnreachable(error: unknown, reason: string): Promise<void> {
    try {
      for (const [url, serverId] of unreachableServersOf(error)) await this.excludeServer(url, serverId, reason);
    } catch (excludeError) {
      this.logger.warn({ error: (excludeError as Error)?.message ?? String(excludeError) }, 'could not exclude a shuffle server');
    }
  }

  /**
   * One short check (DEAD_CHECK_TIMEOUT_MS) of a server a task could not connect to: `dead` when it refuses
   * connections (its process is gone) and is not registered at another address, or is no longer registered;
   * `alive` when it answers as itself; otherwise (slow, paused, a DNS hiccup, moved, another server at its
   * address) `unknown` — left to the registry and the readers.
   */
  private async checkDead(server: { readonly serverId: string; readonly url: string }): Promise<ServerVerdict> {
    const { client } = this.ready();
    let refused = false;
    try {
      const answer = await client.health(server.url, AbortSignal.timeout(DEAD_CHECK_TIMEOUT_MS));
      if (answer.serverId === server.serverId) return 'alive';
    } catch (error) {
      refused = isShuffleError(error, 'SHF_ERR_STORAGE_UNAVAILABLE') && error.context['unreachable'] === true && error.context['errno'] !== 'EAI_AGAIN';
    }
    const record = await this.cluster?.registry.get(server.serverId);
    if (record === undefined) return 'dead';
    return refused && record.url === server.url ? 'dead' : 'unknown';
  }

  /** Excludes a server by id, or by URL among the live servers when the error did not name its id; returns the ids excluded (or already so). */
  private async excludeServer(url: string, serverId: string | undefined, reason: string): Promise<string[]> {
    const cluster = this.cluster;
    if (cluster === undefined) return [];
    let ids = serverId === undefined ? [] : [serverId];
    if (ids.length === 0) {
      let live = await cluster.placement.live();
      if (!live.some((s) => s.url === url)) live = await cluster.placement.live(true);
      ids = live.filter((s) => s.url === url).map((s) => s.serverId);
    }
    for (const id of ids) cluster.exclusions.exclude({ serverId: id, url }, `${reason} to ${url}`);
    return ids;
  }

  private async serverUrls(): Promise<string[]> {
    if (this.cluster !== undefined) return (await this.cluster.placement.live(true)).map((s) => s.url);
    return [...this.options.servers];
  }
}
