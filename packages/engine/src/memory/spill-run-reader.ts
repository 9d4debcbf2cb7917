import { closeSync, openSync, readSync } from 'node:fs';
import { spillFailed } from './spill-failed.js';
import type { SpillRun } from './spill-run-writer.js';

const BUFFER_BYTES = 32 * 1024;

/**
 * Reads a spill run back record by record (SpillRunWriter's format) through a 32 KiB buffer that grows
 * for a larger record. After `next()` returned true, `key` and `value` are views valid until the next
 * call. Closes its file at the end, on `close()`, and on an error (WEFT_ERR_SPILL_FAILED naming it).
 */
export class SpillRunReader {
  static readonly BUFFER_BYTES = BUFFER_BYTES;
  readonly #fd: number;
  #buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  #pos = 0;
  #end = 0;
  #eof = false;
  #open = true;
  key: Uint8Array = new Uint8Array(0);
  value: Uint8Array = new Uint8Array(0);

  constructor(
    readonly run: SpillRun,
    private readonly operator: string,
  ) {
    try {
      this.#fd = openSync(run.path, 'r');
    } catch (error) {
      throw spillFailed(operator, run.path, error);
    }
  }

  next(): boolean {
    if (!this.#ensure(1)) {
      this.close();
      return false;
    }
    const keyLength = this.#varint();
    const valueLength = this.#varint();
    this.#ensureOrThrow(keyLength + valueLength);
    const base = this.#pos;
    this.#pos = base + keyLength + valueLength;
    this.key = this.#buffer.subarray(base, base + keyLength);
    this.value = this.#buffer.subarray(base + keyLength, this.#pos);
    return true;
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    try {
      closeSync(this.#fd);
    } catch {
      // nothing left to read
    }
  }

  #varint(): number {
    let n = 0;
    let shift = 0;
    for (;;) {
      this.#ensureOrThrow(1);
      const b = this.#buffer[this.#pos++] as number;
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
      shift += 7;
    }
  }

  #ensureOrThrow(n: number): void {
    if (!this.#ensure(n)) throw spillFailed(this.operator, this.run.path, new Error('the spill file ends in the middle of a record'));
  }

  /** Makes `n` bytes from `#pos` readable; false at the end of the file. */
  #ensure(n: number): boolean {
    if (this.#end - this.#pos >= n) return true;
    if (this.#eof) return false;
    const held = this.#end - this.#pos;
    if (n > this.#buffer.length) {
      const bigger = Buffer.allocUnsafe(Math.max(n, this.#buffer.length * 2));
      this.#buffer.copy(bigger, 0, this.#pos, this.#end);
      this.#buffer = bigger;
    } else {
      this.#buffer.copyWithin(0, this.#pos, this.#end);
    }
    this.#pos = 0;
    this.#end = held;
    try {
      while (this.#end < n) {
        const read = readSync(this.#fd, this.#buffer, this.#end, this.#buffer.length - this.#end, null);
        if (read === 0) {
          this.#eof = true;
          break;
        }
        this.#end += read;
      }
    } catch (error) {
      this.close();
      throw spillFailed(this.operator, this.run.path, error);
    }
    return this.#end - this.#pos >= n;
  }
}
