/** A slab reads land in; `refs` counts received buffers that are views into it and not yet recycled. */
export class ReadSlab {
  refs = 0;
  used = 0;
  retired = false;

  constructor(readonly bytes: Buffer) {}
}

/**
 * Where a connection's reads land: large slabs, each read into the unused tail of the current one, so
 * reads are large (fewer frames straddle two of them, fewer system calls) and received buffers are views,
 * not copies. A slab is reused once it is full and no buffer viewing it is held any more — so reading does
 * not allocate (and leave the garbage collector) a new slab per quarter megabyte.
 */
export class ReadSlabs {
  private current: ReadSlab;
  private readonly free: ReadSlab[] = [];

  constructor(
    private readonly slabBytes: number,
    private readonly minReadBytes: number,
    private readonly keep: number,
  ) {
    this.current = new ReadSlab(Buffer.allocUnsafe(slabBytes));
  }

  /** Where the next read goes. */
  next(): Buffer {
    let slab = this.current;
    if (slab.bytes.length - slab.used < this.minReadBytes) {
      slab.retired = true;
      if (slab.refs === 0) this.recycle(slab);
      slab = this.free.pop() ?? new ReadSlab(Buffer.allocUnsafe(this.slabBytes));
      slab.used = 0;
      slab.retired = false;
      this.current = slab;
    }
    return slab.bytes.subarray(slab.used);
  }

  /** `bytes` were read into the current slab. */
  filled(bytes: number): void {
    this.current.used += bytes;
  }

  /** Holds the slab `view` lies in until `release`; undefined when it lies in none (a frame assembled from two reads). */
  hold(view: Uint8Array): ReadSlab | undefined {
    const slab = this.current;
    if (view.buffer !== slab.bytes.buffer) return undefined;
    slab.refs++;
    return slab;
  }

  release(slab: ReadSlab): void {
    slab.refs--;
    if (slab.refs === 0 && slab.retired) this.recycle(slab);
  }

  private recycle(slab: ReadSlab): void {
    if (this.free.length < this.keep) this.free.push(slab);
  }
}
