import { FrameType, encodeFrame } from '../wire/frames.js';
import type { PeerSocket } from './peer-socket.js';

interface Pending {
  peer: PeerSocket;
  credits: number;
  consumed: number;
}

/**
 * A gate's credit announcements (ADD_CREDIT), coalesced: what a channel frees up within one turn of the
 * event loop — every buffer the consumer read from the socket reads of one poll phase — leaves as one frame
 * per channel, all of them in one system call, at the loop's next check phase (`setImmediate`). Announcing
 * per buffer cost a `writev` per 32 KiB buffer on the consumer (Flink coalesces the same way: a channel with
 * unannounced credit is queued once and announces all of it). The delay is bounded by the turn, so a
 * producer never waits on credit the consumer has already freed once the consumer waits for data itself.
 */
export class CreditAnnouncer {
  private readonly pending = new Map<number, Pending>();
  private scheduled = false;

  /** Channel `channel` (read from `peer`) can take `credits` more buffers and is done with `consumed`. */
  announce(peer: PeerSocket, channel: number, credits: number, consumed: number): void {
    const entry = this.pending.get(channel);
    if (entry !== undefined && entry.peer === peer) {
      entry.credits += credits;
      entry.consumed += consumed;
    } else {
      if (entry !== undefined) this.send(channel, entry);
      this.pending.set(channel, { peer, credits, consumed });
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** The channel reads another producer attempt now: what was owed the old one is not the new one's credit. */
  forget(channel: number): void {
    this.pending.delete(channel);
  }

  /** The gate closed: nothing more is announced. */
  clear(): void {
    this.pending.clear();
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    for (const [channel, entry] of this.pending) this.send(channel, entry);
    this.pending.clear();
  };

  private send(channel: number, entry: Pending): void {
    entry.peer.write(encodeFrame(FrameType.ADD_CREDIT, [channel, entry.credits, entry.consumed]));
  }
}
