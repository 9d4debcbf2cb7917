import { compress as lz4CompressAsync, compressSync as lz4Compress, uncompress as lz4UncompressAsync, uncompressSync as lz4Uncompress } from 'lz4-napi';
import { crc32c } from './checksum.js';

/**
 * One block of a partition data object: a 16-byte header, then the payload.
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | CRC32C (LE) of bytes [4, 16 + storedLength): the rest of the header and the payload |
 * | 4 | 1 | kind: 1 data (framed records, FRAMING.md), 2 event (`encodeEvent`) |
 * | 5 | 1 | codec: 0 raw, 1 LZ4 (an LZ4 block prefixed with its uncompressed size, u32 LE) |
 * | 6 | 2 | flags, 0 |
 * | 8 | 4 | rawLength: payload bytes once decoded |
 * | 12 | 4 | storedLength: payload bytes as stored |
 *
 * A block is compressed only when that makes it smaller; otherwise it is stored raw.
 */
export const BLOCK_HEADER_BYTES = 16;
export const BLOCK_KIND_DATA = 1;
export const BLOCK_KIND_EVENT = 2;
export const CODEC_RAW = 0;
export const CODEC_LZ4 = 1;

export type BlockKind = typeof BLOCK_KIND_DATA | typeof BLOCK_KIND_EVENT;
export type Compression = 'lz4' | 'none';

/** Bytes a block may take at most once encoded: raw payload plus header (compression never grows it). */
export function maxEncodedBlockBytes(rawLength: number): number {
  return BLOCK_HEADER_BYTES + rawLength;
}

/** A decoded block header. */
export interface BlockHeader {
  readonly checksum: number;
  readonly kind: number;
  readonly codec: number;
  readonly rawLength: number;
  readonly storedLength: number;
}

export function readBlockHeader(bytes: Uint8Array, offset: number): BlockHeader {
  return {
    checksum: readU32(bytes, offset),
    kind: bytes[offset + 4]!,
    codec: bytes[offset + 5]!,
    rawLength: readU32(bytes, offset + 8),
    storedLength: readU32(bytes, offset + 12),
  };
}

/**
 * Fills the 16-byte header of one block at `header[at]` and returns the payload to store after it:
 * `compressed` (`payload` LZ4-compressed, size-prepended) when it is shorter, else `payload` itself.
 * The checksum covers the rest of the header and the stored payload, so the two may live apart (writev).
 */
export function writeBlockHeader(header: Uint8Array, at: number, kind: BlockKind, payload: Uint8Array, compressed?: Uint8Array): Uint8Array {
  const stored = writeBlockFields(header, at, kind, payload, compressed);
  writeU32(header, at, crc32c(stored, headerChecksum(header, at)));
  return stored;
}

/**
 * `writeBlockHeader` without the checksum: fills the header but for its first four bytes and returns
 * the payload to store. The checksum is then `crc32c(stored, headerChecksum(header, at))`, computed
 * wherever suits (a worker thread), and written with `writeU32(header, at, ...)`.
 */
export function writeBlockFields(header: Uint8Array, at: number, kind: BlockKind, payload: Uint8Array, compressed?: Uint8Array): Uint8Array {
  const useLz4 = compressed !== undefined && compressed.length < payload.length;
  const stored = useLz4 ? compressed : payload;
  header[at + 4] = kind;
  header[at + 5] = useLz4 ? CODEC_LZ4 : CODEC_RAW;
  header[at + 6] = 0;
  header[at + 7] = 0;
  writeU32(header, at + 8, payload.length);
  writeU32(header, at + 12, stored.length);
  return stored;
}

/** CRC32C of the header fields a block's checksum covers (the payload's CRC continues from it). */
export function headerChecksum(header: Uint8Array, at: number): number {
  return crc32c(header.subarray(at + 4, at + BLOCK_HEADER_BYTES));
}

const scratchHeader = new Uint8Array(BLOCK_HEADER_BYTES);

/**
 * The checksum a block of `payload` gets when stored raw (codec 0): what `writeBlockHeader` would write
 * without LZ4. Lets a writer checksum a block the moment it is filled, while it is still in the CPU's cache.
 */
export function rawBlockChecksum(kind: BlockKind, payload: Uint8Array): number {
  writeBlockFields(scratchHeader, 0, kind, payload);
  return crc32c(payload, headerChecksum(scratchHeader, 0));
}

/**
 * The CRC32C of the header fields a raw (codec 0) block of `kind` with `length` payload bytes has: with
 * `crc32cCombine(rawHeaderChecksum(kind, length), crc32c(payload), length)` the block's checksum, from a
 * payload checksummed before its length was known (piece by piece as it is filled).
 */
export function rawHeaderChecksum(kind: BlockKind, length: number): number {
  scratchHeader[4] = kind;
  scratchHeader[5] = CODEC_RAW;
  scratchHeader[6] = 0;
  scratchHeader[7] = 0;
  writeU32(scratchHeader, 8, length);
  writeU32(scratchHeader, 12, length);
  return headerChecksum(scratchHeader, 0);
}

