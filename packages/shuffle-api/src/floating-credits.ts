/** A channel that can take a floating credit when one frees up. */
export interface FloatingCreditTaker {
  grantFloatingCredit(): void;
}

/**
 * A gate's floating buffers (Flink's floating buffers of the gate's pool): credits lent to whichever
 * channel announces a backlog, returned when its backlog is gone.
 */
export class FloatingCredits {
  private readonly waiting: FloatingCreditTaker[] = [];
  private readonly waitingSet = new Set<FloatingCreditTaker>();

  constructor(private available: number) {}

  /** Takes one credit now if any is free; otherwise queues `taker` to be granted one later. */
  request(taker: FloatingCreditTaker): boolean {
    if (this.available > 0) {
      this.available--;
      return true;
    }
    if (!this.waitingSet.has(taker)) {
      this.waitingSet.add(taker);
      this.waiting.push(taker);
    }
    return false;
  }

  /** Returns a credit; the longest-waiting channel gets it. */
  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.available++;
      return;
    }
    this.waitingSet.delete(next);
    next.grantFloatingCredit();
  }

  /** Forgets a channel that went away. */
  withdraw(taker: FloatingCreditTaker): void {
    if (!this.waitingSet.delete(taker)) return;
    const index = this.waiting.indexOf(taker);
    if (index >= 0) this.waiting.splice(index, 1);
  }
}
