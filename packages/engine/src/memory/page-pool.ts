/**
 * Fixed-size pages of serialized records, recycled — a hybrid hash join's build partitions, an external
 * sort's buffer: a partition (or run) that spills or is done gives its standard-size pages back, and the
 * next one takes them instead of allocating. A dropped page would otherwise stay allocated until V8 collects its Buffer
 * — after a full GC when the Buffer was promoted — so a join spilling again and again holds its budget
 * several times over. Idle pages are not counted against the budget (the partition or buffer holding a page is):
 * the pool never holds more pages than were in use at once, so everything it ever allocated fits the
 * budget. Pages of another size (one record larger than a page) are not kept. `clear()` drops them all.
 */
export class PagePool {
  readonly pageBytes: number;
  readonly #idle: Buffer[] = [];
  /** Pages allocated so far (for tests). */
  allocated = 0;

  constructor(pageBytes: number) {
    this.pageBytes = pageBytes;
  }

  /** A page of `bytes` (at least pageBytes): an idle one when it is the standard size, else a new one. */
  take(bytes: number): Buffer {
    if (bytes <= this.pageBytes) {
      const page = this.#idle.pop();
      if (page !== undefined) return page;
      bytes = this.pageBytes;
    }
    this.allocated++;
    return Buffer.allocUnsafeSlow(bytes);
  }

  give(page: Buffer): void {
    if (page.length === this.pageBytes) this.#idle.push(page);
  }

  clear(): void {
    this.#idle.length = 0;
  }
}
