// Terasort-like records: a 10-character key of printable ASCII and a payload, one per line
// (`<key><TAB><payload>`, 100 bytes with the newline). Record `i` is always the same.
import { closeSync, openSync, writeSync } from 'node:fs';

export const KEY_LENGTH = 10;

function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Record `i`: `<10-char key>\t<payload>`, 99 characters. */
export function terasortRecord(i: number): string {
  let key = '';
  let h = mix(i + 1);
  for (let k = 0; k < KEY_LENGTH; k++) {
    if (k % 4 === 0) h = mix(h + k + i);
    key += String.fromCharCode(33 + (h % 94));
    h = Math.floor(h / 94);
  }
  const payload = `${String(i).padStart(12, '0')}${'ABCDEFGHIJ'.repeat(8)}`.slice(0, 99 - KEY_LENGTH - 1);
  return `${key}\t${payload}`;
}

export function terasortKey(line: string): string {
  return line.slice(0, KEY_LENGTH);
}

/** Writes records 0 … count-1 to `path`, one per line. */
export function writeTerasortInput(path: string, count: number): void {
  const fd = openSync(path, 'w');
  try {
    for (let start = 0; start < count; start += 10_000) {
      const chunk: string[] = [];
      for (let i = start; i < Math.min(count, start + 10_000); i++) chunk.push(`${terasortRecord(i)}\n`);
      writeSync(fd, chunk.join(''));
    }
  } finally {
    closeSync(fd);
  }
}
