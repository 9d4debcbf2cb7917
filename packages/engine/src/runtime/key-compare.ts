import type { KeyValue } from '../api/functions.js';

function rank(key: unknown): number {
  switch (typeof key) {
    case 'boolean':
      return 1;
    case 'number':
      return 2;
    case 'string':
      return 3;
    default:
      return key === null ? 0 : Array.isArray(key) ? 4 : 5;
  }
}

/**
 * The total order sorts use: null < booleans (false < true) < numbers (-0 just before 0, NaN last) < strings (by UTF-16
 * code units, as `<` compares) < arrays (element by element, then by length).
 */
export function compareKeys(a: KeyValue, b: KeyValue): number {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' && typeof b === 'number') {
    if (a < b) return -1;
    if (a > b) return 1;
    // -0 before 0, as Java's Double.compare: they are distinct keys
    if (a === b) return Object.is(a, b) ? 0 : Object.is(a, -0) ? -1 : 1;
    return Number.isNaN(a) ? (Number.isNaN(b) ? 0 : 1) : -1;
  }
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 1) return (a === b ? 0 : a ? 1 : -1);
  if (ra === 4) {
    const x = a as readonly KeyValue[];
    const y = b as readonly KeyValue[];
    const n = Math.min(x.length, y.length);
    for (let i = 0; i < n; i++) {
      const c = compareKeys(x[i] as KeyValue, y[i] as KeyValue);
      if (c !== 0) return c;
    }
    return x.length - y.length;
  }
  return 0;
}
