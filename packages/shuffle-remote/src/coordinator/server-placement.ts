import { type Clock, ShuffleError, systemClock } from '@weft/shuffle-api';
import type { LiveServer, ServerDirectory } from './redis-server-registry.js';

export interface ServerPlacementOptions {
  /** How long a list of live servers is reused before it is read again. @defaultValue 1000 */
  readonly refreshIntervalMs?: number;
  /** A server with less free disk than this gets no new partitions. @defaultValue 268435456 (256 MiB) */
  readonly minFreeBytes?: number;
  /** Servers to leave out whatever their record says (ServerExclusions: a task could not reach them). */
  readonly isExcluded?: (serverId: string) => boolean;
  /**
   * Asks the excluded servers now whether they are back (ServerExclusions.probeNow): called before a
   * placement fails because every live server is excluded, so a healthy server excluded on an old report
   * is not waited for until its next background probe.
   */
  readonly probeExcluded?: () => Promise<void>;
  /** Names the registry in errors (its redacted URL). */
  readonly registryName?: string;
  readonly clock?: Clock;
}

/** @see ServerPlacementOptions.minFreeBytes */
export const DEFAULT_MIN_FREE_BYTES = 256 * 1024 * 1024;

/**
 * Load-aware placement of new partitions on live servers. A server's load is its reported active streams
 * plus the partitions placed on it since the list was last read, relative to its stream limit; the least
 * loaded server with enough free disk wins, ties going round-robin. A server whose heartbeat expired gets
 * nothing new — even from a list read before it expired: each server is kept only until the time its
 * record had left when the list was read (measured from the start of the read, on this clock) — and
 * one that is draining (shutting down) is skipped too, and so is one below the free-disk floor
 * (`minFreeBytes`) or excluded (`isExcluded`: a task or the master could not connect to it). When no cached
 * server qualifies, the list is read again.
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
  private readonly isExcluded: (serverId: string) => boolean;
  private readonly probeExcluded: () => Promise<void>;
  private readonly registryName: string;
  private readonly clock: Clock;

  constructor(
    private readonly directory: ServerDirectory,
    options: ServerPlacementOptions = {},
  ) {
    this.refreshIntervalMs = options.refreshIntervalMs ?? 1_000;
    this.minFreeBytes = options.minFreeBytes ?? DEFAULT_MIN_FREE_BYTES;
    this.isExcluded = options.isExcluded ?? (() => false);
    this.probeExcluded = options.probeExcluded ?? (async () => {});
    this.registryName = options.registryName ?? 'the registry';
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
    if (eligible.length === 0 && this.liveNow(servers).some((s) => this.isExcluded(s.serverId))) {
      // every live server that could take it is excluded: ask them now rather than fail until a background probe
      await this.probeExcluded();
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

  /**
   * Picks `count` different servers for one partition (its primary and replicas) and up to `spares`
   * more a writer may move to if one dies. The primary is what `place()` would pick; each further server
   * is the least loaded one on a host (the URL's hostname) not used yet, falling back to another server
   * on a used host only when every host is taken (`sameHost` then says so). Fewer than `count` when
   * fewer servers are eligible; SHF_ERR_STORAGE_UNAVAILABLE when none is.
   */
  async placeSeveral(request: { readonly count: number; readonly distinctHosts: boolean; readonly spares?: number }): Promise<SeveralServers<LiveServer>> {
    const primary = await this.place();
    let eligible = this.eligible(this.servers);
    // a cached list loses servers as their read TTLs pass: read it again before settling for fewer copies
    if (eligible.length < request.count) eligible = this.eligible(await this.live(true));
    // and ask the excluded servers whether they are back before settling for fewer copies than asked
    if (eligible.length < request.count && this.liveNow(this.servers).some((s) => this.isExcluded(s.serverId))) {
      await this.probeExcluded();
      eligible = this.eligible(this.servers);
    }
    const rest = eligible.filter((s) => s.serverId !== primary.serverId).sort((a, b) => this.loadOf(a) - this.loadOf(b));
    const several = chooseServers([primary, ...rest], request);
    this.placed.set(primary.serverId, this.placed.get(primary.serverId) ?? 1);
    for (const server of several.servers.slice(1)) this.placed.set(server.serverId, (this.placed.get(server.serverId) ?? 0) + 1);
    return several;
  }

  /** The servers of the last list that are live now (heartbeat not expired), in no particular order. */
  liveNow(servers: readonly LiveServer[] = this.servers): LiveServer[] {
    const now = this.clock.now();
    return servers.filter((s) => (this.expiresAtMs.get(s.serverId) ?? Number.NEGATIVE_INFINITY) > now);
  }

  private noServer(servers: readonly LiveServer[]): ShuffleError {
    const live = this.liveNow(servers);
    const where = `in ${this.registryName}`;
    if (live.length === 0) {
      return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `no live shuffle server is registered ${where} (start one with \`weft shuffle-server --redis <url>\`)`, {
        context: { setting: 'redis' },
      });
    }
    const taking = live.filter((s) => s.draining !== true);
    if (taking.length === 0) {
      return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `no live shuffle server ${where} takes new partitions: all ${live.length} are shutting down`);
    }
    const reachable = taking.filter((s) => !this.isExcluded(s.serverId));
    if (reachable.length === 0) {
      return new ShuffleError(
        'SHF_ERR_STORAGE_UNAVAILABLE',
        `no reachable shuffle server ${where}: all ${taking.length} registered are excluded, their connections refused or reset (${taking.map((s) => s.url).join(', ')}); they are taken back once they answer /healthz`,
      );
    }
    return new ShuffleError('SHF_ERR_STORAGE_UNAVAILABLE', `no live shuffle server ${where} has ${this.minFreeBytes} free bytes (minFreeBytes)`, { context: { setting: 'minFreeBytes' } });
  }

  /** Servers that may take a new partition now: heartbeat not expired, not draining, not excluded, enough free disk. */
  private eligible(servers: readonly LiveServer[]): LiveServer[] {
    return this.liveNow(servers).filter((s) => s.draining !== true && s.capacityBytes >= this.minFreeBytes && !this.isExcluded(s.serverId));
  }

  private loadOf(server: LiveServer): number {
    return (server.activeStreams + (this.placed.get(server.serverId) ?? 0)) / Math.max(1, server.maxConcurrentStreams);
  }
}

