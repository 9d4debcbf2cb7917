import { strict as assert } from 'node:assert';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { runMapReduce } from '../custom-engine-map-reduce.js';
import { countWordsByScanning } from './support/word-reference.js';

function script(...args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, ['--conditions=source', '--import', 'tsx', 'examples/custom-engine-map-reduce.ts', ...args], { encoding: 'utf8' });
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-custom-engine-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function sorted(counts: Map<string, number>): Map<string, number> {
  return new Map([...counts].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

function parseCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [word, n, ...rest] = line.split('\t');
    assert.equal(rest.length, 0, `one tab per line: ${JSON.stringify(line)}`);
    assert.ok(!counts.has(word as string), `${word} listed twice`);
    counts.set(word as string, Number(n));
  }
  return sorted(counts);
}

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

  it('runs as a script and prints the counts of its built-in lines without --input', () => {
    const result = script('--type', 'BLOCKING');
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^the\t3$/m);
    assert.match(result.stdout, /^dog\t3$/m);
  });

  it('counts the words of --input into --output, one word<TAB>count line per distinct word', async () => {
    await withDir(async (dir) => {
      const text = [...generateLines(3000, 7), 'Tab\tseparated\u00a0and  Word word WORD\r', '', '  leading blanks and é日本'].join('\n');
      await writeFile(join(dir, 'in.txt'), text);
      const result = script('--input', join(dir, 'in.txt'), '--output', join(dir, 'counts.tsv'), '--mappers', '4', '--reducers', '3');
      assert.equal(result.status, 0, result.stderr);
      assert.deepEqual(parseCounts(await readFile(join(dir, 'counts.tsv'), 'utf8')), sorted(countWordsByScanning(text)));
      assert.match(result.stdout, /distinct words written to .*counts\.tsv/);
    });
  });

  it('exits 2 with a message naming the flag, not a stack, on bad usage or an unreadable --input', async () => {
    await withDir(async (dir) => {
      const cases: [string[], RegExp][] = [
        [['--input', join(dir, 'missing.txt')], /--input: cannot read .*missing\.txt: no such file/],
        [['--input', dir], /--input: cannot read .*: it is a directory/],
        [['--mappers', 'abc'], /--mappers must be an integer >= 1, got "abc"/],
        [['--reducers', '0'], /--reducers must be an integer >= 1, got "0"/],
        [['--type', 'SOMETIMES'], /--type must be one of PIPELINED, PIPELINED_BOUNDED, BLOCKING, BLOCKING_PERSISTENT, got "SOMETIMES"/],
        [['--fast'], /Unknown option '--fast'/],
        [['--input'], /--input <value>' argument missing/],
      ];
      for (const [args, pattern] of cases) {
        const result = script(...args);
        assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
        assert.match(result.stderr, pattern, args.join(' '));
        assert.match(result.stderr, /Usage: custom-engine-map-reduce\.ts/);
        assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack');
      }
    });
  });
});
