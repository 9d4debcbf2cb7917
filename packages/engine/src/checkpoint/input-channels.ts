import { invalidEngineArgument } from '../errors/engine-error.js';

/**
 * Which of a task's input channels are still open and which are blocked, with the argument checks every
 * barrier handler shares: a channel index in range, a channel that has not ended, a positive checkpoint id.
 */
export class InputChannels {
  readonly #open: boolean[];
  readonly #blocked: boolean[];
  #openCount: number;

  constructor(count: number) {
    this.#open = new Array<boolean>(count).fill(true);
    this.#blocked = new Array<boolean>(count).fill(false);
    this.#openCount = count;
  }

  get openCount(): number {
    return this.#openCount;
  }

  isBlocked(channel: number): boolean {
    this.#checkIndex(channel);
    return this.#blocked[channel] as boolean;
  }

  block(channel: number): void {
    this.#blocked[channel] = true;
  }

  unblockAll(): void {
    this.#blocked.fill(false);
  }

  close(channel: number): void {
    this.#open[channel] = false;
    this.#openCount -= 1;
  }

  /** Refuses an event on a channel that is out of range, has ended, or is blocked (it delivers nothing). */
  checkEvent(what: string, channel: number, checkpointId?: number): void {
    this.#checkIndex(channel);
    if (checkpointId !== undefined && (!Number.isSafeInteger(checkpointId) || checkpointId < 1)) {
      throw invalidEngineArgument('checkpointId', `a checkpoint id is an integer >= 1, got ${String(checkpointId)} (${what} on channel ${channel})`);
    }
    if (!this.#open[channel]) throw invalidEngineArgument('channel', `${what} on channel ${channel}, which has already ended`);
    if (this.#blocked[channel]) throw invalidEngineArgument('channel', `${what} on channel ${channel}, which is blocked: a blocked channel delivers nothing until the checkpoint is aligned or aborted`);
  }

  #checkIndex(channel: number): void {
    if (!Number.isInteger(channel) || channel < 0 || channel >= this.#open.length) {
      throw invalidEngineArgument('channel', `channels are numbered 0 to ${this.#open.length - 1}, got ${String(channel)}`);
    }
  }
}
