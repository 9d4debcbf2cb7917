import { type Logger, noopLogger } from '@weft/shuffle-api';
import type { ServerDirectory } from './redis-server-registry.js';

/** How an excluded server is asked whether it is back. */
export interface ServerExclusionsOptions {
  /** The registry: a server is taken back only while it is registered there. */
  readonly directory: Pick<ServerDirectory, 'get'>;
  /** Resolves with the server id a URL answers its health check with; rejects while it does not answer healthy. */
  readonly probe: (url: string) => Promise<{ readonly serverId: string }>;
  /** First pause before a probe, doubled after each failed one. @defaultValue 500 */
  readonly probeInitialDelayMs?: number;
  /** Longest pause between two probes. @defaultValue 10000 */
  readonly probeMaxDelayMs?: number;
  /** Called once a server is taken back (e.g. to withdraw clients' reports of it). */
  readonly onTakenBack?: (serverId: string) => void;
  readonly logger?: Logger;
}

/** Why and since when a server is excluded. */
export interface ExcludedServer {
  readonly serverId: string;
  /** The URL it was excluded at. */
  readonly url: string;
  readonly reason: string;
  /** Probes so far that found it not back. */
  readonly probes: number;
}

interface Exclusion {
  readonly serverId: string;
  readonly url: string;
  readonly reason: string;
  probes: number;
  delayMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** A probe `probeNow` started and has not finished. */
  now?: Promise<void> | undefined;
}

/**
 * Servers the master stops placing partitions on at once, because a task or the master itself could
 * not connect to them (Celeborn's worker exclusion). Not waiting for the registry's TTL: a killed
 * server's record lives on for its TTL, and a restarted producer placed there in the meantime fails
 * again. Each excluded server is probed in the background with exponential backoff (GET /healthz at its
 * registered URL); it is taken back once it answers healthy under its own id AND is registered in the
 * directory — a server that came back on another address is probed there.
 *
 * Timers are unref'd (a probe never keeps a process alive); `close()` stops them.
 */
export class ServerExclusions {
  private readonly excluded = new Map<string, Exclusion>();
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly logger: Logger;
  private closed = false;

  constructor(private readonly options: ServerExclusionsOptions) {
    this.initialDelayMs = options.probeInitialDelayMs ?? 500;
    this.maxDelayMs = Math.max(this.initialDelayMs, options.probeMaxDelayMs ?? 10_000);
    this.logger = options.logger ?? noopLogger;
  }

  /** Excludes a server (a no-op if it already is); true when it was not excluded before. */
  exclude(server: { readonly serverId: string; readonly url: string }, reason: string): boolean {
    if (this.closed || this.excluded.has(server.serverId)) return false;
    const exclusion: Exclusion = { serverId: server.serverId, url: server.url, reason, probes: 0, delayMs: this.initialDelayMs, timer: undefined };
    this.excluded.set(server.serverId, exclusion);
    this.logger.warn({ serverId: server.serverId, server: server.url, reason }, 'shuffle server placeable -> excluded');
    this.schedule(exclusion);
    return true;
  }

  /**
   * Probes every excluded server now (each once, together; a probe already under way is waited for), taking
   * back those healthy and registered; their background probes go on for the others.
   */
  async probeNow(): Promise<void> {
    await Promise.all([...this.excluded.values()].map((exclusion) => {
      exclusion.now ??= (async () => {
        if (exclusion.timer !== undefined) clearTimeout(exclusion.timer);
        exclusion.timer = undefined;
        await this.probe(exclusion);
      })().finally(() => {
        exclusion.now = undefined;
      });
      return exclusion.now;
    }));
  }

  isExcluded(serverId: string): boolean {
    return this.excluded.has(serverId);
  }

  /** The servers excluded now. */
  list(): ExcludedServer[] {
    return [...this.excluded.values()].map(({ serverId, url, reason, probes }) => ({ serverId, url, reason, probes }));
  }

  close(): void {
    this.closed = true;
    for (const exclusion of this.excluded.values()) if (exclusion.timer !== undefined) clearTimeout(exclusion.timer);
    this.excluded.clear();
  }

  private schedule(exclusion: Exclusion): void {
    if (this.closed || this.excluded.get(exclusion.serverId) !== exclusion) return;
    if (exclusion.timer !== undefined) clearTimeout(exclusion.timer); // one pending probe per server (probeNow may have run one meanwhile)
    exclusion.timer = setTimeout(() => {
      exclusion.timer = undefined;
      void this.probe(exclusion);
    }, exclusion.delayMs);
    exclusion.timer.unref?.();
  }

  private async probe(exclusion: Exclusion): Promise<void> {
    let back = false;
    let why = 'not registered';
    try {
      const record = await this.options.directory.get(exclusion.serverId);
      if (record !== undefined) {
        const answer = await this.options.probe(record.url);
        back = answer.serverId === exclusion.serverId;
        why = back ? '' : `${record.url} answers as ${answer.serverId}`;
      }
    } catch (error) {
      why = (error as Error)?.message ?? String(error);
    }
    if (this.closed || this.excluded.get(exclusion.serverId) !== exclusion) return;
    if (back) {
      this.excluded.delete(exclusion.serverId);
      this.logger.info({ serverId: exclusion.serverId, probes: exclusion.probes + 1 }, 'shuffle server excluded -> placeable (healthy and registered)');
      this.options.onTakenBack?.(exclusion.serverId);
      return;
    }
    exclusion.probes++;
    exclusion.delayMs = Math.min(exclusion.delayMs * 2, this.maxDelayMs);
    this.logger.debug({ serverId: exclusion.serverId, probes: exclusion.probes, nextInMs: exclusion.delayMs, why }, 'excluded shuffle server is not back');
    this.schedule(exclusion);
  }
}
