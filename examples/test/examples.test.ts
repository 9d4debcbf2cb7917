// Runs each example through `weft run` (worker processes, local-directory + SQLite blocking shuffle), as
// a user would, and checks its output against a reference computed here, independently of the engine.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { corpusLine, writeCorpus } from '../lib/corpus.js';
import { customer, NATIONS, order, writeTpchTables } from '../lib/tpch-data.js';
import { KEY_LENGTH, writeTerasortInput } from '../lib/terasort-data.js';
import { countWordsByScanning, parseCounts } from './support/word-reference.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');

function weft(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 256 * 1024 * 1024, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}


describe('examples through weft run', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-examples-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('word-count counts every word of a file exactly (word<TAB>count, no case folding)', async () => {
    const input = join(dir, 'corpus.txt');
    writeCorpus(input, 2 * 1024 * 1024);
    await writeFile(join(dir, 'extra.txt'), 'Tab\tseparated  and\u00a0non-breaking\u3000ideographic Word word WORD\r\nlast line without newline');
    const run = await weft(['run', join(root, 'examples', 'word-count.ts'), '--parallelism', '3', '--workers', '2', '--', '--input', input, '--output', 'counts.tsv'], dir);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(parseCounts(await readFile(join(dir, 'counts.tsv'), 'utf8')), countWordsByScanning(await readFile(input, 'utf8')));
    assert.match(run.stdout, /top words:\n {2}the\t\d+/);
    const extra = await weft(['run', join(root, 'examples', 'word-count.ts'), '--executor', 'inprocess', '--', '--input', join(dir, 'extra.txt'), '--output', 'extra.tsv'], dir);
    assert.equal(extra.code, 0, extra.stderr);
    assert.deepEqual(parseCounts(await readFile(join(dir, 'extra.tsv'), 'utf8')), countWordsByScanning(await readFile(join(dir, 'extra.txt'), 'utf8')));
  });

  it('word-count generates its corpus when --input is absent', async () => {
    const run = await weft(['run', join(root, 'examples', 'word-count.ts'), '--parallelism', '2', '--workers', '2', '--', '--lines', '5000', '--output', 'generated.tsv'], dir);
    assert.equal(run.code, 0, run.stderr);
    const text = Array.from({ length: 5000 }, (_, i) => corpusLine(i)).join('\n');
    assert.deepEqual(parseCounts(await readFile(join(dir, 'generated.tsv'), 'utf8')), countWordsByScanning(text));
  });

  it('tpch-revenue joins orders with customers and sums revenue per nation and segment exactly', async () => {
    const customers = 3000;
    const orders = 30_000;
    writeTpchTables(join(dir, 'tpch'), customers, orders);
    const run = await weft(['run', join(root, 'examples', 'tpch-revenue.ts'), '--parallelism', '3', '--workers', '2', '--', '--input', join(dir, 'tpch'), '--output', 'revenue.tsv'], dir);
    assert.equal(run.code, 0, run.stderr);
    const expected = new Map<string, [number, number]>();
    const byKey = new Map(Array.from({ length: customers }, (_, i) => customer(i)).map((c) => [c.custkey, c]));
    for (let i = 0; i < orders; i++) {
      const o = order(i, customers);
      const c = byKey.get(o.custkey);
      if (c === undefined) continue;
      const key = `${NATIONS[c.nationkey]}\t${c.mktsegment}`;
      const acc = expected.get(key) ?? [0, 0];
      expected.set(key, [acc[0] + o.totalprice, acc[1] + 1]);
    }
    const lines = [...expected].map(([key, [cents, n]]) => `${key}\t${(cents / 100).toFixed(2)}\t${n}`).sort();
    assert.deepEqual((await readFile(join(dir, 'revenue.tsv'), 'utf8')).trim().split('\n').sort(), lines);
    assert.match(run.stdout, /revenue by nation and segment:\n {2}[A-Z ]+\t[A-Z]+\t\d+\.\d\d\t\d+/);
  });

  it('terasort writes every record once, in key order, across several ranges', async () => {
    const records = 60_000;
    const input = join(dir, 'records.txt');
    writeTerasortInput(input, records);
    const run = await weft(['run', join(root, 'examples', 'terasort.ts'), '--parallelism', '4', '--workers', '2', '--', '--input', input, '--output', 'sorted.txt'], dir);
    assert.equal(run.code, 0, run.stderr);
    const output = (await readFile(join(dir, 'sorted.txt'), 'utf8')).split('\n');
    assert.equal(output.pop(), '', 'ends with a newline');
    assert.equal(output.length, records, 'complete: one line per record');
    for (let i = 1; i < output.length; i++) {
      assert.ok((output[i - 1] as string).slice(0, KEY_LENGTH) <= (output[i] as string).slice(0, KEY_LENGTH), `sorted at line ${i}`);
    }
    const inputLines = (await readFile(input, 'utf8')).split('\n').filter((l) => l !== '');
    assert.deepEqual([...output].sort(), inputLines.sort(), 'the same records');
    assert.match(run.stdout, /records sorted:\n {2}60000/);
  });
});
