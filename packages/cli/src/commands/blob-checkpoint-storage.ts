import type { CheckpointStorage } from '@weft/engine';
import type { BlobStore } from '@weft/shuffle-remote';

/** Each object starts with its payload's length (u64 LE): a BlobReader reads ranges and does not know sizes. */
const HEADER_BYTES = 8;

/**
 * Task snapshots in the run's BlobStore (`--store`: a local directory or S3), under the keys the engine
 * names. The caller owns the store (starts and closes it).
 */
export class BlobCheckpointStorage implements CheckpointStorage {
  readonly description: string;

  constructor(private readonly store: BlobStore) {
    this.description = store.description;
  }

  async write(key: string, bytes: Uint8Array): Promise<void> {
    const header = new Uint8Array(HEADER_BYTES);
    new DataView(header.buffer).setBigUint64(0, BigInt(bytes.byteLength), true);
    const writer = await this.store.createWriter(key);
    try {
      await writer.append([header, bytes]);
      await writer.complete();
    } catch (error) {
      await writer.abort().catch(() => {});
      throw error;
    }
  }

  async read(key: string): Promise<Uint8Array> {
    const reader = await this.store.openReader(key);
    try {
      const header = await reader.read(0, HEADER_BYTES);
      const length = Number(new DataView(header.buffer, header.byteOffset, header.byteLength).getBigUint64(0, true));
      return (await reader.read(HEADER_BYTES, length)).slice();
    } finally {
      await reader.close();
    }
  }

  async delete(key: string): Promise<void> {
    await this.store.delete(key);
  }

  listKeys(prefix: string): Promise<string[]> {
    return this.store.listKeys(prefix);
  }
}
