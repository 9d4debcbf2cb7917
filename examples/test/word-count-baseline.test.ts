// The hand-written baseline of the word-count benchmark (bench/word-count-baseline.mjs) counts exactly
// what the example counts, even when a chunk it reads ends inside a multi-byte character.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { countWordsByScanning } from './support/word-reference.js';

const baseline = fileURLToPath(new URL('../../bench/word-count-baseline.mjs', import.meta.url));

function parse(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const tab = line.lastIndexOf('\t');
    counts.set(line.slice(0, tab), Number(line.slice(tab + 1)));
  }
  return counts;
}

describe('word-count benchmark baseline', () => {
  it('counts words exactly whatever the chunk size, characters of 2, 3 and 4 bytes split across chunks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'weft-baseline-'));
    try {
      const words = ['é', 'ÿes', '日本語', 'naïve', '😀', 'x😀y', 'plain', 'Ωmega', '한국어'];
      const text = Array.from({ length: 400 }, (_, i) => Array.from({ length: 1 + (i % 7) }, (_, k) => words[(i * 3 + k) % words.length]).join(i % 5 === 0 ? '\u3000' : ' ')).join('\n') + '\nlast 😀';
      const input = join(dir, 'in.txt');
      await writeFile(input, text);
      const expected = countWordsByScanning(text);
      for (const chunk of [undefined, 1, 2, 3, 5, 7, 64, 4093]) {
        const output = join(dir, `out-${chunk ?? 'default'}.tsv`);
        execFileSync(process.execPath, [baseline, input, output, ...(chunk === undefined ? [] : [String(chunk)])]);
        assert.deepEqual(parse(await readFile(output, 'utf8')), expected, `chunk ${chunk ?? '16 MiB'}`);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
