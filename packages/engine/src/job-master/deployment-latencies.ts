/** Deployment latencies of a run (JobResult.deploymentLatency), on the job master's clock. */
export interface DeploymentLatencySummary {
  /** Task attempts whose `running` report came back. */
  readonly tasks: number;
  /** Nearest-rank percentiles and the largest, in milliseconds (0 when no task reported). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * Per task attempt, the time from the job master handing its deployment to an executor (`deploy`: an IPC
 * message to a worker, a frame on a cluster executor's control connection, a call in process) to the
 * executor's `running` report arriving back, both read from the job master's monotonic clock — so no
 * clock of another host enters the figure. What it includes: the transfer both ways, the executor setting
 * the task up (its shuffle readers and writers, the operator chain) and any wait in the executor's event
 * loop. Attempts that never report running (cancelled first) are left out.
 */
export class DeploymentLatencies {
  readonly #deployedAt = new Map<string, number>();
  readonly #latenciesMs: number[] = [];
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** These attempts' deployment is being handed to their executor now. */
  deployed(attemptIds: readonly string[]): void {
    const at = this.#now();
    for (const id of attemptIds) this.#deployedAt.set(id, at);
  }

  /** `attemptId` reported running (a no-op for one not deployed through `deployed`, or reported twice). */
  running(attemptId: string): void {
    const at = this.#deployedAt.get(attemptId);
    if (at === undefined) return;
    this.#deployedAt.delete(attemptId);
    this.#latenciesMs.push(this.#now() - at);
  }

  summary(): DeploymentLatencySummary {
    const sorted = [...this.#latenciesMs].sort((a, b) => a - b);
    const rank = (p: number): number => (sorted.length === 0 ? 0 : (sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] as number));
    const round = (ms: number): number => Math.round(ms * 1000) / 1000;
    return { tasks: sorted.length, p50Ms: round(rank(0.5)), p99Ms: round(rank(0.99)), maxMs: round(sorted.at(-1) ?? 0) };
  }
}
