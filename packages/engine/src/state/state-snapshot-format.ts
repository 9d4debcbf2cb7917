import { crc32 } from 'node:zlib';
import { stateRestoreError } from './state-errors.js';

/**
 * The byte layout of a state snapshot (keyed or operator):
 *
 *     magic (4 bytes: "WFKS" keyed, "WFOS" operator) | version u8 | crc32 u32 of every byte after it |
 *     header fields (u32 each) | block count u32 | (count + 1) block offsets u64, from the body's start | body
 *
 * Blocks are read by offset, so a keyed restore reads only the key groups it owns. Big-endian throughout.
 */
export const STATE_FORMAT_VERSION = 1;

export interface EncodedSnapshot {
  readonly fields: readonly number[];
  readonly blocks: readonly Uint8Array[];
}

export function encodeSnapshot(magic: string, fields: readonly number[], blocks: readonly Uint8Array[]): Uint8Array {
  const headerSize = 4 + 1 + 4 + 4 * fields.length + 4 + 8 * (blocks.length + 1);
  const bodySize = blocks.reduce((n, b) => n + b.byteLength, 0);
  const out = new Uint8Array(headerSize + bodySize);
  const view = new DataView(out.buffer);
  out.set(Buffer.from(magic, 'latin1'), 0);
  view.setUint8(4, STATE_FORMAT_VERSION);
  let at = 9;
  for (const field of fields) {
    view.setUint32(at, field);
    at += 4;
  }
  view.setUint32(at, blocks.length);
  at += 4;
  let offset = 0;
  for (const block of blocks) {
    view.setBigUint64(at, BigInt(offset));
    at += 8;
    out.set(block, headerSize + offset);
    offset += block.byteLength;
  }
  view.setBigUint64(at, BigInt(offset));
  view.setUint32(5, crc32(out.subarray(9)));
  return out;
}

/** A snapshot's fields and a reader of its blocks; refuses bytes that are not a whole, intact snapshot of `magic`. */
export function decodeSnapshot(magic: string, fieldCount: number, bytes: Uint8Array, what: string): { fields: number[]; blockCount: number; block(i: number): Uint8Array } {
  const minimum = 4 + 1 + 4 + 4 * fieldCount + 4 + 8;
  if (!(bytes instanceof Uint8Array) || bytes.byteLength < minimum || !startsWith(bytes, magic)) {
    throw stateRestoreError(`${what} is not a ${magic === 'WFKS' ? 'keyed' : 'operator'} state snapshot`, { snapshot: what });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint8(4);
  if (version > STATE_FORMAT_VERSION) throw stateRestoreError(`${what} was written by a newer state format (version ${version}; this weft reads up to ${STATE_FORMAT_VERSION})`, { snapshot: what, version });
  if (view.getUint32(5) !== crc32(bytes.subarray(9))) throw stateRestoreError(`${what} is corrupted: its checksum does not match`, { snapshot: what });
  const fields: number[] = [];
  let at = 9;
  for (let i = 0; i < fieldCount; i++, at += 4) fields.push(view.getUint32(at));
  const blockCount = view.getUint32(at);
  at += 4;
  const headerSize = at + 8 * (blockCount + 1);
  if (headerSize > bytes.byteLength) throw stateRestoreError(`${what} is truncated`, { snapshot: what });
  const offsetsAt = at;
  const bodySize = Number(view.getBigUint64(offsetsAt + 8 * blockCount));
  if (headerSize + bodySize !== bytes.byteLength) throw stateRestoreError(`${what} is truncated or has trailing bytes`, { snapshot: what });
  return {
    fields,
    blockCount,
    block: (i) => {
      const start = Number(view.getBigUint64(offsetsAt + 8 * i));
      const end = Number(view.getBigUint64(offsetsAt + 8 * (i + 1)));
      return bytes.subarray(headerSize + start, headerSize + end);
    },
  };
}

/** Whether `bytes` begins with the latin1 characters of `magic` (compared byte by byte: no string made). */
function startsWith(bytes: Uint8Array, magic: string): boolean {
  for (let i = 0; i < magic.length; i++) if (bytes[i] !== magic.charCodeAt(i)) return false;
  return true;
}
