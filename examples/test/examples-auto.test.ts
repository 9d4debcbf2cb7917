// Every engine example through `weft run --parallelism auto` (issue 14), at two input sizes, checked
// against the same independent references as examples.test.ts; in process with runJob (fast), one run
// through `weft run` on workers (they rebuild the adaptive plan from the job master's presets). custom-engine-map-reduce.ts does not
// run on the engine's scheduler (it drives the shuffle API itself), so it has no auto mode.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { writeCorpus } from '../lib/corpus.js';
import { customer, NATIONS, order, writeTpchTables } from '../lib/tpch-data.js';
import { KEY_LENGTH, writeTerasortInput } from '../lib/terasort-data.js';
import { runJob } from '@weft/engine';
import { createMemoryShuffleServiceFactory } from '@weft/shuffle-memory';
import { countWordsByScanning, parseCounts } from './support/word-reference.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(root, 'packages', 'cli', 'bin', 'weft.js');

function weft(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

interface Summary {
  readonly status: string;
  readonly tasks: number;
  readonly adaptive?: { readonly maxParallelism: number };
  readonly vertices: readonly { readonly id: string; readonly parallelism: number; readonly decided?: { readonly bytesIn: number; readonly inputs: readonly { readonly subtasks: readonly unknown[] }[] } }[];
}

/**
 * Runs `job` with `--parallelism auto` — through `weft run --json` on workers when `flags` has
 * `--workers`, else in process with `runJob` (the same engine path, without a process start) — and
 * checks the decisions it reports are consistent.
 */
async function auto(job: string, flags: readonly string[], jobArgs: string[], cwd: string): Promise<Summary> {
  let summary: Summary;
  if (flags.includes('--workers')) {
    const run = await weft(['run', join(root, 'examples', job), '--parallelism', 'auto', '--json', ...flags, '--', ...jobArgs], cwd);
    assert.equal(run.code, 0, run.stderr);
    summary = JSON.parse(run.stdout) as Summary;
  } else {
    const memory = createMemoryShuffleServiceFactory({ buffersPerPartition: 8 });
    const volume = flags[flags.indexOf('--data-volume-per-task') + 1] as string;
    const result = await runJob({ job: join(root, 'examples', job), args: jobArgs, cwd, executor: 'inprocess', shuffle: { pipelined: memory, blocking: memory }, adaptive: { maxParallelism: 16, dataVolumePerTaskBytes: Number.parseInt(volume, 10) * 1024 } });
    assert.equal(result.status, 'succeeded', String(result.error?.stack));
    summary = result;
  }
  assert.equal(summary.status, 'succeeded');
  assert.ok(summary.adaptive !== undefined, 'the summary says the run was adaptive');
  for (const v of summary.vertices) {
    assert.ok(v.parallelism >= 1 && v.parallelism <= (summary.adaptive?.maxParallelism ?? 0), `${v.id}: ${v.parallelism}`);
    for (const input of v.decided?.inputs ?? []) assert.equal(input.subtasks.length, v.parallelism, `${v.id}: one range per subtask`);
  }
  assert.equal(summary.tasks, summary.vertices.reduce((n, v) => n + v.parallelism, 0), 'tasks are the decided subtasks');
  return summary;
}

/** In process, max parallelism 16 (the volume flag, in KiB, is read from here too). */
const INPROCESS: readonly string[] = [];

describe('examples through weft run --parallelism auto', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'weft-examples-auto-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const [size, flags] of [
    [48 * 1024, INPROCESS],
    [512 * 1024, ['--workers', '2', '--max-parallelism', '16']],
  ] as const) {
    it(`word-count counts every word exactly, its count decided from the bytes (${size / 1024} KiB${flags.includes('--workers') ? ', on workers' : ''})`, async () => {
      const input = join(dir, `corpus-${size}.txt`);
      writeCorpus(input, size);
      const output = `counts-${size}.tsv`;
      const summary = await auto('word-count.ts', [...flags, '--data-volume-per-task', '32kb'], ['--input', input, '--output', output], dir);
      assert.deepEqual(parseCounts(await readFile(join(dir, output), 'utf8')), countWordsByScanning(await readFile(input, 'utf8')));
      const count = summary.vertices.find((v) => v.id === 'count');
      assert.ok(count?.decided !== undefined, 'count is decided at run time');
      assert.equal(summary.vertices.find((v) => v.id === 'read-lines')?.parallelism, Math.min(16, Math.ceil(size / (32 * 1024))), 'the source from its input size');
      assert.equal(summary.vertices.find((v) => v.id === 'top-words')?.parallelism, 1, 'an explicit parallelism is kept');
    });
  }

  for (const [customers, orders] of [
    [400, 4000],
    [2000, 20_000],
  ] as const) {
    it(`tpch-revenue joins and sums exactly with the join and the aggregation decided (${orders} orders)`, async () => {
      const tables = join(dir, `tpch-${orders}`);
      writeTpchTables(tables, customers, orders);
      const output = `revenue-${orders}.tsv`;
      const summary = await auto('tpch-revenue.ts', [...INPROCESS, '--data-volume-per-task', '64kb'], ['--input', tables, '--output', output], dir);
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
      assert.deepEqual((await readFile(join(dir, output), 'utf8')).trim().split('\n').sort(), lines);
      assert.ok(summary.vertices.find((v) => v.id === 'join-customers')?.decided !== undefined);
      assert.ok(summary.vertices.find((v) => v.id === 'revenue')?.decided !== undefined);
    });
  }

  for (const records of [5000, 30_000]) {
    it(`terasort writes every record once, in key order (${records} records)`, async () => {
      const input = join(dir, `records-${records}.txt`);
      writeTerasortInput(input, records);
      const output = `sorted-${records}.txt`;
      const summary = await auto('terasort.ts', [...INPROCESS, '--data-volume-per-task', '256kb'], ['--input', input, '--output', output], dir);
      const sort = summary.vertices.find((v) => v.id === 'sort');
      assert.ok(sort?.decided !== undefined, 'the sort is decided at run time');
      if (sort.decided.bytesIn > 2 * 256 * 1024) assert.ok(sort.parallelism >= 2, `${sort.parallelism} subtask(s) for ${sort.decided.bytesIn} bytes at 256 KiB a task: the ranges are split`);
      const lines = (await readFile(join(dir, output), 'utf8')).split('\n');
      assert.equal(lines.pop(), '', 'ends with a newline');
      assert.equal(lines.length, records);
      for (let i = 1; i < lines.length; i++) assert.ok((lines[i - 1] as string).slice(0, KEY_LENGTH) <= (lines[i] as string).slice(0, KEY_LENGTH), `sorted at line ${i}`);
      assert.deepEqual([...lines].sort(), (await readFile(input, 'utf8')).split('\n').filter((l) => l !== '').sort());
    });
  }
});