/** The host part of a server URL (what "another host" means for replicas). */
export function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}

/** Servers chosen for one partition: primary first, then its replicas; the spares; how many could be. */
export interface SeveralServers<T extends { readonly url: string }> {
  readonly servers: T[];
  readonly spares: T[];
  /** How many servers were there to choose from. */
  readonly eligible: number;
  /** Some replica shares a host with another copy (the pool had too few hosts). */
  readonly sameHost: boolean;
}

/**
 * Takes `count` servers from `ordered` (most preferred first; the first is the primary) and then up to
 * `spares` more, each time the first one on a host not used yet when `distinctHosts`, else the first
 * left. Pure: the master uses it for a fixed list of servers too.
 */
export function chooseServers<T extends { readonly url: string }>(ordered: readonly T[], request: { readonly count: number; readonly distinctHosts: boolean; readonly spares?: number }): SeveralServers<T> {
  const rest = [...ordered];
  const hosts = new Set<string>();
  let sameHost = false;
  const take = (limit: number, isCopy: boolean): T[] => {
    const into: T[] = [];
    while (into.length < limit && rest.length > 0) {
      let at = request.distinctHosts ? rest.findIndex((s) => !hosts.has(hostOf(s.url))) : 0;
      if (at === -1) {
        at = 0;
        if (isCopy) sameHost = true;
      }
      const server = rest.splice(at, 1)[0]!;
      hosts.add(hostOf(server.url));
      into.push(server);
    }
    return into;
  };
  const servers = take(request.count, true);
  const spares = take(request.spares ?? 0, false);
  return { servers, spares, eligible: ordered.length, sameHost };
}
