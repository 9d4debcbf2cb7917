/**
 * Producers' leases on the attempts they are writing, in memory: partition key → attempt → expiry (ms).
 * A reader that finds a partition uncommitted but leased waits for it instead of giving up.
 */
export class ProducerLeases {
  private readonly leases = new Map<string, Map<number, number>>();

  /** Takes or renews the lease on `attempt` until `expiresAtMs`. */
  renew(partitionKey: string, attempt: number, expiresAtMs: number): void {
    let byAttempt = this.leases.get(partitionKey);
    if (byAttempt === undefined) this.leases.set(partitionKey, (byAttempt = new Map()));
    byAttempt.set(attempt, expiresAtMs);
  }

  /** Drops one attempt's lease, or every attempt's when `attempt` is undefined. */
  drop(partitionKey: string, attempt?: number): void {
    const byAttempt = this.leases.get(partitionKey);
    if (byAttempt === undefined) return;
    if (attempt === undefined) byAttempt.clear();
    else byAttempt.delete(attempt);
    if (byAttempt.size === 0) this.leases.delete(partitionKey);
  }

  /** True while some attempt of the partition holds a lease that has not run out. */
  isLeased(partitionKey: string, nowMs: number): boolean {
    this.expire(partitionKey, nowMs);
    return this.leases.has(partitionKey);
  }

  /** Forgets every lease that ran out. */
  sweep(nowMs: number): void {
    for (const key of [...this.leases.keys()]) this.expire(key, nowMs);
  }

  private expire(partitionKey: string, nowMs: number): void {
    const byAttempt = this.leases.get(partitionKey);
    if (byAttempt === undefined) return;
    for (const [attempt, expiresAtMs] of byAttempt) if (expiresAtMs <= nowMs) byAttempt.delete(attempt);
    if (byAttempt.size === 0) this.leases.delete(partitionKey);
  }
}
