// The fused text path end to end (in process, a blocking shuffle double): a text source, the built-in
// word splitter and `keyBy().count()` are fused in the plan (and the run summary says so), and the counts
// equal a naive script's — on a generated corpus with every `\s` code point, non-ASCII words, `\r\n` and
// lines split across subtasks — whatever the parallelism, the combiner's key limit, or whether the
// splitter is reached through flatMapWords(), flatMap(splitWords) or not fused at all.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type DataSet, defineJob, type JobBuildFunction, type JobResult, loadJob, runJob, splitWords } from '@weft/engine';
import { testingNoShuffleFactory } from './support/no-shuffle.js';
import { testingRecordingBlockingShuffle } from './support/recording-blocking-shuffle.js';

const SPACES = ['\t', '\n', '\v', '\f', '\r\n', ' ', '  ', '\u00a0', '\u1680', '\u2000', '\u2005', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
const WORDS = ['the', 'of', 'café', 'naïve', 'über', '日本', 'ñandú', "don't", 'x-ray', '42', '😀', 'zero\u200bwidth', 'nel\u0085', 'Word', 'word', 'WORD'];

/** A deterministic corpus: Zipf-ish words, every kind of whitespace, long and empty lines. */
function corpus(lines: number): string {
  let s = 1;
  const next = (): number => {
    s = (Math.imul(s, 1103515245) + 12345) | 0;
    return (s >>> 8) / 16777216;
  };
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    let line = '';
    const n = i % 50 === 0 ? 0 : 1 + Math.floor(next() * 12);
    for (let w = 0; w < n; w++) line += WORDS[Math.floor(next() * next() * WORDS.length)] + (SPACES[Math.floor(next() * SPACES.length)] as string);
    out.push(i % 97 === 0 ? line.repeat(40) : line);
  }
  return out.join('\n');
}

/** What a person writes without an engine. */
function naiveCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) for (const w of line.split(/\s+/)) if (w !== '') counts.set(w, (counts.get(w) ?? 0) + 1);
  return counts;
}

function parse(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const tab = line.lastIndexOf('\t');
    const word = line.slice(0, tab);
    counts.set(word, (counts.get(word) ?? 0) + Number(line.slice(tab + 1)));
  }
  return counts;
}

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'weft-word-fusion-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

type Words = (lines: DataSet<string>) => DataSet<[string, number]>;

function wordCount(input: string, words: Words): JobBuildFunction {
  return (ctx) => words(ctx.readTextFile(input, { name: 'read' })).writeText('out.tsv', { name: 'write', format: ([w, n]) => `${w}\t${n}` });
}

async function run(dir: string, build: JobBuildFunction, parallelism: number): Promise<JobResult> {
  const result = await runJob({ job: defineJob(build), cwd: dir, parallelism, exchangeMode: 'ALL_EDGES_BLOCKING', shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingRecordingBlockingShuffle() } });
  assert.equal(result.status, 'succeeded', String(result.error?.stack));
  return result;
}

