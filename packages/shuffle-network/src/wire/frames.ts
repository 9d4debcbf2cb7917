import { ShuffleError } from '@weft/shuffle-api';

/**
 * The network shuffle's wire format (README "Wire format"). Every frame is
 * `u32le bodyLength | u8 type | body`; integers are little-endian. Type numbers are never reused.
 */
export const FrameType = {
  /** consumer → producer: `u32 firstChannel | u32 start | u32 end | u32 credit | JSON {jobId, partitionId, producerId}` */
  PARTITION_REQUEST: 1,
  /**
   * consumer → producer: `u32 channel | u32 credit | u32 consumed` — `credit` more buffers the channel can
   * take, and `consumed` buffers the consumer is done with (their slots in the producer's pool free up)
   */
  ADD_CREDIT: 2,
  /** consumer → producer: `u32 channel` — the consumer gave the channel up */
  CANCEL: 3,
  /** master → environment: `u32 requestId | JSON ControlRequest` */
  CONTROL_REQUEST: 4,
  /** producer → consumer: `u32 channel | u32 backlog | framed records` — one data buffer, sent against one credit */
  BUFFER: 20,
  /** producer → consumer: `u32 channel | encoded event` (shuffle-api's encodeEvent), in band, needs no credit */
  EVENT: 21,
  /** producer → consumer: `u32 channel | JSON serialized ShuffleError` — the channel's last frame */
  ERROR: 22,
  /** environment → master: `u32 requestId | JSON {ok: true} or {error}` */
  CONTROL_RESPONSE: 23,
} as const;

export type FrameType = (typeof FrameType)[keyof typeof FrameType];

/** Bytes before a frame's body: the length and the type. */
export const FRAME_HEADER_BYTES = 5;
/** Bytes of a BUFFER frame before the records: header, channel, backlog. */
export const BUFFER_HEADER_BYTES = FRAME_HEADER_BYTES + 8;
/** A wire channel id that addresses the whole connection rather than one channel. */
export const CONNECTION_CHANNEL = 0xffff_ffff;

const encoder = new TextEncoder();

/** A frame with `ints` (u32 each) then `tail`. */
export function encodeFrame(type: FrameType, ints: readonly number[], tail?: Uint8Array | string): Buffer {
  const tailBytes = typeof tail === 'string' ? encoder.encode(tail) : tail;
  const bodyLength = ints.length * 4 + (tailBytes?.length ?? 0);
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bodyLength);
  out.writeUInt32LE(bodyLength, 0);
  out[4] = type;
  let offset = FRAME_HEADER_BYTES;
  for (const value of ints) {
    out.writeUInt32LE(value >>> 0, offset);
    offset += 4;
  }
  if (tailBytes !== undefined) out.set(tailBytes, offset);
  return out;
}

/** The header of a BUFFER frame whose records are `length` bytes (sent before them, without copying them). */
export function encodeBufferHeader(channel: number, backlog: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(BUFFER_HEADER_BYTES);
  out.writeUInt32LE(8 + length, 0);
  out[4] = FrameType.BUFFER;
  out.writeUInt32LE(channel, 5);
  out.writeUInt32LE(backlog, 9);
  return out;
}

/** Receives each complete frame: its type and body (a view into the socket's bytes where possible). */
export type FrameListener = (type: number, body: Buffer) => void;

/**
 * Cuts a byte stream into frames. A frame lying whole inside one chunk is handed over as a view of that
 * chunk (no copy); one that straddles chunks is assembled once into a buffer of its exact size.
 */
export class FrameDecoder {
  private head: Buffer | null = null;
  private frame: Buffer | null = null;
  private frameType = 0;
  private filled = 0;

  constructor(
    private readonly maxBodyBytes: number,
    private readonly onFrame: FrameListener,
  ) {}

  push(input: Buffer): void {
    let chunk = input;
    let offset = 0;
    if (this.frame !== null) {
      const n = Math.min(this.frame.length - this.filled, chunk.length);
      chunk.copy(this.frame, this.filled, 0, n);
      this.filled += n;
      offset = n;
      if (this.filled < this.frame.length) return;
      const frame = this.frame;
      this.frame = null;
      this.onFrame(this.frameType, frame);
    }
    if (this.head !== null) {
      chunk = Buffer.concat([this.head, chunk.subarray(offset)]);
      offset = 0;
      this.head = null;
    }
    const length = chunk.length;
    while (length - offset >= FRAME_HEADER_BYTES) {
      const bodyLength = chunk.readUInt32LE(offset);
      const type = chunk[offset + 4]!;
      if (bodyLength > this.maxBodyBytes) {
        throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', `network shuffle frame of ${bodyLength} bytes is larger than the most expected (${this.maxBodyBytes}); the peer speaks another protocol or the stream is corrupt`);
      }
      const start = offset + FRAME_HEADER_BYTES;
      const end = start + bodyLength;
      if (end <= length) {
        offset = end;
        this.onFrame(type, chunk.subarray(start, end));
        continue;
      }
      this.frame = Buffer.allocUnsafe(bodyLength);
      this.frameType = type;
      this.filled = chunk.copy(this.frame, 0, start, length);
      return;
    }
    if (offset < length) this.head = Buffer.from(chunk.subarray(offset));
  }
}

/** Parses a frame's JSON tail; SHF_ERR_DATA_CORRUPTED when it is not JSON. */
export function parseJsonTail(body: Buffer, offset: number): unknown {
  try {
    return JSON.parse(body.toString('utf8', offset));
  } catch (cause) {
    throw new ShuffleError('SHF_ERR_DATA_CORRUPTED', 'malformed JSON in a network shuffle frame', { cause });
  }
}
