import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { runMapReduce } from '../custom-engine-map-reduce.js';

function generateLines(count: number, seed: number): string[] {
  let x = seed;
  const next = (): number => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const vocabulary = Array.from({ length: 500 }, (_, i) => `w${i.toString(36)}${i % 7 === 0 ? 'É' : ''}`);
  return Array.from({ length: count }, () => Array.from({ length: 1 + (next() % 20) }, () => vocabulary[next() % vocabulary.length]).join(next() % 5 === 0 ? '  ' : ' '));
}

function referenceCount(lines: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) for (const word of line.split(' ')) if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

describe('custom-engine example', () => {
  for (const partitionType of ['PIPELINED', 'BLOCKING'] as const) {
    it(`counts words exactly through a ${partitionType} in-memory shuffle`, async () => {
      const lines = generateLines(20_000, 42);
      const counts = await runMapReduce({ lines, mappers: 3, reducers: 4, partitionType, shuffle: createMemoryShuffleServiceFactory({ buffersPerPartition: 8 }) });
      assert.deepEqual(new Map([...counts].sort()), new Map([...referenceCount(lines)].sort()));
    });
  }

  it('runs as a script and prints word counts', async () => {
    const { spawnSync } = await import('node:child_process');
    const result = spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/custom-engine-map-reduce.ts', '--type', 'BLOCKING'], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^the\t3$/m);
    assert.match(result.stdout, /^dog\t3$/m);
  });
});