describe('the fused word count', () => {
  it('is planned as text source => splitter => count combiner, and counts as a naive script does at every parallelism', async () => {
    await withDir(async (dir) => {
      const text = corpus(3000);
      await writeFile(join(dir, 'in.txt'), text);
      const expected = naiveCounts(text);
      for (const parallelism of [1, 2, 3]) {
        const result = await run(dir, wordCount(join(dir, 'in.txt'), (l) => l.flatMapWords({ name: 'split' }).keyBy().count({ name: 'count' })), parallelism);
        assert.deepEqual(parse(await readFile(join(dir, 'out.tsv'), 'utf8')), expected, `parallelism ${parallelism}`);
        const head = result.vertices.find((v) => v.id === 'read');
        assert.deepEqual(head?.fusions, ['read => split (text-chunks)', 'split => count-combine (word-count)']);
        assert.equal(result.recordsRead, text.split('\n').length, 'the source still counts its lines');
      }
    });
  });

  it('counts the same through flatMap(splitWords), unfused, and with a combiner that must empty itself every 3 keys', async () => {
    await withDir(async (dir) => {
      const text = corpus(1500);
      await writeFile(join(dir, 'in.txt'), text);
      const expected = naiveCounts(text);
      const variants: [string, Words, readonly string[]][] = [
        ['flatMap(splitWords)', (l) => l.flatMap(splitWords, { name: 'split' }).keyBy().count({ name: 'count' }), ['read => split (text-chunks)', 'split => count-combine (word-count)']],
        ['combineMaxKeys 3', (l) => l.flatMapWords({ name: 'split' }).keyBy().count({ name: 'count', combineMaxKeys: 3 }), ['read => split (text-chunks)', 'split => count-combine (word-count)']],
        ['a key selector of its own', (l) => l.flatMapWords({ name: 'split' }).keyBy((w) => w).count({ name: 'count' }), ['read => split (text-chunks)']],
        ['a map in between', (l) => l.flatMapWords({ name: 'split' }).map((w) => w, { name: 'same' }).keyBy().count({ name: 'count' }), ['read => split (text-chunks)']],
        ['a user flatMap', (l) => l.flatMap((line) => line.split(/\s+/), { name: 'split' }).filter((w) => w !== '').keyBy().count({ name: 'count' }), []],
      ];
      for (const [what, words, fusions] of variants) {
        const result = await run(dir, wordCount(join(dir, 'in.txt'), words), 2);
        assert.deepEqual(parse(await readFile(join(dir, 'out.tsv'), 'utf8')), expected, what);
        assert.deepEqual(result.vertices.find((v) => v.id === 'read')?.fusions, fusions, what);
      }
    });
  });

  it('fuses the splitter with the count after a source of strings that is not a text file', async () => {
    await withDir(async (dir) => {
      const lines = corpus(800).split('\n');
      const result = await run(dir, (ctx) => ctx.fromArray(lines, { name: 'lines' }).flatMapWords({ name: 'split' }).keyBy().count({ name: 'count' }).writeText('out.tsv', { format: ([w, n]) => `${w}\t${n}` }), 2);
      assert.deepEqual(parse(await readFile(join(dir, 'out.tsv'), 'utf8')), naiveCounts(lines.join('\n')));
      assert.deepEqual(result.vertices.find((v) => v.id === 'lines')?.fusions, ['split => count-combine (word-count)']);
    });
  });

  it('refuses a value that is not a string, naming the splitter', async () => {
    await withDir(async (dir) => {
      const result = await runJob({
        job: defineJob((ctx) => (ctx.range(0, 3) as unknown as DataSet<string>).flatMapWords({ name: 'split' }).keyBy().count().collect('c')),
        cwd: dir,
        parallelism: 1,
        shuffle: { pipelined: testingNoShuffleFactory(), blocking: testingRecordingBlockingShuffle() },
        exchangeMode: 'ALL_EDGES_BLOCKING',
        restartStrategy: { type: 'none' },
      });
      assert.equal(result.status, 'failed');
      assert.match(String(result.error?.message), /operator "split" \(split-words\) splitWords threw .*expects strings, got number/);
    });
  });

  it('shows the fusions in the plan a worker rebuilds (loadJob)', async () => {
    const loaded = await loadJob({ job: defineJob(wordCount('/nowhere.txt', (l) => l.flatMapWords().keyBy().count())), parallelism: 2, checkInputs: false });
    assert.deepEqual(loaded.plan.vertices[0]?.fusions, ['read => splitWords (text-chunks)', 'splitWords => count-combine (word-count)']);
  });
});

describe('the fused operators at run time', () => {
  it('take the byte path: the source hands chunks, the splitter bytes, the combiner scans every byte', async () => {
    const { TaskBackpressure } = await import('../src/runtime/backpressure.js');
    const { TextFileSource } = await import('../src/operators/text-file-source.js');
    const { SplitWordsOperator } = await import('../src/operators/split-words-operator.js');
    const { WordCountCombiner } = await import('../src/operators/word-count-combiner.js');
    const { VALUE_KEY } = await import('../src/api/split-words.js');
    const { createTaskMemory } = await import('../src/memory/task-memory.js');
    await withDir(async (dir) => {
      const text = corpus(500);
      await writeFile(join(dir, 'in.txt'), text);
      const context = {
        operatorName: 'x', operatorKind: 'x', vertexId: 'v', subtask: 0, parallelism: 1, attempt: 0, attemptId: 'v#0-0', jobId: 'j',
        backpressure: new TaskBackpressure(), signal: new AbortController().signal, cwd: dir, fileSystems: [], outputConsumers: 0,
        memory: createTaskMemory({ budgetBytes: 1 << 20, spillDir: dir, name: 'v#0-0' }),
      };
      const emitted: [string, number][] = [];
      const count = { create: () => 0, add: (a: unknown) => (a as number) + 1, merge: (a: unknown, b: unknown) => (a as number) + (b as number), result: (k: unknown, a: unknown) => [k, a], kind: 'count' as const };
      const combiner = new WordCountCombiner(VALUE_KEY as never, count, 1_000_000, { collect: (v) => void emitted.push(v as [string, number]) }, context);
      const split = new SplitWordsOperator(combiner, context, true);
      const source = new TextFileSource(join(dir, 'in.txt'), split, context, true);
      await source.run();
      await combiner.finish();
      assert.equal(source.emitsChunks, true);
      assert.equal(split.countsBytes, true);
      assert.equal(combiner.bytesScanned, Buffer.byteLength(text) - (text.endsWith('\n') ? 1 : 0));
      assert.deepEqual(new Map(emitted), naiveCounts(text));
      // unfused (the plan said no): lines and words flow as records, the same counts
      const words: string[] = [];
      const plain = new TextFileSource(join(dir, 'in.txt'), new SplitWordsOperator({ collect: (w) => void words.push(w as string) }, context, false), context, false);
      await plain.run();
      assert.equal(plain.emitsChunks, false);
      assert.equal(words.length, [...naiveCounts(text).values()].reduce((a, b) => a + b, 0));
    });
  });
});
