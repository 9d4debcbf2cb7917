import { open, stat, type FileHandle } from 'node:fs/promises';

/** One read and one write of a part at a time, per copier. */
const CHUNK_BYTES = 1024 * 1024;
/** Parts copied at once: libuv's default thread pool has four threads, and the copies are its work. */
const COPIERS = 4;

/**
 * Writes `parts` end to end into a new file at `target` (replaced if there): each part's bytes at the
 * offset the parts before it end at, several parts at once through positional writes, so the join runs
 * on more than one core instead of one read-then-append stream after another. Returns the bytes written;
 * a part whose size changes under the copy fails the join.
 */
export async function joinLocalParts(target: string, parts: readonly string[]): Promise<number> {
  const sizes = await Promise.all(parts.map(async (part) => (await stat(part)).size));
  const offsets: number[] = [];
  let total = 0;
  for (const size of sizes) {
    offsets.push(total);
    total += size;
  }
  const out = await open(target, 'w');
  try {
    let next = 0;
    const copier = async (): Promise<void> => {
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      for (let i = next++; i < parts.length; i = next++) {
        try {
          await copyInto(out, parts[i] as string, offsets[i] as number, sizes[i] as number, buffer);
        } catch (error) {
          next = parts.length; // the others take no new part
          throw error;
        }
      }
    };
    // every copier stopped (its part's file closed) before the output closes and the first error is thrown
    const copied = await Promise.allSettled(Array.from({ length: Math.min(COPIERS, parts.length) }, copier));
    const failed = copied.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  } finally {
    await out.close();
  }
  return total;
}

async function copyInto(out: FileHandle, part: string, offset: number, size: number, buffer: Buffer): Promise<void> {
  const input = await open(part, 'r');
  try {
    let position = 0;
    for (;;) {
      const { bytesRead } = await input.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      if (position + bytesRead > size) throw new Error(`${part} grew while it was joined (${size} bytes when the join began)`);
      let written = 0;
      while (written < bytesRead) written += (await out.write(buffer, written, bytesRead - written, offset + position + written)).bytesWritten;
      position += bytesRead;
    }
    if (position !== size) throw new Error(`${part} shrank while it was joined (${position} of ${size} bytes)`);
  } finally {
    await input.close();
  }
}
