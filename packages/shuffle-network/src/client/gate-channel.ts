import { FifoQueue, type FloatingCreditTaker, type InputChannelInfo, RecordDeframer, type ShuffleError, type ShuffleEvent } from '@weft/shuffle-api';
import type { PeerSocket } from './peer-socket.js';
import type { ReadSlab } from './read-slabs.js';

/** What a channel queues for the consumer, in order: received buffers, events, its end. */
export type ChannelEntry =
  | { readonly kind: 'data'; readonly bytes: Uint8Array; readonly slab: ReadSlab | undefined; readonly peer: PeerSocket }
  | { readonly kind: 'event'; readonly event: ShuffleEvent }
  | { readonly kind: 'error'; readonly error: ShuffleError }
  /** PIPELINED_APPROXIMATE: the producer attempt the channel read went away (failed, replaced, its connection dropped). */
  | { readonly kind: 'unavailable' };

/** Errors that end a PIPELINED_APPROXIMATE channel's producer attempt rather than the gate: it may come back. */
export const ATTEMPT_GONE_CODES = new Set(['SHF_ERR_PRODUCER_FAILED', 'SHF_ERR_PARTITION_NOT_FOUND', 'SHF_ERR_CONNECTION_LOST', 'SHF_ERR_CLOSED']);

/** One producer a gate reads from: where it is, and which of its subpartitions become which channels. */
export interface GateInput {
  readonly host: string;
  readonly port: number;
  readonly jobId: string;
  readonly partitionId: string;
  readonly producerId: string;
  readonly firstChannel: number;
  readonly start: number;
  readonly end: number;
  /** PIPELINED_APPROXIMATE: a producer attempt that goes away makes its channels unavailable, not the gate fail. */
  readonly approximate: boolean;
}

/**
 * One channel's credit state (Flink's RemoteInputChannel + BufferManager): it owns `exclusive` buffers
 * and borrows floating ones from the gate while its producer announces a backlog; every buffer it does
 * not hold data in has been announced to the producer as credit.
 */
export class Channel implements FloatingCreditTaker {
  readonly queue = new FifoQueue<ChannelEntry>();
  readonly deframer: RecordDeframer;
  holding = 0;
  floatingHeld = 0;
  backlog = 0;
  /** An end-of-partition or error is queued: nothing more comes. */
  terminal = false;
  ended = false;
  peer!: PeerSocket;
  /** The producer attempt read now. */
  input!: GateInput;
  /** Approximate: a new producer attempt to read once the 'unavailable' entry of the old one is read. */
  pending: GateInput | undefined;
  /** Approximate: the producer went away and no new attempt was named yet; fails the gate at reconnectTimeoutMs. */
  deadline: NodeJS.Timeout | undefined;
  /** Approximate: the consumer read the 'unavailable' entry; the channel waits for a new producer attempt. */
  waiting = false;

  constructor(
    readonly index: number,
    readonly info: InputChannelInfo,
    private readonly onFloatingCredit: (channel: Channel) => void,
    maxRecordBytes: number,
  ) {
    this.deframer = new RecordDeframer(maxRecordBytes, info.partitionId);
  }

  grantFloatingCredit(): void {
    this.onFloatingCredit(this);
  }
}
