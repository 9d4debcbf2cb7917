import { type Clock, ShuffleError, systemClock } from '@weft/shuffle-api';
import type { ServerDirectory } from './redis-server-registry.js';
import type { ServerRecord } from './server-record.js';

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
 * loaded server with enough free disk wins, ties going round-robin. A server whose heartbeat expired is
 * not in the list, and one that is draining (shutting down) is skipped, so neither gets anything new.
 */
export class ServerPlacement {
  private servers: ServerRecord[] = [];
  private readAtMs = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<ServerRecord[]> | undefined;
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

  /** The live servers, read again when the cached list is older than refreshIntervalMs (or `fresh`). */
  async live(fresh = false): Promise<readonly ServerRecord[]> {
    if (!fresh && this.clock.now() - this.readAtMs < this.refreshIntervalMs) return this.servers;
    this.refreshing ??= this.directory.listLive().finally(() => {
      this.refreshing = undefined;
    });
    const servers = await this.refreshing;
    if (this.servers !== servers) {
      this.servers = servers;
      this.readAtMs = this.clock.now();
      this.placed.clear();
    }
    return servers;
  }

  /** Picks the server for a new partition; SHF_ERR_STORAGE_UNAVAILABLE (retryable) when none is live. */
  async place(): Promise<ServerRecord> {
    let servers = await this.live();
    if (servers.length === 0) servers = await this.live(true);
    const eligible = servers.filter((s) => s.draining !== true && s.capacityBytes >= this.minFreeBytes);
    if (eligible.length === 0) {
      throw new ShuffleError(
        'SHF_ERR_STORAGE_UNAVAILABLE',
        servers.length === 0
          ? 'no live shuffle server is registered (start one with `weft shuffle-server --redis <url>`)'
          : `no live shuffle server has ${this.minFreeBytes} free bytes (minFreeBytes)`,
        { context: { setting: 'minFreeBytes' } },
      );
    }
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

  private loadOf(server: ServerRecord): number {
    return (server.activeStreams + (this.placed.get(server.serverId) ?? 0)) / Math.max(1, server.maxConcurrentStreams);
  }
}
