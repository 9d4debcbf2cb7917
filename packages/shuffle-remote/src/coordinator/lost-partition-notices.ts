import { type JobShuffleContext, type LostPartition, type Logger, type ResultPartitionId, noopLogger } from '@weft/shuffle-api';
import type { CommittedPartition } from '../protocol/committed-partition.js';

/** Whether a server is gone for good, as one short check found it. */
export type ServerVerdict = 'dead' | 'alive' | 'unknown';

/** What the notices need of the cluster. */
export interface LostPartitionNoticesOptions {
  /** Every committed partition of a job, each with all its copies (RedisCommitIndex.listLocations). */
  readonly listLocations: (jobId: string) => Promise<readonly (readonly CommittedPartition[])[]>;
  /** The ids of the servers registered live now (their records not expired). */
  readonly liveServerIds: () => Promise<ReadonlySet<string>>;
  /**
   * One short check of a server a task or the master could not connect to: `dead` when its process is gone
   * (it refuses connections, or it is no longer registered), `alive` when it answers as itself, `unknown`
   * (slow, paused, another server at its address while it is registered elsewhere) otherwise.
   */
  readonly check: (server: { readonly serverId: string; readonly url: string }) => Promise<ServerVerdict>;
  readonly logger?: Logger;
}

/**
 * The server-pool master's side of JobShuffleContext.partitionsLost (Flink's remote shuffle calling
 * `stopTrackingAndReleasePartitions` when a shuffle worker is lost): the jobs registered with a
 * `partitionsLost` callback, and the servers concluded dead. When `suspect` concludes a server dead (its
 * check says so), every such job is told, in one notice, of its committed partitions with a copy there and
 * no readable copy left — none in the S3 tier, and every copy on a server dead or no longer registered. With
 * `--shuffle-replicas 2` one dead server loses nothing: nobody is told. A server is checked once until it
 * is taken back (`revive`); partitions a job commits later are never on a dead server (it is excluded from
 * placement).
 */
export class LostPartitionNotices {
  readonly #jobs = new Map<string, JobShuffleContext>();
  /** Server id → why it was concluded dead. */
  readonly #dead = new Map<string, string>();
  /** Checks under way, by server id (reports of one server's readers come in together). */
  readonly #checking = new Map<string, Promise<void>>();
  readonly #options: LostPartitionNoticesOptions;
  readonly #logger: Logger;

  constructor(options: LostPartitionNoticesOptions) {
    this.#options = options;
    this.#logger = options.logger ?? noopLogger;
  }

  /** Remembers the job when its context carries `partitionsLost` (a later registration replaces it). */
  register(context: JobShuffleContext): void {
    if (typeof context.partitionsLost === 'function') this.#jobs.set(context.jobId, context);
    else this.#jobs.delete(context.jobId);
  }

  /** The job is over: it is told nothing more. */
  unregister(jobId: string): void {
    this.#jobs.delete(jobId);
  }

  isDead(serverId: string): boolean {
    return this.#dead.has(serverId);
  }

  /** The server is back (healthy and registered again): checked again the next time it is suspected. */
  revive(serverId: string): void {
    this.#dead.delete(serverId);
  }

  /**
   * A task or the master could not connect to `server`: unless it is known dead already, or no job listens,
   * it is checked (once for concurrent calls) and, found dead, every listening job told of the partitions
   * lost with it. Resolves once those jobs were told; never rejects.
   */
  suspect(server: { readonly serverId: string; readonly url: string }): Promise<void> {
    if (this.#jobs.size === 0 || this.#dead.has(server.serverId)) return Promise.resolve();
    let checking = this.#checking.get(server.serverId);
    if (checking === undefined) {
      checking = this.#suspect(server)
        .catch((error: unknown) => this.#logger.warn({ serverId: server.serverId, error: (error as Error)?.message ?? String(error) }, 'could not tell jobs of the partitions a dead shuffle server held'))
        .finally(() => this.#checking.delete(server.serverId));
      this.#checking.set(server.serverId, checking);
    }
    return checking;
  }

  clear(): void {
    this.#jobs.clear();
    this.#dead.clear();
  }

  async #suspect(server: { readonly serverId: string; readonly url: string }): Promise<void> {
    const verdict = await this.#options.check(server);
    if (verdict !== 'dead' || this.#dead.has(server.serverId)) return;
    const reason = `shuffle server ${server.serverId} (${server.url}) is gone`;
    this.#dead.set(server.serverId, reason);
    this.#logger.warn({ serverId: server.serverId, server: server.url }, 'shuffle server excluded -> dead: telling jobs of the partitions only it held');
    const live = await this.#options.liveServerIds();
    const readable = (copy: CommittedPartition): boolean => copy.tiered || (live.has(copy.serverId) && !this.#dead.has(copy.serverId));
    for (const [jobId, context] of [...this.#jobs]) {
      const groups = await this.#options.listLocations(jobId);
      const lost: LostPartition[] = [];
      for (const copies of groups) {
        if (!copies.some((c) => c.serverId === server.serverId) || copies.some(readable)) continue;
        const { partitionId, attempt } = copies[0]!;
        lost.push({ partitionId: partitionId as ResultPartitionId, attempt });
      }
      if (lost.length === 0 || this.#jobs.get(jobId) !== context) continue;
      this.#logger.info({ jobId, serverId: server.serverId, partitions: lost.length }, 'partitions lost with a dead shuffle server');
      try {
        context.partitionsLost?.({ jobId: context.jobId, partitions: lost, reason });
      } catch (error) {
        this.#logger.warn({ jobId, error: (error as Error)?.message ?? String(error) }, 'the job failed to take a notice of lost partitions');
      }
    }
  }
}
