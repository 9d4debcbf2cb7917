import { type Clock, ShuffleError, systemClock } from '@weft/shuffle-api';
import type { LiveServer, ServerDirectory } from './redis-server-registry.js';

export interface ServerPlacementOptions {
  /** How long a list of live servers is reused before it is read again. @defaultValue 1000 */
  readonly refreshIntervalMs?: number;
  /** A server with less free disk than this gets no new partitions. @defaultValue 0 */
  readonly minFreeBytes?: number;
  readonly clock?: Clock;
}

/**
 * Load-aware placement of new partitions on live servers. A server's load is its reported active streams
 * plus the partitions placed on it since the list was last read, relative to its stream limit; the least
 * loaded server with enough free disk wins, ties going round-robin. A server whose heartbeat expired gets
 * nothing new — even from a list read before it expired: each server is kept only until the time its
 * record had left when the list was read (measured from the start of the read, on this clock) — and
 * one that is draining (shutting down) is skipped too. When no cached server qualifies, the list is read again.
 */
export class ServerPlacement {
  private servers: readonly LiveServer[] = [];
  /** serverId → when (this clock) its record expires, as of the last read. */
  private readonly expiresAtMs = new Map<string, number>();
  private readAtMs = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<{ servers: LiveServer[]; startedAtMs: number }> | undefined;
  private readonly placed = new Map<string, number>();
  private turn = 0;
  private readonly refreshIntervalMs: number;
  private readonly minFreeBytes: number;
  private readonly clock: Clock;

  constructor(
    private readonly directory: ServerDirectory,
    options: ServerPlacementOptions = {},
  ) {
    this.refreshIntervalMs = options.refreshIntervalMs ?? 1_000;
    this.minFreeBytes = options.minFreeBytes ?? 0;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * The servers of the list, read again when the cached list is older than refreshIntervalMs (or
   * `fresh`). A cached server may have expired since: `place()` checks.
   */
  async live(fresh = false): Promise<readonly LiveServer[]> {
    if (!fresh && this.clock.now() - this.readAtMs < this.refreshIntervalMs) return this.servers;
    const startedAtMs = this.clock.now();
    this.refreshing ??= this.directory
      .listLive()
      .then((servers) => ({ servers, startedAtMs }))
      .finally(() => {
        this.refreshing = undefined;
      });
    const read = await this.refreshing;
    if (this.servers !== read.servers) {
      this.servers = read.servers;
      this.readAtMs = this.clock.now();
      this.placed.clear();
      this.expiresAtMs.clear();
      for (const s of read.servers) this.expiresAtMs.set(s.serverId, read.startedAtMs + s.expiresInMs);
    }
    return read.servers;
  }

  /** Picks the server for a new partition; SHF_ERR_STORAGE_UNAVAILABLE (retryable) when none is live. */
  async place(): Promise<LiveServer> {
    let servers = await this.live();
    let eligible = this.eligible(servers);
    if (eligible.length === 0) {
      servers = await this.live(true);
      eligible = this.eligible(servers);
    }
    if (eligible.length === 0) throw this.noServer(servers);
    const ordered = eligible.map((_, i) => eligible[(i + this.turn) % eligible.length]!);
    this.turn = (this.turn + 1) % Math.max(1, eligible.length);
    let best = ordered[0]!;
    let bestLoad = this.loadOf(best);
    for (const server of ordered) {
      const load = this.loadOf(server);
      if (load < bestLoad) {
        best = server;
        bestLoad = load;
      }
    }
    this.placed.set(best.serverId, (this.placed.get(best.serverId) ?? 0) + 1);
    return best;
  }

  private noServer(servers: readonly LiveServer[]): ShuffleError {
    const now = this.clock.now();
    const live = servers.filter((s) => (this.expiresAtMs.get(s.serverId) ?? Number.NEGATIVE_INFINITY) > now);
    if (live.length === 0) {
      return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', 'no live shuffle server is registered (start one with `weft shuffle-server --redis <url>`)');
    }
    if (live.every((s) => s.draining === true)) {
      return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `no live shuffle server takes new partitions: all ${live.length} are shutting down`);
    }
    return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `no live shuffle server has ${this.minFreeBytes} free bytes (minFreeBytes)`, { context: { setting: 'minFreeBytes' } });
  }

  /** Servers that may take a new partition now: heartbeat not expired, not draining, enough free disk. */
  private eligible(servers: readonly LiveServer[]): LiveServer[] {
    const now = this.clock.now();
    return servers.filter(
      (s) => (this.expiresAtMs.get(s.serverId) ?? Number.NEGATIVE_INFINITY) > now && s.draining !== true && s.capacityBytes >= this.minFreeBytes,
    );
  }

  private loadOf(server: LiveServer): number {
    return (server.activeStreams + (this.placed.get(server.serverId) ?? 0)) / Math.max(1, server.maxConcurrentStreams);
  }
}