/** Writes one whole block (header and payload) into `out` at `offset`; returns its encoded length. */
export function writeBlock(out: Uint8Array, offset: number, kind: BlockKind, payload: Uint8Array, compressed?: Uint8Array): number {
  const stored = writeBlockHeader(out, offset, kind, payload, compressed);
  out.set(stored, offset + BLOCK_HEADER_BYTES);
  return BLOCK_HEADER_BYTES + stored.length;
}

/** LZ4-compresses a block payload (size-prepended LZ4 block), on the calling thread. */
export function compressBlock(payload: Uint8Array): Uint8Array {
  return lz4Compress(payload as Buffer);
}

/** LZ4-compresses a block payload on the libuv thread pool, so compression overlaps the producer. */
export function compressBlockAsync(payload: Uint8Array): Promise<Uint8Array> {
  return lz4CompressAsync(payload);
}

/** Why a block could not be decoded; the caller names the partition and block. */
export class BlockDecodeError extends Error {
  override readonly name = 'BlockDecodeError';
}

/**
 * Checks the block at `offset` (whose header and payload are wholly inside `bytes`): its CRC32C, its
 * codec and lengths. Returns the stored payload (a view into `bytes`). Throws BlockDecodeError.
 */
export function verifyBlock(bytes: Uint8Array, offset: number, header: BlockHeader): Uint8Array {
  const end = offset + BLOCK_HEADER_BYTES + header.storedLength;
  const actual = crc32c(checksummedBytes(bytes, offset, header));
  if (actual !== header.checksum) throw checksumMismatch(header.checksum, actual);
  checkBlockCodec(header);
  return bytes.subarray(offset + BLOCK_HEADER_BYTES, end);
}

/** The bytes a block's CRC32C covers: the rest of its header and its payload. */
export function checksummedBytes(bytes: Uint8Array, offset: number, header: BlockHeader): Uint8Array {
  return bytes.subarray(offset + 4, offset + BLOCK_HEADER_BYTES + header.storedLength);
}

export function checksumMismatch(stored: number, computed: number): BlockDecodeError {
  return new BlockDecodeError(`checksum mismatch: stored ${hex(stored)}, computed ${hex(computed)}`);
}

/** Checks a block's codec against its lengths; throws BlockDecodeError. */
export function checkBlockCodec(header: BlockHeader): void {
  if (header.codec === CODEC_RAW) {
    if (header.rawLength !== header.storedLength) throw new BlockDecodeError('raw block whose lengths differ');
  } else if (header.codec !== CODEC_LZ4) {
    throw new BlockDecodeError(`unknown codec ${header.codec}`);
  }
}

/**
 * Checks the block at `offset` and returns its decoded payload: a view into `bytes` for raw blocks, a
 * new array for compressed ones. Throws BlockDecodeError on a checksum mismatch or an undecodable payload.
 */
export function decodeBlock(bytes: Uint8Array, offset: number, header: BlockHeader): Uint8Array {
  const stored = verifyBlock(bytes, offset, header);
  if (header.codec === CODEC_RAW) return stored;
  let decoded: Uint8Array;
  try {
    decoded = lz4Uncompress(stored);
  } catch (cause) {
    throw new BlockDecodeError(`LZ4 payload does not decode: ${(cause as Error).message}`);
  }
  return checkDecoded(decoded, header);
}

/** Decodes a verified LZ4 payload on the libuv thread pool. Rejects with BlockDecodeError. */
export async function uncompressBlockAsync(stored: Uint8Array, header: BlockHeader): Promise<Uint8Array> {
  let decoded: Uint8Array;
  try {
    decoded = await lz4UncompressAsync(stored);
  } catch (cause) {
    throw new BlockDecodeError(`LZ4 payload does not decode: ${(cause as Error).message}`);
  }
  return checkDecoded(decoded, header);
}

function checkDecoded(decoded: Uint8Array, header: BlockHeader): Uint8Array {
  if (decoded.length !== header.rawLength) {
    throw new BlockDecodeError(`LZ4 payload decodes to ${decoded.length} bytes, header says ${header.rawLength}`);
  }
  return decoded;
}

function hex(value: number): string {
  return `0x${value.toString(16).padStart(8, '0')}`;
}

export function readU32(bytes: Uint8Array, offset: number): number {
  return (bytes[offset]! | (bytes[offset + 1]! << 8) | (bytes[offset + 2]! << 16) | (bytes[offset + 3]! << 24)) >>> 0;
}

export function writeU32(bytes: Uint8Array, offset: number, value: number): void {
  bytes[offset] = value & 0xff;
  bytes[offset + 1] = (value >>> 8) & 0xff;
  bytes[offset + 2] = (value >>> 16) & 0xff;
  bytes[offset + 3] = (value >>> 24) & 0xff;
}

/** Reads a non-negative integer below 2^53 stored as u64 LE. */
export function readU64(bytes: Uint8Array, offset: number): number {
  return readU32(bytes, offset) + readU32(bytes, offset + 4) * 2 ** 32;
}

export function writeU64(bytes: Uint8Array, offset: number, value: number): void {
  writeU32(bytes, offset, value % 2 ** 32);
  writeU32(bytes, offset + 4, Math.floor(value / 2 ** 32));
}
