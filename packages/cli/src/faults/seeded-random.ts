/**
 * A small seeded pseudo-random generator (mulberry32): the same seed gives the same sequence on every
 * machine, so a fault run can be replayed from its seed. Not for anything secret.
 */
export class SeededRandom {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max) (max > min). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length)] as T;
  }
}
