/** Union-find over the integers [0, size): union by size, path halving. Iterative, typed arrays. */
export class DisjointSet {
  readonly #parent: Int32Array;
  readonly #size: Int32Array;

  constructor(size: number) {
    this.#parent = new Int32Array(size);
    for (let i = 0; i < size; i++) this.#parent[i] = i;
    this.#size = new Int32Array(size).fill(1);
  }

  find(x: number): number {
    const parent = this.#parent;
    while (parent[x] !== x) {
      const grandparent = parent[parent[x] as number] as number;
      parent[x] = grandparent;
      x = grandparent;
    }
    return x;
  }

  union(a: number, b: number): void {
    let ra = this.find(a);
    let rb = this.find(b);
    if (ra === rb) return;
    if ((this.#size[ra] as number) < (this.#size[rb] as number)) [ra, rb] = [rb, ra];
    this.#parent[rb] = ra;
    this.#size[ra] = (this.#size[ra] as number) + (this.#size[rb] as number);
  }
}
