import type { PlannedFault, ShuffleServerFaultActions } from './fault-harness.js';

/** How often a watched server process is looked at. */
const WATCH_INTERVAL_MS = 20;

/**
 * Fires the server faults of one run (`kill-shuffle-server`, `pause-shuffle-server`) through
 * ShuffleServerFaultActions, and keeps track of what is outstanding: the processes it watches (to learn
 * that an armed point was reached: the server is gone, or stopped) and the servers it stopped (each is
 * continued after its pause, and by `close()` at the latest, so no server stays frozen after the run).
 */
export class ServerFaultRunner {
  readonly #actions: ShuffleServerFaultActions;
  readonly #abort = new AbortController();
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Server processes stopped and not continued yet. */
  readonly #stopped = new Set<number>();
  readonly #watches = new Set<Promise<void>>();

  constructor(actions: ShuffleServerFaultActions) {
    this.#actions = actions;
  }

  /**
   * Arms the server's own fault point (push, commit, fetch): it kills or stops itself there. Resolves
   * once armed; `fault` is marked fired when the server is seen gone (or stopped, then continued after
   * its pause).
   */
  async armPoint(fault: PlannedFault, request: { jobId: string; partitionId: string; serverId: string; point: 'push' | 'commit' | 'fetch' }): Promise<void> {
    const kill = fault.kind === 'kill-shuffle-server';
    const server = await this.#actions.arm({ ...request, action: kill ? 'kill' : 'stop' });
    fault.detail = `armed at ${request.point} of ${request.partitionId} on shuffle server ${server.serverId} (pid ${server.pid}); never reached`;
    this.#watch(server.pid, kill ? 'gone' : 'stopped', () => {
      fault.fired = true;
      if (kill) {
        fault.detail = `shuffle server ${server.serverId} (pid ${server.pid}) SIGKILLed itself at ${request.point} of ${request.partitionId}`;
        return;
      }
      this.#stopped.add(server.pid);
      fault.detail = `shuffle server ${server.serverId} (pid ${server.pid}) SIGSTOPped itself at ${request.point} of ${request.partitionId}, for ${fault.pauseMs} ms`;
      this.#continueLater(server.pid, fault.pauseMs as number);
    });
  }

  /** Kills (SIGKILL, resolved once it is gone) or stops (SIGSTOP, continued after the pause) a server now. */
  async signalNow(fault: PlannedFault, request: { partitionId: string; serverId: string }): Promise<void> {
    const server = await this.#actions.locate(request.serverId);
    if (!this.#trySignal(server.pid, fault.kind === 'kill-shuffle-server' ? 'SIGKILL' : 'SIGSTOP')) {
      fault.detail = `shuffle server ${server.serverId} (pid ${server.pid}), holding the committed ${request.partitionId}, was already gone: nothing done`;
      return;
    }
    if (fault.kind === 'kill-shuffle-server') {
      await this.#actions.watch(server.pid, 'gone', this.#abort.signal, WATCH_INTERVAL_MS);
      fault.fired = true;
      fault.detail = `SIGKILLed shuffle server ${server.serverId} (pid ${server.pid}), holding the committed ${request.partitionId}`;
      return;
    }
    this.#stopped.add(server.pid);
    fault.fired = true;
    fault.detail = `SIGSTOPped shuffle server ${server.serverId} (pid ${server.pid}), holding the committed ${request.partitionId}, for ${fault.pauseMs} ms`;
    this.#continueLater(server.pid, fault.pauseMs as number);
  }

  /** Continues every server still stopped, stops watching, closes the actions. Idempotent. */
  async close(): Promise<void> {
    this.#abort.abort();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    const stopped = [...this.#stopped];
    this.#stopped.clear();
    for (const pid of stopped) this.#continue(pid);
    await Promise.allSettled(this.#watches);
    await this.#actions.close();
  }

  #continueLater(pid: number, pauseMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#continue(pid);
    }, pauseMs);
    this.#timers.add(timer);
  }

  #continue(pid: number): void {
    this.#stopped.delete(pid);
    this.#trySignal(pid, 'SIGCONT');
  }

  /** False when the process is gone (its registry record outlives it until the heartbeat TTL). */
  #trySignal(pid: number, signal: NodeJS.Signals): boolean {
    try {
      this.#actions.signal(pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  #watch(pid: number, state: 'gone' | 'stopped', reached: () => void): void {
    const watch = this.#actions.watch(pid, state, this.#abort.signal, WATCH_INTERVAL_MS).then(
      (seen) => {
        if (seen) reached();
      },
      () => undefined,
    );
    this.#watches.add(watch);
    void watch.finally(() => this.#watches.delete(watch));
  }
}
