import { closeSync, openSync, writeSync } from 'node:fs';
import { spillFailed } from './spill-failed.js';

const BUFFER_BYTES = 64 * 1024;

/** A finished spill run: a file of `records` (key, value) byte pairs in the order they were written. */
export interface SpillRun {
  readonly path: string;
  readonly records: number;
  readonly bytes: number;
}

/**
 * Writes one spill run: records of `varint keyLength, varint valueLength, key, value`, through a 64 KiB
 * buffer, synchronously. Any I/O error (ENOSPC) becomes WEFT_ERR_SPILL_FAILED naming the file; the
 * caller removes the file (it owns the path). `abort()` closes the file without finishing.
 */
export class SpillRunWriter {
  readonly #fd: number;
  readonly #buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  #used = 0;
  #records = 0;
  #bytes = 0;
  #open = true;

  constructor(
    readonly path: string,
    private readonly operator: string,
  ) {
    try {
      this.#fd = openSync(path, 'wx');
    } catch (error) {
      throw spillFailed(operator, path, error);
    }
  }

  write(key: Uint8Array, value: Uint8Array): void {
    this.#varint(key.length);
    this.#varint(value.length);
    this.#bytes_(key);
    this.#bytes_(value);
    this.#records++;
  }

  /**
   * Appends `records` records already framed in this format (a join's in-memory build partition, whose
   * pages hold exactly these bytes).
   */
  writeFramed(bytes: Uint8Array, records: number): void {
    this.#bytes_(bytes);
    this.#records += records;
  }

  finish(): SpillRun {
    this.#flush();
    this.#close();
    return { path: this.path, records: this.#records, bytes: this.#bytes };
  }

  abort(): void {
    if (this.#open) {
      this.#open = false;
      try {
        closeSync(this.#fd);
      } catch {
        // already failing
      }
    }
  }

  #varint(n: number): void {
    if (this.#used + 5 > BUFFER_BYTES) this.#flush();
    const b = this.#buffer;
    while (n > 0x7f) {
      b[this.#used++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    b[this.#used++] = n;
  }

  #bytes_(bytes: Uint8Array): void {
    if (this.#used + bytes.length > BUFFER_BYTES) {
      this.#flush();
      if (bytes.length > BUFFER_BYTES) {
        this.#writeOut(bytes, bytes.length);
        return;
      }
    }
    this.#buffer.set(bytes, this.#used);
    this.#used += bytes.length;
  }

  #flush(): void {
    if (this.#used === 0) return;
    this.#writeOut(this.#buffer, this.#used);
    this.#used = 0;
  }

  #writeOut(bytes: Uint8Array, length: number): void {
    let done = 0;
    try {
      while (done < length) done += writeSync(this.#fd, bytes, done, length - done);
    } catch (error) {
      this.abort();
      throw spillFailed(this.operator, this.path, error);
    }
    this.#bytes += length;
  }

  #close(): void {
    if (!this.#open) return;
    this.#open = false;
    try {
      closeSync(this.#fd);
    } catch (error) {
      throw spillFailed(this.operator, this.path, error);
    }
  }
}
